"""The models' shared HTTP pieces: a client per event loop, and which replies are asked again, after how long."""

from __future__ import annotations

import asyncio

import httpx

from ragline.models.http import LoopClients, retry_delay, retryable


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
