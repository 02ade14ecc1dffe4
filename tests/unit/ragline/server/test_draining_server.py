"""The embedded server's uvicorn: what it does at start, in a process of its own (it changes the whole heap)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

# Runs ``DrainingServer`` on a free port in a thread, and reports what the heap looked like before it started
# and once it was serving: the collector's permanent generation, and whether a reference cycle that was garbage
# before the start had been collected.
_SCRIPT = textwrap.dedent(
    """
    import gc, json, threading, weakref
    import uvicorn
    from fastapi import FastAPI
    from ragline.server.embedded import DrainingServer

    class Node:
        pass

    gc.disable()  # only the server's start may collect
    garbage = Node()
    garbage.self = garbage
    garbage_ref = weakref.ref(garbage)
    del garbage
    kept = Node()
    kept.self = kept

    async def drain(hurry):
        return None

    serving = threading.Event()

    class Observed(DrainingServer):
        async def startup(self, sockets=None):
            await super().startup(sockets)
            serving.set()

    app = FastAPI()
    server = Observed(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"), drain)
    before = {"frozen": gc.get_freeze_count(), "garbage_alive": garbage_ref() is not None}
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    serving.wait(60)
    after = {
        "started": server.started,
        "frozen": gc.get_freeze_count(),
        "garbage_alive": garbage_ref() is not None,
        "kept_in_young_generations": any(o is kept for o in gc.get_objects()),
    }
    server.should_exit = True
    thread.join(30)
    print(json.dumps({"before": before, "after": after}))
    """
)


def test_the_server_settles_its_heap_once_started() -> None:
    """A full collection over the models' and modules' objects stalled every stream for 160-400 ms (mixed load):
    what the start built is moved out of the collector's way, after collecting what was already garbage."""
    run = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["before"] == {"frozen": 0, "garbage_alive": True}
    assert report["after"]["started"]
    assert report["after"]["frozen"] > 1000  # the modules' objects, not a handful
    assert not report["after"]["garbage_alive"]
    assert not report["after"]["kept_in_young_generations"]
