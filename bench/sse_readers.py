"""SSE reader process for bench/stream_latency.py and bench/mixed_load.py: real clients (httpx + httpx-sse) in one
asyncio loop.

Runs in its own process so the clients' parsing does not share a GIL with the server under test. Talks to
the parent through stdout, one JSON object per line:

``latency URL --readers N``
    opens N concurrent streams on URL; prints ``{"status": "connected"}`` once all N have their response
    headers, ``{"status": "ready"}`` once all N have received the warm-up frame (``data.warmup``), then,
    when every stream has ended, ``{"status": "done", "latencies_ms": [...], "frames": [...], "errors": [...]}``
    where a latency is receive time minus ``data.t_send_ns`` (both ``time.monotonic_ns()``, a clock shared by
    all processes of the machine).

``replay URL --repeats R``
    reads URL from start to end R times, one after another, and prints
    ``{"status": "done", "runs": [{"frames", "ms", "first_frame_ms", "answer_chars", "last_type", "last_id"}]}``.

``turns URL --key K --sessions S1,S2,... --phase-file F --question Q --answer A [--drain-s D]``
    one reader per session of ``ragline serve`` at URL: each asks Q (``POST …/questions``), follows the turn's
    events to the end, and asks again, until F names the phase ``stop``; turns then in flight are followed at
    most D s more (then cut, and counted so). Prints ``{"status": "ready"}`` once every reader has received a
    first frame, then ``{"status": "done", "gaps": {phase: [ms, ...]}, "turns": [...], "errors": [...]}``: a
    gap is the receive-time gap between two consecutive frames of one stream (the wait before a stream's first
    frame is not one), filed under the phase F named when the later frame came; a turn is ``{"frames",
    "terminals", "last", "increasing", "jumps", "text_ok", "cut"}`` (``jumps``: frames whose id is not the
    previous one + 1, coalesced chunks; ``text_ok``: the answer frames spell A exactly); ``answer_gaps``: the gaps
    between two answer chunks (the answer streaming), per phase; ``slow_pairs``: per phase, how many gaps over
    50 ms came between which frames (``"references > answer"``: the kinds of the frames before and after).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from httpx_sse import aconnect_sse


def emit(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def make_client(connections: int) -> httpx.AsyncClient:
    # trust_env=False: never route 127.0.0.1 through a proxy from the environment.
    return httpx.AsyncClient(
        trust_env=False,
        timeout=httpx.Timeout(60.0, connect=10.0),
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
    )


async def latency(url: str, readers: int) -> None:
    connected = 0
    warmed = 0

    async def one(client: httpx.AsyncClient) -> tuple[list[float], int]:
        nonlocal connected, warmed
        latencies: list[float] = []
        frames = 0
        async with aconnect_sse(client, "GET", url) as source:
            source.response.raise_for_status()
            connected += 1
            if connected == readers:
                emit({"status": "connected"})
            async for sse in source.aiter_sse():
                received = time.monotonic_ns()
                frames += 1
                extra = json.loads(sse.data).get("data") or {}
                sent = extra.get("t_send_ns")
                if sent is not None:
                    latencies.append((received - int(sent)) / 1e6)
                elif extra.get("warmup"):
                    warmed += 1
                    if warmed == readers:
                        emit({"status": "ready"})
        return latencies, frames

    async with make_client(readers + 1) as client:
        results = await asyncio.gather(*(one(client) for _ in range(readers)), return_exceptions=True)
    all_latencies: list[float] = []
    frame_counts: list[int] = []
    errors: list[str] = []
    for result in results:
        if isinstance(result, BaseException):
            errors.append(f"{type(result).__name__}: {result}")
        else:
            all_latencies.extend(result[0])
            frame_counts.append(result[1])
    emit({"status": "done", "latencies_ms": all_latencies, "frames": frame_counts, "errors": errors})


async def replay(url: str, repeats: int) -> None:
    runs: list[dict[str, Any]] = []
    async with make_client(2) as client:
        for _ in range(repeats):
            frames = 0
            answer_chars = 0
            last_type = ""
            last_id = ""
            first: float | None = None
            started = time.perf_counter()
            async with aconnect_sse(client, "GET", url) as source:
                source.response.raise_for_status()
                async for sse in source.aiter_sse():
                    if first is None:
                        first = time.perf_counter()
                    frames += 1
                    body = json.loads(sse.data)
                    last_type = str(body.get("response_type"))
                    last_id = sse.id
                    if last_type == "answer":
                        answer_chars += len(body.get("content", ""))
            ended = time.perf_counter()
            runs.append(
                {
                    "frames": frames,
                    "ms": (ended - started) * 1000,
                    "first_frame_ms": ((first or ended) - started) * 1000,
                    "answer_chars": answer_chars,
                    "last_type": last_type,
                    "last_id": last_id,
                }
            )
    emit({"status": "done", "runs": runs})


TERMINAL_TYPES = {"complete", "error", "stop"}


class _Phase:
    """The phase the parent process names in a file (written by rename, so never read half-written)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self.name = self._read()

    def _read(self) -> str:
        try:
            return self._path.read_text().strip() or "start"
        except FileNotFoundError:
            return "start"

    async def watch(self) -> None:
        """Until the phase is ``stop``: the file is read every 50 ms."""
        while self.name != "stop":
            await asyncio.sleep(0.05)
            self.name = self._read()


