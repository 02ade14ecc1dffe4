"""The embedded server: the HTTP API with turns running in this process.

At start, before it listens, the server ends every turn whose runner is gone (a crash, kill -9) and then
looks again every ``recovery.sweep_interval_s`` (a ``ragline ask --local`` process may die too). On
SIGTERM/SIGINT it stops accepting connections and turns, lets running turns finish for
``recovery.shutdown_grace_s`` (readers stay connected and receive their turn's last event), ends the rest
with ``error`` "interrupted", then closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Protocol

import uvicorn
from fastapi import FastAPI

from ragline.container import Container
from ragline.runtime.embedded import LocalRunner
from ragline.runtime.leases import SqliteTurnLeases
from ragline.runtime.recovery import TurnRecovery
from ragline.server.app import create_app

logger = logging.getLogger(__name__)

# A reader's response outlives the grace period by this much on shutdown, so it gets the final ``error``.
_READER_MARGIN_S = 5.0
# How long an idle keep-alive connection stays open. uvicorn's 5 s equals httpx's own expiry (and is below Go's 90 s
# and browsers' minutes), so a client reused a connection at the moment the server closed it: the request was
# reset (a clean clone's CI run under load: "Connection reset by peer" on a POST). Longer than the clients': the
# client closes first.
KEEP_ALIVE_S = 120


def shutdown_grace_s(container: Container) -> float:
    """``RAGLINE_SHUTDOWN_GRACE_S``, else config.yaml's ``recovery.shutdown_grace_s``."""
    configured = container.settings.shutdown_grace_s
    return container.config.recovery.shutdown_grace_s if configured is None else configured


def build_runner(container: Container) -> LocalRunner:
    """A runner whose turns are leased in the embedded database, so any process can tell they are alive."""
    # The leases live beside the event logs (events.db): a heartbeat never waits for a knowledge-store write.
    db = container.log_db or container.db
    if db is None:
        raise ValueError("the embedded runner needs the embedded database")
    recovery = container.config.recovery
    leases = SqliteTurnLeases(db, ttl_s=recovery.runner_ttl_s, unclaimed_grace_s=recovery.unclaimed_grace_s)
    return LocalRunner(
        container.orchestrator,
        container.stream,
        container.turns,
        container.config.stream,
        leases=leases,
        heartbeat_interval_s=recovery.heartbeat_interval_s,
    )


def build_recovery(container: Container, runner: LocalRunner) -> TurnRecovery:
    """Turn recovery for the embedded server, reading runner liveness from ``runner``'s leases."""
    if runner.leases is None:
        raise ValueError("recovery needs a runner with leases")
    return TurnRecovery(container.sessions, container.stream, container.turns, runner.leases)


# How often the server looks for kept files that no document owns (an upload killed mid-way); also at start.
_ORPHANS_SWEEP_INTERVAL_S = 600.0


async def _sweep_every(recovery: TurnRecovery, interval_s: float) -> None:
    while True:
        await asyncio.sleep(interval_s)
        try:
            await recovery.sweep()
        except Exception:
            logger.warning("recovery sweep failed", exc_info=True)


async def _sweep_orphans_every(container: Container, interval_s: float) -> None:
    while True:
        try:
            await asyncio.to_thread(container.sweep_orphaned_originals)
        except Exception:
            logger.warning("sweeping orphaned originals failed", exc_info=True)
        await asyncio.sleep(interval_s)


