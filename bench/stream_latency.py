"""Append → SSE-client latency on the SQLite event log, wake-on-append vs a 100 ms poll, and replay coalescing.

Run from the repository root::

    .venv/bin/python bench/stream_latency.py [--events 200] [--spacing-ms 20] [--many 50]

What runs where:

* the server: uvicorn on 127.0.0.1 (a free port) in a background thread of this process, serving a small
  FastAPI app over ragline's SQLite log (``SqliteStreamManager`` over ``Database`` in a temp dir);
* the writer: a coroutine on the server's event loop, as the embedded runtime's turns are (``LocalRunner``);
* the readers: real SSE clients (httpx + httpx-sse, one asyncio loop) in a separate process
  (``bench/sse_readers.py``), so their parsing does not compete with the server for this process's GIL.

Routes of the benchmark app (``{key}`` is a stream key):

* ``/follow/{key}`` — ragline's own machinery: ``ragline.server.sse.frames`` (``follow`` woken on append,
  replay coalescing on) wrapped in ``sse_response``;
* ``/follow-uncoalesced/{key}`` — the same with ``follow(..., coalesce_replay=False)`` and ``sse_frame``;
* ``/poll/{key}`` — the reference design's fixed 100 ms ticker: ``get_events(from_offset)`` then
  ``asyncio.sleep(0.1)``, in a loop, framed by ``sse_frame`` in ``sse_response``.

Measured latency events are ``answer`` events with ``done=True`` and distinct ids, so replay coalescing can
never join two of them: every append is one frame. Their ``data.t_send_ns`` is ``time.monotonic_ns()``
taken just before ``append_event``; a reader subtracts it from its own ``time.monotonic_ns()`` when
httpx-sse hands it the frame (CLOCK_MONOTONIC is machine-wide, so the two processes share it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import queue
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
import uvicorn
from fastapi import FastAPI

from ragline.config import StreamConfig
from ragline.server.sse import frames, sse_frame, sse_response
from ragline.store.db import Database
from ragline.stream.base import StreamManager, stream_key
from ragline.stream.replay import follow
from ragline.stream.sqlite import SqliteStreamManager
from ragline.types import ResponseType, StreamEvent

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # bench.stats and tests.support, as pytest's pythonpath = ["."] gives them

from bench.stats import percentile  # noqa: E402
from tests.support.servers import ServerThread  # noqa: E402

T = TypeVar("T")

READERS_SCRIPT = Path(__file__).with_name("sse_readers.py")
POLL_INTERVAL_S = 0.1
REPLAY_CHUNKS = 5000
IDS = {"request_id": "bench-request", "session_id": "bench-session", "assistant_message_id": "bench-message"}


# The app ---------------------------------------------------------------------------------------------------


async def poll_frames(manager: StreamManager, key: str, start: int) -> AsyncIterator[bytes]:
    """The reference design's reader: a fixed 100 ms ticker over ``get_events(from_offset)``, no wake-ups."""
    next_seq = start
    while True:
        events = await manager.get_events(key, next_seq)
        for event in events:
            yield sse_frame(event, **IDS)
            if event.is_terminal:
                return
        if events:
            next_seq = events[-1].seq + 1
        await asyncio.sleep(POLL_INTERVAL_S)


async def uncoalesced_frames(
    manager: StreamManager, key: str, start: int, config: StreamConfig
) -> AsyncIterator[bytes]:
    """``ragline.server.sse.frames`` with replay coalescing off (``frames`` itself has no such switch)."""
    async for event in follow(
        manager,
        key,
        start,
        min_wait_s=config.poll_min_wait_s,
        max_wait_s=config.poll_max_wait_s,
        coalesce_replay=False,
    ):
        yield sse_frame(event, **IDS)


def build_app(manager: StreamManager, config: StreamConfig) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.loop = asyncio.get_running_loop()
        yield

    app = FastAPI(lifespan=lifespan)

    @app.get("/follow/{key}")
    async def follow_route(key: str, offset: int = 0) -> Any:
        return sse_response(frames(manager, key, offset, config, **IDS), config)

    @app.get("/follow-uncoalesced/{key}")
    async def follow_uncoalesced_route(key: str, offset: int = 0) -> Any:
        return sse_response(uncoalesced_frames(manager, key, offset, config), config)

    @app.get("/poll/{key}")
    async def poll_route(key: str, offset: int = 0) -> Any:
        return sse_response(poll_frames(manager, key, offset), config)

    return app


class BenchServer(ServerThread):
    """The shared test server, plus a way to run coroutines on its event loop (where turns write)."""

    def __init__(self, app: FastAPI) -> None:
        super().__init__(app)
        self._app = app

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        loop: asyncio.AbstractEventLoop = self._app.state.loop
        return loop

    def run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coro`` on the server's event loop and wait."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self, timeout: float = 15) -> None:
        super().stop(timeout)
        if self._thread.is_alive():
            print(f"warning: uvicorn thread did not stop within {timeout:.0f} s", file=sys.stderr)


