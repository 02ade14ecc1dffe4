"""What reading the chat model's SSE stream costs the event loop per event: ``chat_stream`` from a real socket.

A plain asyncio HTTP/1.1 server in a subprocess (so its CPU is not counted) answers each chat completions request
with OpenAI-style ``data: {...}`` chunk events, one event per chunked write, then ``data: [DONE]``. ``--streams``
answers are read at once, their events paced ``--pace-ms`` apart as a model's tokens are (0: as fast as the socket
takes them, so reads gather several events). The consumer's CPU time (``time.process_time`` of this process, which
only reads) is divided by the events read. Run::

    .venv/bin/python bench/model_sse.py [--events 20000] [--streams 50] [--before PATH/TO/OLD/openai_compatible.py]

``--before`` loads another version of ``ragline/models/openai_compatible.py`` (``git show
REV:layers/core/ragline/models/openai_compatible.py > /tmp/old_openai_compatible.py``) and measures it in the same
run, rounds interleaved, so the ratio is of one machine state.

Measured with it (2 cores, load 3, httpx's ``aiter_lines`` before, the reader cutting ``aiter_bytes`` itself now):
55.92 against 55.00 CPU µs per event paced (a second run at load 5: 66.89 against 63.08), 45.50 against 39.08
unpaced; most of the rest is httpcore and h11 (chunked framing) and the loop.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # bench.*, as pytest's pythonpath = ["."] gives them

from bench.versions import load_version  # noqa: E402
from ragline.models.base import ChatMessage  # noqa: E402
from ragline.models.openai_compatible import OpenAICompatibleChatModel  # noqa: E402
from ragline.types import ChatOptions  # noqa: E402

_TOKENS = ["The", " answer", " is", " 42", ".", " 你好", "，", "世界", " and", " more"]
_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
    b"transfer-encoding: chunked\r\n\r\n"
)


def _event(index: int, last: bool) -> bytes:
    """One chunk event as OpenAI sends it (vLLM and llama.cpp send the same fields, UTF-8 raw)."""
    choice = {
        "index": 0,
        "delta": {"content": _TOKENS[index % len(_TOKENS)]},
        "logprobs": None,
        "finish_reason": "stop" if last else None,
    }
    payload = {
        "id": "chatcmpl-9xYzAbCdEfGhIjKlMnOpQrStUv",
        "object": "chat.completion.chunk",
        "created": 1730000000,
        "model": "bench-model",
        "system_fingerprint": "fp_0123456789",
        "choices": [choice],
    }
    return b"data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def _serve(events_per_answer: int, pace_s: float) -> None:
    events = [_chunk(_event(i, i == events_per_answer - 1)) for i in range(events_per_answer)]
    done = _chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:  # keep-alive: one request after another on the connection
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.lower().split(b"\r\n")
                        if line.startswith(b"content-length:")
                    ),
                    0,
                )
                await reader.readexactly(length)
                writer.write(_HEAD)
                for data in events:  # one event per write, as a model streams its tokens
                    writer.write(data)
                    await writer.drain()
                    if pace_s:
                        await asyncio.sleep(pace_s)
                writer.write(done)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # ends when the bench closes stdin


async def _read_answers(model_type: Any, url: str, streams: int) -> tuple[int, str]:
    model = model_type(url, "bench-model")
    messages = [ChatMessage("user", "What is the answer?")]

    async def one() -> tuple[int, str]:
        count, text = 0, []
        async for chunk in model.chat_stream(messages, ChatOptions()):
            count += 1
            text.append(chunk.content)
        return count, "".join(text)

    try:
        results = await asyncio.gather(*(one() for _ in range(streams)))
    finally:
        await model.release_loop()
    return sum(count - 1 for count, _ in results), results[0][1]  # events read, one answer's text (minus the end)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=20_000, help="events per round, over all streams")
    parser.add_argument("--streams", type=int, default=50)
    parser.add_argument("--pace-ms", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", type=Path, help="another openai_compatible.py to measure beside this one")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)  # the server subprocess: events per answer
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve(args.serve, args.pace_ms / 1000))
        return
    per_answer = max(1, args.events // args.streams)
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(per_answer), "--pace-ms", str(args.pace_ms)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{server.stdout.readline().strip()}/v1"
        runs: dict[str, Any] = {}
        if args.before:
            runs["before"] = load_version(args.before, "before_openai_compatible").OpenAICompatibleChatModel
        runs["now"] = OpenAICompatibleChatModel
        expected = "".join(_TOKENS[i % len(_TOKENS)] for i in range(per_answer))
        cpu: dict[str, list[float]] = {name: [] for name in runs}
        wall: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.rounds):
            for name, model_type in runs.items():
                cpu_start, wall_start = time.process_time(), time.perf_counter()
                events, text = asyncio.run(_read_answers(model_type, url, args.streams))
                cpu[name].append((time.process_time() - cpu_start) / events * 1e6)
                wall[name].append((time.perf_counter() - wall_start) / events * 1e6)
                if events != per_answer * args.streams or text != expected:
                    raise SystemExit(f"{name}: read {events} events, answer {text[:40]!r}…: not what was served")
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait()
    print(
        f"{per_answer * args.streams:,} events ({args.streams} streams × {per_answer}, paced {args.pace_ms} ms), "
        f"median of {args.rounds} rounds, interleaved"
    )
    print(f"{'':8} {'CPU µs/event':>13} {'wall µs/event':>14}")
    for name in runs:
        print(f"{name:8} {statistics.median(cpu[name]):13.2f} {statistics.median(wall[name]):14.2f}")
    if "before" in runs:
        ratio = statistics.median(cpu["now"]) / statistics.median(cpu["before"])
        print(f"now/before CPU: {ratio:.2f} ({(1 - ratio) * 100:.0f}% less)")


if __name__ == "__main__":
    main()
