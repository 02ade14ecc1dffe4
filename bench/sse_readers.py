"""SSE reader process for bench/stream_latency.py: real clients (httpx + httpx-sse) in one asyncio loop.

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
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=["latency", "replay"])
    parser.add_argument("url")
    parser.add_argument("--readers", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    try:
        if args.mode == "latency":
            asyncio.run(latency(args.url, args.readers))
        else:
            asyncio.run(replay(args.url, args.repeats))
    except Exception as exc:
        emit({"status": "failed", "error": f"{type(exc).__name__}: {exc}"})
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
