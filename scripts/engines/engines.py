"""The real engines the tests run against: OpenSearch 2.19 with the k-NN plugin, and Neo4j 5 with Bolt.

Neither publishes a runnable distribution on Maven Central, so each is started from its jars by a launcher
kept beside this file (``OpenSearchNode.java``, ``Neo4jServer.java``): Maven resolves the jars named by the
engine's pom (cached in Maven's local repository), the classpath, the unpacked k-NN plugin and the compiled
launcher are kept under ``build/engines/``, and every run starts the engines on 127.0.0.1 on ports the
operating system picks, with data in a fresh directory that is removed afterwards.

    python scripts/engines/engines.py run -- .venv/bin/python -m pytest -q   # what `make test` does
    python scripts/engines/engines.py prepare                                 # fetch and compile only
    python scripts/engines/engines.py start                                   # serve until Ctrl-C

``run`` starts the engines in the background and runs the command at once, with a JSON state file named by
``RAGLINE_ENGINES_STATE`` in its environment: for each engine ``starting``, then its URL and credentials, or
why it is unavailable. ``tests/support/engines.py`` waits on it, or starts the engines itself when a test run
was not started through here. An engine stops when the pipe to its
standard input closes, so engines never outlive the process that started them, however it ends.

Standard library only: ``make test`` runs this before anything else is known to work.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(ROOT) not in sys.path:  # run as a script: the shared Maven helper is scripts/maven.py
    sys.path.insert(0, str(ROOT))

from scripts import maven  # noqa: E402

BUILD = ROOT / "build" / "engines"
STATE_ENV = "RAGLINE_ENGINES_STATE"
# Another Maven local repository than ~/.m2 (e.g. to measure a first download).
M2_ENV = "RAGLINE_ENGINES_M2"

# Generous: a first run downloads ~200 MB, and the machine is shared.
FETCH_TIMEOUT_S = 900.0
START_TIMEOUT_S = 240.0
STOP_TIMEOUT_S = 30.0
POLL_S = 0.1

NEO4J_USER = "neo4j"
# Compiled with each launcher: the ready file and the stop on end of input.
SHARED_SOURCE = HERE / "EngineProcess.java"


class Unavailable(Exception):
    """An engine cannot run on this machine (no Java, no Maven, a failed fetch); the message says why."""


@dataclass(frozen=True)
class EngineSpec:
    name: str
    pom: Path
    source: Path
    main: str
    jvm_options: tuple[str, ...]


OPENSEARCH = EngineSpec(
    name="opensearch",
    pom=HERE / "opensearch.pom.xml",
    source=HERE / "OpenSearchNode.java",
    main="OpenSearchNode",
    jvm_options=("-Xms512m", "-Xmx512m", "-Dfile.encoding=UTF-8", "-Djava.awt.headless=true"),
)
NEO4J = EngineSpec(
    name="neo4j",
    pom=HERE / "neo4j.pom.xml",
    source=HERE / "Neo4jServer.java",
    main="Neo4jServer",
    jvm_options=("-Xms256m", "-Xmx512m", "-Dfile.encoding=UTF-8", "-Djava.awt.headless=true"),
)
SPECS = (OPENSEARCH, NEO4J)


# Tools -------------------------------------------------------------------------------------------------
def _java_tool(name: str) -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / name).exists():
        return str(Path(java_home) / "bin" / name)
    found = shutil.which(name)
    if not found:
        raise Unavailable(f"no `{name}` on PATH (a JDK 17 or newer is needed)")
    return found


def _digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()[:16]


# Prepare -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Prepared:
    spec: EngineSpec
    java: str
    classpath: str
    seconds: float
    download_bytes: int


def _resolve_classpath(spec: EngineSpec, workdir: Path) -> list[Path]:
    """The jars (and zips) the pom names, resolved by Maven; cached until the pom changes."""
    m2 = os.environ.get(M2_ENV, "")
    cache = workdir / "classpath.json"
    key = _digest(spec.pom.read_bytes(), m2)
    with contextlib.suppress(OSError, ValueError, KeyError):
        cached = json.loads(cache.read_text())
        entries = [Path(p) for p in cached["entries"]]
        if cached["key"] == key and entries and all(p.exists() for p in entries):
            return entries
    output = workdir / "classpath.txt"
    arguments = ["-f", str(spec.pom), "dependency:build-classpath", f"-Dmdep.outputFile={output}"]
    try:
        maven.run(arguments, what=spec.name, timeout_s=FETCH_TIMEOUT_S, m2=m2)
    except maven.MavenUnavailable as error:
        raise Unavailable(f"{error} (Maven fetches the engines from Maven Central)") from None
    if not output.exists():
        raise Unavailable(f"{spec.name}: Maven wrote no classpath")
    entries = [Path(p) for p in output.read_text().strip().split(os.pathsep) if p]
    cache.write_text(json.dumps({"key": key, "entries": [str(p) for p in entries]}))
    return entries


def _unpack(archive: Path, workdir: Path) -> list[Path]:
    """A plugin zip (the k-NN plugin is published as one) unpacked once; its jars join the classpath."""
    target = workdir / archive.stem
    stamp = target / ".unpacked"
    if not stamp.exists():
        shutil.rmtree(target, ignore_errors=True)
        with zipfile.ZipFile(archive) as bundle:
            bundle.extractall(target)
        stamp.write_text(str(archive))
    return sorted(target.glob("*.jar"))


def _compile(spec: EngineSpec, classpath: str, workdir: Path) -> Path:
    """The launcher compiled against the classpath; recompiled when either changes."""
    classes = workdir / "classes"
    stamp = classes / ".stamp"
    sources = [spec.source, SHARED_SOURCE]
    key = _digest(*(source.read_bytes() for source in sources), classpath)
    if stamp.exists() and stamp.read_text() == key:
        return classes
    shutil.rmtree(classes, ignore_errors=True)
    classes.mkdir(parents=True)
    command = [_java_tool("javac"), "-encoding", "UTF-8", "-d", str(classes), "-cp", classpath, *map(str, sources)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise Unavailable(f"{spec.name}: the launcher did not compile: {done.stderr.strip()[-500:]}")
    stamp.write_text(key)
    return classes


def prepare(spec: EngineSpec) -> Prepared:
    """Everything the engine needs before it starts; raises :class:`Unavailable` with the reason."""
    began = time.monotonic()
    java = _java_tool("java")
    workdir = BUILD / spec.name
    workdir.mkdir(parents=True, exist_ok=True)
    entries = _resolve_classpath(spec, workdir)
    jars: list[Path] = []
    for entry in entries:
        jars.extend(_unpack(entry, workdir) if entry.suffix == ".zip" else [entry])
    classpath = os.pathsep.join(str(j) for j in jars)
    classes = _compile(spec, classpath, workdir)
    size = sum(p.stat().st_size for p in entries)
    return Prepared(spec, java, f"{classes}{os.pathsep}{classpath}", time.monotonic() - began, size)


# Run ---------------------------------------------------------------------------------------------------
@dataclass
class Running:
    spec: EngineSpec
    process: subprocess.Popen[bytes]
    home: Path
    log: Path
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.process.pid

    def rss_bytes(self) -> int:
        """Resident memory of the engine's JVM now (Linux)."""
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def signal_stop(self) -> None:
        """Close the engine's input: its signal to shut down."""
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()

    def stop(self, *, ready: bool = True) -> None:
        """Signal the engine to stop, then wait; terminate if it hangs. An engine that never got ready does
        not read its input yet: it is terminated at once (its shutdown hook still runs)."""
        self.signal_stop()
        try:
            if not ready:
                self.process.terminate()
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.home, ignore_errors=True)