async def follow_turns(
    url: str, key: str, sessions: list[str], phase_file: Path, question: str, answer: str, drain_s: float
) -> None:
    phase = _Phase(phase_file)
    gaps: dict[str, list[float]] = {}
    # The gaps between two answer frames (the answer streaming), and the frames around each gap over 50 ms.
    answer_gaps: dict[str, list[float]] = {}
    slow_pairs: dict[str, dict[str, int]] = {}
    turns: list[dict[str, Any]] = []
    errors: list[str] = []
    begun: set[str] = set()  # readers whose first turn gave a frame, or failed

    def first_turn_over(session: str) -> None:
        if session not in begun:
            begun.add(session)
            if len(begun) == len(sessions):
                emit({"status": "ready"})

    async def one_turn(client: httpx.AsyncClient, session: str, number: int) -> None:
        reply = await client.post(f"/api/v1/sessions/{session}/questions", json={"query": f"{question} ({number})"})
        if reply.status_code != 202:
            raise RuntimeError(f"ask answered {reply.status_code}: {reply.text[:200]}")
        message = reply.json()["data"]["assistant_message_id"]
        turn: dict[str, Any] = {"frames": 0, "terminals": 0, "last": "", "increasing": True, "jumps": 0}
        turn.update(text_ok=False, cut=True)
        turns.append(turn)
        text: list[str] = []
        previous_id: int | None = None
        previous_at: float | None = None
        previous_kind = ""
        async with aconnect_sse(client, "GET", f"/api/v1/sessions/{session}/messages/{message}/events") as source:
            source.response.raise_for_status()
            async for sse in source.aiter_sse():
                if not sse.data:
                    continue  # a ``: ping`` comment
                received = time.perf_counter()
                body = json.loads(sse.data)
                kind = str(body.get("response_type"))
                if body.get("done") and kind == "answer":
                    kind = "answer done"
                if previous_at is None:
                    first_turn_over(session)
                else:
                    gap = (received - previous_at) * 1000
                    gaps.setdefault(phase.name, []).append(gap)
                    if kind == previous_kind == "answer":
                        answer_gaps.setdefault(phase.name, []).append(gap)
                    if gap > 50:
                        pairs = slow_pairs.setdefault(phase.name, {})
                        pair = f"{previous_kind} > {kind}"
                        pairs[pair] = pairs.get(pair, 0) + 1
                previous_at = received
                previous_kind = kind
                frame_id = int(sse.id)
                if previous_id is not None:
                    turn["increasing"] = turn["increasing"] and frame_id > previous_id
                    turn["jumps"] += frame_id != previous_id + 1
                previous_id = frame_id
                turn["frames"] += 1
                turn["last"] = kind
                if kind in TERMINAL_TYPES:
                    turn["terminals"] += 1
                elif kind in ("answer", "answer done"):
                    text.append(str(body.get("content", "")))
        turn["text_ok"] = "".join(text) == answer
        turn["cut"] = False

    async def reader(client: httpx.AsyncClient, session: str) -> None:
        number = 0
        while phase.name != "stop":
            try:
                await one_turn(client, session, number)
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}"[:300])
                first_turn_over(session)
                await asyncio.sleep(0.5)  # a refused or failed ask: not at once again, the server is struggling
            number += 1

    async with make_client(len(sessions) + 1) as client:
        client.base_url = httpx.URL(url)
        client.headers["X-API-Key"] = key
        tasks = [asyncio.create_task(reader(client, s)) for s in sessions]
        await phase.watch()  # returns once the phase is "stop"
        _, pending = await asyncio.wait(tasks, timeout=drain_s)
        for task in pending:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    emit(
        {
            "status": "done",
            "gaps": gaps,
            "answer_gaps": answer_gaps,
            "slow_pairs": slow_pairs,
            "turns": turns,
            "errors": errors,
            "cut_readers": len(pending),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=["latency", "replay", "turns"])
    parser.add_argument("url")
    parser.add_argument("--readers", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--key", default="")
    parser.add_argument("--sessions", default="")
    parser.add_argument("--phase-file", type=Path)
    parser.add_argument("--question", default="")
    parser.add_argument("--answer", default="")
    parser.add_argument("--drain-s", type=float, default=60.0)
    args = parser.parse_args()
    try:
        if args.mode == "latency":
            asyncio.run(latency(args.url, args.readers))
        elif args.mode == "replay":
            asyncio.run(replay(args.url, args.repeats))
        else:
            asyncio.run(
                follow_turns(
                    args.url,
                    args.key,
                    args.sessions.split(","),
                    args.phase_file,
                    args.question,
                    args.answer,
                    args.drain_s,
                )
            )
    except Exception as exc:
        emit({"status": "failed", "error": f"{type(exc).__name__}: {exc}"})
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