def build_embedded_app(container: Container) -> FastAPI:
    """The embedded server's app: the API, a local runner, recovery at start and a drain on shutdown."""
    runner = build_runner(container)
    recovery = build_recovery(container, runner)
    # On shutdown a reader's response may outlive the grace period, so it receives its turn's last event.
    container.config.stream.shutdown_drain_s = shutdown_grace_s(container) + _READER_MARGIN_S
    # Vectors of uploaded documents are computed by the background indexing thread, stopped at shutdown
    # after its current batch (unfinished documents stay pending and resume at the next start).
    container.start_indexing()

    async def shutdown() -> None:
        await runner.shutdown()
        # Told to stop when the drain began: waits for what is left of the grace period since then.
        await asyncio.to_thread(container.stop_indexing, shutdown_grace_s(container))
        await asyncio.to_thread(container.stop_background)

    app = create_app(container, runner, on_shutdown=shutdown)
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[Any]:
        # Before the first request: turns a crash left open end now, and their readers close.
        await recovery.sweep(cause="restart")
        sweepers = [
            asyncio.create_task(_sweep_every(recovery, container.config.recovery.sweep_interval_s)),
            asyncio.create_task(_sweep_orphans_every(container, _ORPHANS_SWEEP_INTERVAL_S)),
        ]
        try:
            async with inner(app) as state:
                yield state
        finally:
            for sweeper in sweepers:
                sweeper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await sweeper

    app.router.lifespan_context = lifespan
    app.state.runner = runner
    app.state.recovery = recovery
    return app


class DrainingServer(uvicorn.Server):
    """uvicorn that drains the running turns on SIGTERM/SIGINT before it closes connections.

    uvicorn that, on SIGTERM/SIGINT, closes its listening sockets and runs ``drain`` before it waits for the open
    connections (readers of the draining turns among them) and shuts the app down.

    A second SIGINT while draining (uvicorn's force exit) cuts the grace period short.
    """

    def __init__(self, config: uvicorn.Config, drain: Callable[[Callable[[], bool]], Awaitable[Any]]) -> None:
        """A server running ``drain`` on shutdown, given a function that says when to hurry."""
        super().__init__(config)
        self._drain = drain

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Settle the heap, then start as uvicorn does (the app's start-up, then listening).

        What was built before the start (modules, configuration, stores, clients) lives as long as the process. One
        collection clears the garbage building it left, and ``gc.freeze`` moves the rest out of the collector's way:
        each later full collection had walked ~200,000 such objects, holding the loop, and every stream's frames,
        for 160-400 ms every 5-10 s under mixed load; after the freeze, 13-72 ms. Frozen objects are still freed when
        their last reference goes; only a cycle among them is never collected.
        """
        gc.collect()
        gc.freeze()
        await super().startup(sockets)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Stop listening, drain the running turns, then shut down as uvicorn does."""
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        if not self.force_exit:
            try:
                await self._drain(lambda: self.force_exit)
            except Exception:
                logger.exception("draining the running turns failed")
        await super().shutdown(sockets)


class _Drains(Protocol):
    async def drain(self, grace_s: float, hurry: Callable[[], bool] | None = None) -> Any: ...


def shutdown_drain(
    container: Container, runner: _Drains, grace_s: float
) -> Callable[[Callable[[], bool]], Awaitable[None]]:
    """What SIGTERM/SIGINT runs before the connections close.

    The background indexing is told to stop first (its batch under way ends while the turns drain, so both fit in the
    grace period), then the running turns get ``grace_s`` to finish.
    """

    async def drain(hurry: Callable[[], bool]) -> None:
        container.request_stop_indexing()
        await runner.drain(grace_s, hurry=hurry)

    return drain


def serve_embedded(container: Container, host: str, port: int, *, sockets: list[socket.socket] | None = None) -> None:
    """``ragline serve``: the embedded app under :class:`DrainingServer` (blocks until shut down)."""
    app = build_embedded_app(container)
    runner: LocalRunner = app.state.runner
    drain = shutdown_drain(container, runner, shutdown_grace_s(container))

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        # uvloop and httptools, installed with ragline (uvicorn's "auto" falls back to asyncio and h11 without them).
        loop="auto",
        http="auto",
        # Once the turns have ended, readers close on their own; anything left is cut after this.
        timeout_graceful_shutdown=int(_READER_MARGIN_S),
        timeout_keep_alive=KEEP_ALIVE_S,
    )
    DrainingServer(config, drain).run(sockets=sockets)