# The reader process ----------------------------------------------------------------------------------------


class ReaderProcess:
    """``bench/sse_readers.py`` in a child process; its stdout lines are JSON status messages."""

    def __init__(self, *args: str) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, str(READERS_SCRIPT), *args],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._pump = threading.Thread(target=self._read, name="reader-stdout", daemon=True)
        self._pump.start()

    @property
    def pid(self) -> int:
        return self._proc.pid

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def expect(self, status: str, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"reader process: no {status!r} within {timeout:.0f} s")
            try:
                line = self._lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                raise RuntimeError(f"reader process exited (rc={self._proc.wait()}) before {status!r}")
            message: dict[str, Any] = json.loads(line)
            if message.get("status") == "failed":
                raise RuntimeError(f"reader process failed: {message.get('error')}")
            if message.get("status") == status:
                return message

    def close(self) -> None:
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()  # only our own child, by its Popen handle
            self._proc.wait()
        self._pump.join(timeout=5)
        if self._proc.stdout is not None:
            self._proc.stdout.close()

    def __enter__(self) -> ReaderProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None and self._proc.poll() is None:
            self._proc.kill()
        self.close()


# Writers (coroutines on the server loop) ---------------------------------------------------------------------


async def append_warmup(manager: StreamManager, key: str) -> None:
    await manager.append_event(key, StreamEvent(id="warmup", type=ResponseType.TOOL_RESULT, data={"warmup": True}))


async def append_timed(manager: StreamManager, key: str, count: int, spacing_s: float) -> list[float]:
    """``count`` done answers with distinct ids, ``spacing_s`` apart, then ``complete``; returns append ms."""
    append_ms: list[float] = []
    for i in range(count):
        sent = time.monotonic_ns()
        event = StreamEvent(
            id=f"answer-{i}",
            type=ResponseType.ANSWER,
            content=f"chunk {i} of the answer, a few tokens long. ",
            done=True,
            data={"t_send_ns": sent},
        )
        await manager.append_event(key, event)
        append_ms.append((time.monotonic_ns() - sent) / 1e6)
        await asyncio.sleep(spacing_s)
    await manager.append_event(key, StreamEvent(id="complete", type=ResponseType.COMPLETE, done=True))
    return append_ms


async def append_long_answer(manager: StreamManager, key: str, chunks: int) -> int:
    """``chunks`` non-done chunks of one answer, its done answer and ``complete``; returns the answer's length."""
    length = 0
    for i in range(chunks):
        content = f"tok{i} "
        length += len(content)
        await manager.append_event(key, StreamEvent(id="answer-long", type=ResponseType.ANSWER, content=content))
    await manager.append_event(key, StreamEvent(id="answer-long", type=ResponseType.ANSWER, done=True))
    await manager.append_event(key, StreamEvent(id="complete", type=ResponseType.COMPLETE, done=True))
    return length


# Scenarios --------------------------------------------------------------------------------------------------


@dataclass
class Row:
    scenario: str
    readers: int
    p50: float | None = None
    p99: float | None = None
    max: float | None = None
    events: int = 0
    frames: str = ""
    stream_ms: float | None = None
    notes: list[str] = field(default_factory=list)


def latency_scenario(
    server: BenchServer, manager: StreamManager, label: str, route: str, readers: int, events: int, spacing_s: float
) -> Row:
    key = stream_key("bench-session", f"{route}-{readers}-{uuid.uuid4().hex[:8]}")
    url = f"{server.url}/{route}/{quote(key, safe='')}"
    with ReaderProcess("latency", url, "--readers", str(readers)) as readers_proc:
        readers_proc.expect("connected", timeout=60)
        server.run(append_warmup(manager, key), timeout=10)
        readers_proc.expect("ready", timeout=30)
        started = time.monotonic()
        append_ms = server.run(append_timed(manager, key, events, spacing_s), timeout=events * spacing_s * 5 + 30)
        wrote_s = time.monotonic() - started
        result = readers_proc.expect("done", timeout=60)
    latencies: list[float] = result["latencies_ms"]
    frame_counts: list[int] = result["frames"]
    row = Row(label, readers, events=events)
    if latencies:
        row.p50, row.p99, row.max = percentile(latencies, 50), percentile(latencies, 99), max(latencies)
    if frame_counts:
        low, high = min(frame_counts), max(frame_counts)
        row.frames = f"{low}" if low == high else f"{low}-{high}"
    expected = readers * events
    if len(latencies) != expected:
        row.notes.append(f"{label} x{readers}: {len(latencies)} of {expected} latency samples")
    for error in result["errors"]:
        row.notes.append(f"{label} x{readers}: reader error {error}")
    row.notes.append(
        f"{label} x{readers}: writer {events} appends in {wrote_s:.2f} s, "
        f"append p50 {percentile(append_ms, 50):.2f} ms / max {max(append_ms):.2f} ms"
    )
    return row


