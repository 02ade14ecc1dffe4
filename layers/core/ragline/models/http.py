"""What the models' HTTP clients share: one async client per event loop, and the OpenAI SDK's retry policy.

The chat model and the remote reranker call from event loops (the embedded server's, and a new one per warm
Lambda invocation); the embedder calls from indexing threads. All retry alike.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable

import httpx

__all__ = ["CONNECTION_LIMITS", "MAX_RETRIES", "LoopClients", "ShardedTransport", "retry_delay", "retryable"]

# The OpenAI SDK's retry policy: two retries on these statuses and on a failed connection, 0.5 s doubling to 8 s
# with jitter, or the server's Retry-After up to a minute.
_RETRY_STATUSES = frozenset({408, 409, 429}) | frozenset(range(500, 600))
MAX_RETRIES = 2
_MAX_RETRY_AFTER_S = 60.0
# The OpenAI SDK's pool: as many idle connections kept as answers stream at once on a busy server (httpx keeps 20:
# with 50 answers streaming, 30 connections were closed after each answer and made anew for the next).
CONNECTION_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
# httpcore's pool checks every idle connection's socket (a poll(2) each) whenever a request starts or ends: with 50
# answers streaming and as many connections kept, that was 8% of the serving loop's time under bench/mixed_load.py.
# Requests are spread over this many pools instead, each checking only its own connections.
POOL_SHARDS = 8


def retryable(status: int) -> bool:
    """A reply with this status may succeed when asked again (timeouts, conflicts, rate limits, server errors)."""
    return status in _RETRY_STATUSES


def retry_delay(attempt: int, response: httpx.Response | None) -> float:
    """Seconds before retry ``attempt`` (0-based): the server's ``Retry-After`` when sane, else the backoff."""
    if response is not None:
        for header, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
            try:
                seconds = float(response.headers.get(header, "")) * scale
            except ValueError:
                continue
            if 0 < seconds <= _MAX_RETRY_AFTER_S:
                return seconds
    return min(0.5 * 2**attempt, 8.0) * (1 - 0.25 * random.random())


class _Counted(httpx.AsyncByteStream):
    """A response body that calls ``done`` once when it is closed (read to its end, or abandoned)."""

    def __init__(self, stream: httpx.AsyncByteStream, done: Callable[[], None]) -> None:
        self._stream = stream
        self._done: Callable[[], None] | None = done

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for part in self._stream:
            yield part

    async def aclose(self) -> None:
        done, self._done = self._done, None
        try:
            await self._stream.aclose()
        finally:
            if done is not None:
                done()


class ShardedTransport(httpx.AsyncBaseTransport):
    """Connection pools side by side: each request goes to the one with the fewest requests in flight.

    Each pool keeps ``limits`` of its own. The fewest in flight (the first such pool on a tie) spreads concurrent
    requests evenly, and gives a round of requests the same pools, so the connections the last round left idle.
    """

    def __init__(self, shards: int = POOL_SHARDS, limits: httpx.Limits = CONNECTION_LIMITS) -> None:
        """``shards`` pools, each with ``limits``."""
        self._pools = [httpx.AsyncHTTPTransport(limits=limits) for _ in range(shards)]
        self.in_flight = [0] * shards

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through the least busy pool; it counts as in flight until its body is closed."""
        index = self.in_flight.index(min(self.in_flight))
        self.in_flight[index] += 1

        def done() -> None:
            self.in_flight[index] -= 1

        try:
            response = await self._pools[index].handle_async_request(request)
        except BaseException:
            done()
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _Counted(response.stream, done)
        return response

    async def aclose(self) -> None:
        """Close every pool's connections."""
        for pool in self._pools:
            await pool.aclose()


class LoopClients:
    """One ``httpx.AsyncClient`` per event loop, made with the same headers, timeout and transport.

    A client's connection pool is bound to the loop that created it, and a warm Lambda runs each invocation on a
    new loop: a client is made for each loop that asks, and those of closed loops are dropped.
    """

    def __init__(
        self, headers: dict[str, str], timeout: float, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        """Clients sending ``headers``, with a ``timeout`` in seconds (``transport``: a test's, else pools side by side)."""
        self._headers = headers
        self._timeout = timeout
        self._transport = transport
        self._clients: dict[int, tuple[asyncio.AbstractEventLoop, httpx.AsyncClient]] = {}

    def get(self) -> httpx.AsyncClient:
        """The running loop's client (made on its first call)."""
        loop = asyncio.get_running_loop()
        entry = self._clients.get(id(loop))
        if entry is None or entry[0] is not loop:
            self._clients = {k: v for k, v in self._clients.items() if not v[0].is_closed()}
            client = httpx.AsyncClient(
                headers=self._headers,
                timeout=httpx.Timeout(self._timeout),
                transport=self._transport if self._transport is not None else ShardedTransport(),
            )
            entry = (loop, client)
            self._clients[id(loop)] = entry
        return entry[1]

    async def release(self) -> None:
        """Close the running loop's client (a serverless step's loop ends with its invocation)."""
        entry = self._clients.pop(id(asyncio.get_running_loop()), None)
        if entry is not None:
            await entry[1].aclose()
