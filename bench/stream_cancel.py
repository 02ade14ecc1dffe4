"""What a stoppable model stream costs per chunk: ``until_cancelled`` against reading the chunks plainly.

Every answer chunk a model streams passes through ``until_cancelled`` (so a stop ends the stream at once). With
50 answers streaming at 40 chunks/s each, its cost per chunk is loop time every reader waits for. Run::

    .venv/bin/python bench/stream_cancel.py [--chunks 200000] [--before PATH/TO/OLD/cancel.py]

``--before`` loads another version of ``ragline/event/cancel.py`` (``git show REV:layers/core/ragline/event/cancel.py
> /tmp/old_cancel.py``) and measures it in the same run, rounds interleaved, so the ratio is of one machine state.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # bench.*, as pytest's pythonpath = ["."] gives them

from bench.versions import load_version  # noqa: E402
from ragline.event.cancel import CancelToken, until_cancelled  # noqa: E402


async def _source(n: int) -> AsyncIterator[int]:
    for i in range(n):
        if i % 8 == 0:
            await asyncio.sleep(0)  # a network read that waits now and then
        yield i


async def _plain(n: int, _token: Any, _wrap: Any) -> int:
    return sum([c async for c in _source(n)])


async def _wrapped(n: int, token: Any, wrap: Callable[..., AsyncIterator[int]]) -> int:
    return sum([c async for c in wrap(_source(n), token)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", type=Path, help="another cancel.py to measure beside this one")
    args = parser.parse_args()
    runs: dict[str, tuple[Any, Any, Any]] = {"plain async for": (_plain, None, None)}
    if args.before:
        before = load_version(args.before, "before_cancel")
        runs["until_cancelled, before"] = (_wrapped, before.CancelToken, before.until_cancelled)
    runs["until_cancelled"] = (_wrapped, CancelToken, until_cancelled)
    timings: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, (scenario, token_type, wrap) in runs.items():
            started = time.perf_counter()
            asyncio.run(scenario(args.chunks, token_type() if token_type else None, wrap))
            timings[name].append((time.perf_counter() - started) / args.chunks * 1e6)
    floor = statistics.median(timings["plain async for"])
    print(f"{args.chunks:,} chunks, median of {args.rounds} rounds, interleaved")
    print(f"{'':28} {'µs/chunk':>9} {'over plain':>11}")
    for name, values in timings.items():
        median = statistics.median(values)
        print(f"{name:28} {median:9.2f} {median - floor:11.2f}")


if __name__ == "__main__":
    main()