def replay_scenarios(server: BenchServer, manager: StreamManager, repeats: int) -> list[Row]:
    key = stream_key("bench-session", f"replay-{uuid.uuid4().hex[:8]}")
    started = time.monotonic()
    answer_chars = server.run(append_long_answer(manager, key, REPLAY_CHUNKS), timeout=120)
    build_s = time.monotonic() - started
    rows: list[Row] = []
    for label, route in (("replay, coalesced", "follow"), ("replay, uncoalesced", "follow-uncoalesced")):
        url = f"{server.url}/{route}/{quote(key, safe='')}?offset=0"
        with ReaderProcess("replay", url, "--repeats", str(repeats + 1)) as proc:
            runs: list[dict[str, Any]] = proc.expect("done", timeout=120)["runs"][1:]  # the first run warms up
        times = [run["ms"] for run in runs]
        frame_counts = sorted({run["frames"] for run in runs})
        row = Row(label, 1, events=REPLAY_CHUNKS + 2)
        row.frames = "/".join(str(n) for n in frame_counts)
        row.stream_ms = percentile(times, 50)
        row.notes.append(
            f"{label}: median of {len(runs)} runs (after 1 warm-up); runs {', '.join(f'{t:.0f}' for t in times)} ms; "
            f"first frame after {percentile([r['first_frame_ms'] for r in runs], 50):.1f} ms"
        )
        for run in runs:
            if run["answer_chars"] != answer_chars or run["last_type"] != "complete":
                row.notes.append(
                    f"{label}: MISMATCH answer chars {run['answer_chars']} (expected {answer_chars}), "
                    f"last frame {run['last_type']} id {run['last_id']}"
                )
                break
        rows.append(row)
    rows[0].notes.insert(0, f"replay log: {REPLAY_CHUNKS + 2} events appended in {build_s:.2f} s")
    return rows


# Output -----------------------------------------------------------------------------------------------------


def machine_info() -> list[str]:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    return [
        f"python {platform.python_version()} ({platform.python_implementation()}) on {platform.platform()}",
        f"cpu count {os.cpu_count()} (usable by this process: {usable}); processor {platform.processor() or '?'}",
        f"sqlite {sqlite3.sqlite_version}; uvicorn {uvicorn.__version__} (h11, asyncio loop); httpx {httpx.__version__}",
    ]


def fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_table(rows: list[Row]) -> None:
    header = ["scenario", "readers", "p50 ms", "p99 ms", "max ms", "events", "frames/reader", "stream ms"]
    cells = [
        [r.scenario, str(r.readers), fmt(r.p50), fmt(r.p99), fmt(r.max), str(r.events), r.frames, fmt(r.stream_ms)]
        for r in rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]

    def line(values: list[str]) -> str:
        return " | ".join(
            v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths, strict=True))
        )

    print(line(header))
    print("-+-".join("-" * w for w in widths))
    for row_cells in cells:
        print(line(row_cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200, help="measured appends per latency scenario")
    parser.add_argument("--spacing-ms", type=float, default=20.0, help="pause between measured appends")
    parser.add_argument("--many", type=int, default=50, help="reader count of the concurrent scenarios")
    parser.add_argument("--replay-repeats", type=int, default=5, help="timed replays per variant")
    args = parser.parse_args()

    for info in machine_info():
        print(info)
    print(
        "server: uvicorn in a background thread of this process; writer: coroutine on the server's event loop; "
        "readers: httpx + httpx-sse clients in ONE separate process (asyncio)"
    )
    print(
        f"latency: {args.events} done-answer events (distinct ids, never coalesced) {args.spacing_ms:g} ms apart, "
        "then complete; latency = reader receive - writer send (before append_event)"
    )
    print()

    began = time.monotonic()
    spacing_s = args.spacing_ms / 1000
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="ragline-bench-") as tmp:
        db = Database(Path(tmp) / "ragline.db")
        manager = SqliteStreamManager(db)
        config = StreamConfig()
        server = BenchServer(build_app(manager, config)).start()
        try:
            for label, route in (("wake-on-append (follow)", "follow"), ("poll every 100 ms", "poll")):
                for readers in (1, args.many):
                    rows.append(latency_scenario(server, manager, label, route, readers, args.events, spacing_s))
            rows.extend(replay_scenarios(server, manager, args.replay_repeats))
        finally:
            server.stop()
            manager.close()
            db.close()

    print_table(rows)
    print()
    print(
        "p50/p99/max: over all readers' samples (events x readers); frames/reader: frames each reader received "
        "(latency rows: + warm-up + complete); stream ms: request start to stream end, one client, from offset 0"
    )
    for row in rows:
        for note in row.notes:
            print(f"  {note}")
    print(f"total {time.monotonic() - began:.1f} s")


if __name__ == "__main__":
    main()
