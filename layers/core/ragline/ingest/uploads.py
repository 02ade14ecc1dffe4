"""Upload handling shared by every upload route.

One size limit, cancellation when the client goes away, the accept step off the event loop, and the reply that says
where a document is.

Routes stay small: they parse their body, hand the ingestion call to :class:`UploadFlow` (the whole sequence after
it), turn its refusals into replies, and reply with :func:`document_status_code`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

from ragline.ingest.priority import lower_this_thread
from ragline.ingest.service import IngestCancelled, IngestResult, IngestService
from ragline.store.base import KnowledgeStore
from ragline.store.models import Document, DocumentStatus, KnowledgeBase

T = TypeVar("T")

# How often a running accept step checks whether its client is still there.
_DISCONNECT_POLL_S = 0.1


class UploadTooLarge(Exception):
    """An upload passed the size limit; ``limit`` is that limit in bytes."""

    def __init__(self, limit: int) -> None:
        """The refusal for an upload over ``limit`` bytes."""
        super().__init__(f"the upload exceeds {limit} bytes")
        self.limit = limit


class ClientGone(Exception):
    """The client disconnected before the document was accepted; nothing was stored."""


class _Request(Protocol):
    @property
    def headers(self) -> Any: ...

    def stream(self) -> Any: ...

    async def is_disconnected(self) -> bool: ...


def declared_too_large(request: _Request, limit: int) -> bool:
    """A Content-Length over the limit: refused before a byte of the body is read."""
    length = request.headers.get("content-length")
    return bool(length and length.isdigit() and int(length) > limit)


async def read_body(request: _Request, limit: int) -> bytes:
    """The whole body, refused as soon as it passes ``limit`` bytes.

    The whole body, refused (:class:`UploadTooLarge`) as soon as it passes ``limit`` bytes, whatever the Content-Length
    said (chunked bodies have none).
    """
    if declared_too_large(request, limit):
        raise UploadTooLarge(limit)
    parts: list[bytes] = []
    size = 0
    async for part in request.stream():
        size += len(part)
        if size > limit:
            raise UploadTooLarge(limit)
        parts.append(part)
    return b"".join(parts)


def accept_executor(nice: int, threads: int = 4) -> concurrent.futures.ThreadPoolExecutor:
    """Threads for accept steps, ``nice`` steps below the process's (:mod:`ragline.ingest.priority`)."""
    return concurrent.futures.ThreadPoolExecutor(
        threads, thread_name_prefix="ragline-accept", initializer=functools.partial(lower_this_thread, nice)
    )


async def _off_loop(
    work: Callable[[threading.Event], T], cancel: threading.Event, executor: concurrent.futures.Executor
) -> T:
    """``work(cancel)`` on ``executor``, with the caller's context."""
    call = functools.partial(contextvars.copy_context().run, work, cancel)
    return await asyncio.get_running_loop().run_in_executor(executor, call)


async def accept_off_loop(
    request: _Request, work: Callable[[threading.Event], T], executor: concurrent.futures.Executor
) -> T:
    """Run ``work(cancel)`` in a worker thread, cancelling it when the client disconnects.

    Runs ``work(cancel)`` on ``executor``, so the API keeps answering during a large upload, and sets ``cancel`` when
    the client disconnects (the ingestion call checks it between steps and stores nothing: :class:`ClientGone`).
    """
    cancel = threading.Event()
    task = asyncio.ensure_future(_off_loop(work, cancel, executor))
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=_DISCONNECT_POLL_S)
            if done:
                return task.result()
            if await request.is_disconnected():
                cancel.set()
                with contextlib.suppress(IngestCancelled):
                    await task
                raise ClientGone()
    except asyncio.CancelledError:
        cancel.set()  # the server is stopping: the thread stops at its next check
        raise


def document_status_code(result: IngestResult) -> int:
    """200 for a duplicate, 202 while its vectors are computed (``status: pending``), 201 once indexed."""
    if result.duplicate:
        return 200
    return 202 if result.document.status == DocumentStatus.PENDING else 201


class UploadFlow:
    """An upload from its accept step to its place in the background: the one sequence every upload route runs.

    The accept step runs off the event loop (cancelled when its client goes away: :class:`ClientGone`), then the
    document's vectors are scheduled; with ``wait`` their end is awaited (a bounded wait that holds no thread: the
    reply says ``pending`` past it); then its graph and enrichment are scheduled. The ingestion's refusals
    (:class:`~ragline.ingest.service.TooManyChunks`, :class:`~ragline.files.reading.UnsupportedFile`) pass through
    for the route to answer.
    """

    def __init__(
        self,
        ingest: IngestService,
        knowledge: KnowledgeStore,
        settled: Callable[[Sequence[Document]], Awaitable[bool]],
        after_accept: Callable[[KnowledgeBase, Document], Document],
        executor: concurrent.futures.Executor,
    ) -> None:
        """The flow over ``ingest`` and ``knowledge``; ``settled`` waits for indexing, ``after_accept`` schedules the rest.

        The accept step runs on ``executor`` (:func:`accept_executor`).
        """
        self._executor = executor
        self._ingest = ingest
        self._knowledge = knowledge
        self._settled = settled
        self._after_accept = after_accept

    async def accept(
        self,
        kb: KnowledgeBase,
        work: Callable[[threading.Event], IngestResult],
        *,
        request: _Request | None = None,
        wait: bool = False,
    ) -> IngestResult:
        """Run ``work(cancel)``, the accept step, then the rest of the sequence; the result as the reply shows it."""
        if request is not None:
            result = await accept_off_loop(request, work, self._executor)
        else:
            result = await _off_loop(work, threading.Event(), self._executor)
        await asyncio.to_thread(self._ingest.schedule, [result])
        if wait and await self._settled([result.document]):
            stored = await asyncio.to_thread(self._knowledge.document, kb.tenant_id, result.document.id)
            result.document = stored or result.document
        if not result.duplicate:
            # A model call per chunk: the document is searchable now, its graph and enrichment follow.
            result.document = await asyncio.to_thread(self._after_accept, kb, result.document)
        return result