def _log_tail(log: Path, lines: int = 15) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    return ""


def _http_ok(url: str, timeout: float) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def start(
    prepared: Prepared, runs: Path, *, timeout: float = START_TIMEOUT_S, abort: threading.Event | None = None
) -> Running:
    """Start the engine and return once it serves requests; raises RuntimeError with its log if it cannot."""
    spec = prepared.spec
    runs.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix=f"{spec.name}-", dir=runs))
    ready = home / "ready.json"
    log = home / f"{spec.name}.log"
    extra: list[str] = []
    password = ""
    if spec is NEO4J:
        password = secrets.token_urlsafe(12)
        extra.append(password)
    command = [
        prepared.java,
        *spec.jvm_options,
        "-cp",
        prepared.classpath,
        spec.main,
        str(home / "data"),
        str(ready),
        *extra,
    ]
    began = time.monotonic()
    with log.open("wb") as out:
        # Its own session: a Ctrl-C in the terminal reaches the runner, which then closes the engine's input.
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    running = Running(spec, process, home, log)
    try:
        deadline = began + timeout
        while not ready.exists():
            if process.poll() is not None:
                raise RuntimeError(
                    f"{spec.name} exited with {process.returncode} before it was ready:\n{_log_tail(log)}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(f"{spec.name} was not ready in {timeout:.0f} s:\n{_log_tail(log)}")
            if abort is not None and abort.is_set():
                raise RuntimeError(f"{spec.name} was stopped before it was ready")
            time.sleep(POLL_S)
        info: dict[str, Any] = json.loads(ready.read_text())
        if spec is OPENSEARCH:
            health = f"{info['url']}/_cluster/health?wait_for_status=yellow&timeout=60s"
            if not _http_ok(health, timeout=90):
                raise RuntimeError(f"opensearch answered no healthy cluster at {info['url']}:\n{_log_tail(log)}")
            # Maven Central's k-NN zip ships no native library: Lucene's HNSW is the engine this node has.
            info["knn_engine"] = "lucene"
        else:
            info.update(user=NEO4J_USER, password=password)
        info.update(pid=process.pid, start_seconds=round(time.monotonic() - began, 2))
        running.info = info
        return running
    except BaseException:
        running.stop(ready=False)
        raise


class Engines:
    """The engines, prepared and started side by side; ``state`` says for each how to reach it or why not
    (``{"starting": true}`` until it is known).

    ``only`` limits which engines start (names of :data:`SPECS`). As a context manager it returns once every
    engine is ready or known unavailable; :meth:`start_background` returns at once, and ``state_path`` (when
    given) is rewritten, atomically, whenever an engine's state changes.
    """

    def __init__(self, only: Sequence[str] = (), state_path: Path | None = None) -> None:
        self._specs = [s for s in SPECS if not only or s.name in only]
        self._runs = BUILD / "runs"
        self._state_path = state_path
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._abort = threading.Event()
        self.running: dict[str, Running] = {}
        self.state: dict[str, dict[str, Any]] = {spec.name: {"starting": True} for spec in self._specs}
        self._publish()

    def _publish(self) -> None:
        if self._state_path is None:
            return
        with self._lock:
            text = json.dumps(self.state, indent=2)
        partial = self._state_path.with_suffix(".partial")
        partial.write_text(text)
        os.replace(partial, self._state_path)

    def _settle(self, name: str, state: dict[str, Any], running: Running | None = None) -> None:
        with self._lock:
            self.state[name] = state
            if running is not None:
                self.running[name] = running
        self._publish()
        print(self.summary(name), file=sys.stderr, flush=True)

    def _bring_up(self, spec: EngineSpec) -> None:
        try:
            prepared = prepare(spec)
        except Unavailable as why:
            self._settle(spec.name, {"unavailable": str(why)})
            return
        try:
            running = start(prepared, self._runs, abort=self._abort)
        except RuntimeError as error:
            self._settle(spec.name, {"error": str(error)})
            return
        state = {
            **running.info,
            "prepare_seconds": round(prepared.seconds, 2),
            "download_bytes": prepared.download_bytes,
        }
        self._settle(spec.name, state, running)
        if self._abort.is_set():  # stopped while it was starting
            running.stop()

    def start_background(self) -> Engines:
        self._threads = [threading.Thread(target=self._bring_up, args=(spec,), daemon=True) for spec in self._specs]
        for thread in self._threads:
            thread.start()
        return self

    def wait(self) -> Engines:
        for thread in self._threads:
            thread.join()
        return self

    def __enter__(self) -> Engines:
        return self.start_background().wait()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop every engine, including one still starting (it is abandoned, then stopped)."""
        self._abort.set()
        for thread in self._threads:
            thread.join()
        with self._lock:
            running = list(self.running.values())
            self.running.clear()
        for engine in running:
            engine.signal_stop()  # all shut down at once
        for engine in running:
            engine.stop()

    def summary(self, only: str = "") -> str:
        lines = []
        for name, state in self.state.items():
            if only and name != only:
                continue
            if "unavailable" in state:
                lines.append(f"engines: {name} unavailable: {state['unavailable']}")
            elif "error" in state:
                lines.append(f"engines: {name} failed to start: {state['error']}")
            elif "starting" in state:
                lines.append(f"engines: {name} starting")
            else:
                where = state.get("url") or state.get("uri")
                rss = self.running[name].rss_bytes() / 2**20 if name in self.running else 0
                lines.append(
                    f"engines: {name} at {where}: prepared in {state['prepare_seconds']:.1f} s,"
                    f" started in {state['start_seconds']:.1f} s, RSS {rss:.0f} MiB"
                )
        return "\n".join(lines)


def read_state(path: Path, name: str, timeout: float = FETCH_TIMEOUT_S + START_TIMEOUT_S) -> dict[str, Any]:
    """One engine's state from a runner's state file, once it is settled (ready, unavailable or failed)."""
    deadline = time.monotonic() + timeout
    while True:
        state: dict[str, Any] = json.loads(path.read_text()).get(name) or {"unavailable": f"{name} was not started"}
        if "starting" not in state:
            return state
        if time.monotonic() > deadline:
            return {"error": f"{name} was still starting after {timeout:.0f} s"}
        time.sleep(POLL_S)


# Command line ------------------------------------------------------------------------------------------
def _run(command: list[str], only: Sequence[str]) -> int:
    """Start the engines in the background and run ``command`` at once; its tests wait for the engines they
    use (tests/support/engines.py reads the state file), so linting and unit tests overlap the start."""
    if not command:
        print("engines run: name a command after --", file=sys.stderr)
        return 2
    BUILD.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix="state-", suffix=".json", dir=BUILD)
    os.close(handle)
    path = Path(name)
    engines = Engines(only, state_path=path).start_background()
    try:
        return subprocess.call(command, env={**os.environ, STATE_ENV: str(path)})
    finally:
        engines.stop()
        path.unlink(missing_ok=True)


def _serve(only: Sequence[str], out: IO[str]) -> int:
    with Engines(only) as engines:
        json.dump(engines.state, out, indent=2)
        print(file=out, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("action", choices=["run", "prepare", "start"])
    parser.add_argument("--only", action="append", default=[], choices=[s.name for s in SPECS])
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    command = argv[split + 1 :]
    if args.action == "run":
        return _run(command, args.only)
    if args.action == "start":
        return _serve(args.only, sys.stdout)
    status = 0
    for spec in SPECS:
        if args.only and spec.name not in args.only:
            continue
        try:
            prepared = prepare(spec)
            print(
                f"engines: {spec.name} prepared in {prepared.seconds:.1f} s ({prepared.download_bytes / 2**20:.0f} MiB of jars)"
            )
        except Unavailable as why:
            print(f"engines: {spec.name} unavailable: {why}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
