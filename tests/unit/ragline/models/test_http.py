"""The models' shared HTTP pieces: a client per event loop, and which replies are asked again, after how long."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from ragline.models.base import ChatMessage
from ragline.models.http import POOL_SHARDS, LoopClients, ShardedTransport, retry_delay, retryable
from ragline.models.openai_compatible import OpenAICompatibleChatModel
from ragline.types import ChatOptions
from tests.support.servers import ServerThread


def test_one_client_per_loop_kept_for_that_loop_and_closed_on_release() -> None:
    clients = LoopClients({"Authorization": "Bearer k"}, timeout=5.0)

    async def twice() -> tuple[httpx.AsyncClient, httpx.AsyncClient]:
        return clients.get(), clients.get()

    first, again = asyncio.run(twice())
    assert first is again
    assert first.headers["Authorization"] == "Bearer k"
    assert first.timeout.read == 5.0

    async def on_a_new_loop() -> httpx.AsyncClient:
        client = clients.get()
        await clients.release()
        return client

    second = asyncio.run(on_a_new_loop())
    assert second is not first  # a warm Lambda's next invocation runs on a new loop: its pool is a new one
    assert second.is_closed
    assert not first.is_closed


def test_retryable_statuses_are_the_sdks() -> None:
    assert [s for s in (200, 400, 401, 404, 408, 409, 422, 429, 500, 503, 599) if retryable(s)] == [
        408,
        409,
        429,
        500,
        503,
        599,
    ]


def test_retry_delay_takes_a_sane_retry_after_else_backs_off() -> None:
    def reply(**headers: str) -> httpx.Response:
        return httpx.Response(429, headers=headers)

    assert retry_delay(0, reply(**{"retry-after": "3"})) == 3.0
    assert retry_delay(0, reply(**{"retry-after-ms": "250"})) == 0.25
    # Absurd or unreadable values fall back to the backoff: 0.5 s doubling to 8 s, up to a quarter less.
    for attempt, ceiling in ((0, 0.5), (1, 1.0), (5, 8.0)):
        for headers in ({"retry-after": "3600"}, {"retry-after": "soon"}, {}):
            assert 0.75 * ceiling <= retry_delay(attempt, reply(**headers)) <= ceiling
    assert 0.375 <= retry_delay(0, None) <= 0.5


def test_fifty_answers_at_once_keep_their_connections_for_the_next_fifty() -> None:
    """The pool keeps as many idle connections as answers stream at once (the OpenAI SDK's 100): with httpx's
    default of 20, 30 of 50 connections were closed after each answer and the next 30 turns connected anew (a TLS
    handshake each, with a hosted model), on the loop that serves every stream."""
    at_once = 50
    app = FastAPI()
    ports: list[int] = []
    arrived: dict[int, asyncio.Event] = {}

    @app.post("/v1/chat/completions")
    async def completions(request: Request) -> StreamingResponse:
        assert request.client is not None
        ports.append(request.client.port)
        # Every answer of a round is open before any ends: the round's connections are all in use at once.
        round_ = (len(ports) - 1) // at_once
        everyone = arrived.setdefault(round_, asyncio.Event())
        if len(ports) % at_once == 0:
            everyone.set()
        await everyone.wait()

        async def body() -> AsyncIterator[str]:
            yield 'data: {"choices": [{"index": 0, "delta": {"content": "ok"}}]}\n\n'
            yield "data: [DONE]\n\n"

        return StreamingResponse(body(), media_type="text/event-stream")

    server = ServerThread(app).start()
    try:
        model = OpenAICompatibleChatModel(f"{server.url}/v1", "scripted")

        async def answer() -> str:
            parts = []
            async for chunk in model.chat_stream([ChatMessage(role="user", content="hi")], ChatOptions()):
                parts.append(chunk.content)
            return "".join(parts)

        async def two_rounds() -> list[str]:
            answers = []
            for _ in range(2):
                answers += await asyncio.gather(*(answer() for _ in range(at_once)))
            await model.release_loop()
            return answers

        answers = asyncio.run(two_rounds())
    finally:
        server.stop()
    assert answers == ["ok"] * (2 * at_once)
    assert len(ports) == 2 * at_once
    assert len(set(ports)) == at_once  # the second round reused every connection of the first


def test_requests_spread_over_the_pools_and_leave_them_when_their_bodies_close() -> None:
    """Each pool checks only its own idle connections when a request starts or ends (a poll(2) each): 16 streams at
    once take two connections in each of 8 pools, and a body closed unread, or a request refused, frees its place."""
    app = FastAPI()
    release = threading.Event()  # set by the client's thread, waited for on the server's
    opened = 0

    @app.get("/stream")
    async def stream() -> StreamingResponse:
        nonlocal opened
        opened += 1

        async def body() -> AsyncIterator[str]:
            yield "first "
            await asyncio.to_thread(release.wait, 30)
            yield "last"

        return StreamingResponse(body(), media_type="text/plain")

    server = ServerThread(app).start()
    try:

        async def scenario() -> tuple[list[int], list[int], list[int], list[str]]:
            transport = ShardedTransport()
            async with httpx.AsyncClient(base_url=server.url, transport=transport) as client:
                responses = [await client.send(client.build_request("GET", "/stream"), stream=True) for _ in range(16)]
                while_open = list(transport.in_flight)
                await responses[0].aclose()  # abandoned after its headers
                after_one = list(transport.in_flight)
                release.set()
                texts = [(await r.aread()).decode() for r in responses[1:]]
                for r in responses[1:]:
                    await r.aclose()
                with_refused = list(transport.in_flight)
                with pytest.raises(httpx.ConnectError):
                    await client.get("http://127.0.0.1:9/refused")
                return while_open, after_one, with_refused + list(transport.in_flight), texts

        while_open, after_one, after_all, texts = asyncio.run(scenario())
    finally:
        server.stop()
    assert POOL_SHARDS == 8
    assert while_open == [2] * 8
    assert sum(after_one) == 15
    assert after_all == [0] * 16
    assert texts == ["first last"] * 15
    assert opened == 16
