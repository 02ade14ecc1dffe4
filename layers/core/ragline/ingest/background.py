"""The embedded runtime's background work: the vectors of accepted documents, then their graph and enrichment.

None of it runs on the server's event loop or on its default thread pool (the loop's pool serves requests:
six uploads each parking a pool thread to wait for their vectors once left no thread for a search).

Uploads return once a document is stored and keyword-searchable; this thread then runs
:meth:`IngestService.index_documents` on what was scheduled, several documents per call so short ones
share batches. On start it picks up documents left ``pending`` by a stopped process (or by
``ragline ingest --no-wait``), and while idle it looks again for pending work nobody has reported progress
on for a while. Stopping sets a flag the work checks between batches: the thread ends within one batch,
and unfinished documents stay ``pending`` with their progress, resumed by the next start. Shutdown waits for
that batch no longer than its grace period, counted from SIGTERM.

A document's vectors are computed a slice at a time (``slice_chunks``), the unfinished document going back to
the end of the queue: a 27,000-chunk document no longer holds a 91-byte one for fifteen minutes.

What follows the vectors (a generative model's enrichment, the knowledge graph: model calls per passage) runs on
an :class:`AsyncWorker`, a thread with its own event loop and its own small thread pool, told by
:meth:`BackgroundIndexer.when_settled` when a document's vectors are done: nothing waits for them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from ragline.ingest.priority import lower_this_thread
from ragline.ingest.service import IngestCancelled, IngestService
from ragline.store.base import KnowledgeStore
from ragline.store.ids import utc_ago
from ragline.store.models import Document, DocumentStatus

logger = logging.getLogger(__name__)

# Documents handed to one indexing call (their chunks share embedding batches).
_DOCUMENTS_PER_CALL = 64
# Chunks one indexing call embeds at most before the queue's other documents get their turn.
DEFAULT_SLICE_CHUNKS = 512


class BackgroundIndexer:
    """A daemon thread that indexes scheduled and abandoned pending documents."""

    def __init__(
        self,
        ingest: IngestService,
        knowledge: KnowledgeStore,
        *,
        idle_scan_s: float = 30.0,
        abandoned_after_s: float = 120.0,
        slice_chunks: int = DEFAULT_SLICE_CHUNKS,
        nice: int = 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """An indexer of ``ingest``'s pending documents; a pending document untouched for ``abandoned_after_s`` is taken up again.

        One call embeds at most ``slice_chunks`` chunks; a document with more left goes back to the end of the queue.
        The thread, and the threads it starts (the embedding model's), run ``nice`` steps below the process
        (:mod:`ragline.ingest.priority`).
        """
        self._nice = nice
        self._ingest = ingest
        self._knowledge = knowledge
        self._idle_scan_s = idle_scan_s
        self._abandoned_after_s = abandoned_after_s
        self._queue: OrderedDict[str, Document] = OrderedDict()
        self._condition = threading.Condition()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._busy = False
        self._running: set[str] = set()
        self._scan_all = True  # the first pass takes every pending document: the process that had them is gone
        self._clock = clock
        self._stop_requested_at: float | None = None
        self._slice_chunks = max(1, slice_chunks)
        # (documents, callback): called once none of the documents is queued or being indexed.
        self._watchers: list[tuple[frozenset[str], Callable[[bool], None]]] = []

    # Control ----------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the daemon thread; a started indexer is left as it is."""
        if self._thread is not None:
            return
        self._stopping.clear()
        self._stop_requested_at = None
        with self._condition:
            # Busy until the first pass has looked for left-over documents: idle before it would be a guess.
            self._busy = self._busy or self._scan_all
        self._thread = threading.Thread(target=self._run, name="ragline-indexer", daemon=True)
        self._thread.start()

    def request_stop(self) -> None:
        """Asks the work to stop after its current batch, without waiting (:meth:`stop` waits)."""
        if self._stop_requested_at is None:
            self._stop_requested_at = self._clock()
        self._stopping.set()
        with self._condition:
            self._condition.notify_all()

    @property
    def stopping(self) -> bool:
        """True once a stop was asked for."""
        return self._stopping.is_set()

    def stop(self, timeout: float = 10.0) -> bool:
        """Ask the work to stop after its current batch and wait for it; True once stopped.

        Asks the work to stop after its current batch and waits until ``timeout`` seconds after the stop was first asked
        for (here or by :meth:`request_stop`); True once stopped. A batch still running then is left to the daemon
        thread: its documents stay ``pending`` at their last recorded progress.
        """
        self.request_stop()
        assert self._stop_requested_at is not None
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(max(0.0, self._stop_requested_at + timeout - self._clock()))
        with self._condition:
            watchers, self._watchers = self._watchers, []
        for _, callback in watchers:
            _call(callback, False)  # their documents stay pending: the next start takes them up
        return thread is None or not thread.is_alive()

    def submit(self, documents: Sequence[Document]) -> None:
        """Queue ``documents`` for their vectors (a document queued twice is indexed once) and wake the thread."""
        with self._condition:
            for document in documents:
                self._queue[document.id] = document
            self._condition.notify_all()

    @property
    def idle(self) -> bool:
        """True when nothing is queued or being indexed."""
        with self._condition:
            return not self._queue and not self._busy

    def wait_for(self, document_ids: Sequence[str], timeout: float | None = None) -> bool:
        """Blocks until none of ``document_ids`` is queued or being indexed.

        True when so (the documents' statuses then say how it went).
        """
        wanted = set(document_ids)

        def settled() -> bool:
            return not (wanted & self._running) and not (wanted & self._queue.keys())

        with self._condition:
            return self._condition.wait_for(settled, timeout)

    def when_settled(self, document_ids: Sequence[str], callback: Callable[[bool], None]) -> None:
        """Call ``callback(True)`` once none of ``document_ids`` is queued or being indexed (at once when so).

        The call comes from the indexing thread and must be quick (hand the work on); ``callback(False)`` when the
        indexer stops first. The documents' statuses say how their indexing went.
        """
        wanted = frozenset(document_ids)
        with self._condition:
            if wanted & (self._running | self._queue.keys()):
                self._watchers.append((wanted, callback))
                return
        _call(callback, True)

    def _settle_watchers(self) -> None:
        """Calls the callbacks whose documents are all settled (the caller holds the condition)."""
        busy = self._running | self._queue.keys()
        settled = [w for w in self._watchers if not (w[0] & busy)]
        if settled:
            self._watchers = [w for w in self._watchers if w[0] & busy]
            for _, callback in settled:
                _call(callback, True)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Blocks until nothing is queued or running (tests, ``--wait``); True when idle."""
        with self._condition:
            return self._condition.wait_for(lambda: not self._queue and not self._busy, timeout)

    # Work -------------------------------------------------------------------------------------------------
    def _run(self) -> None:
        lower_this_thread(self._nice)
        while not self._stopping.is_set():
            batch = self._next_batch()
            if not batch:
                continue
            unfinished: list[Document] = []
            try:
                indexed = self._ingest.index_documents(batch, cancel=self._stopping, max_chunks=self._slice_chunks)
                unfinished = [d for d in indexed if d.status == DocumentStatus.PENDING]
            except IngestCancelled:
                logger.info("indexing stopped; pending documents resume at the next start")
            except Exception:  # a failure is recorded on the documents; the worker goes on
                logger.exception("indexing batch failed")
            finally:
                with self._condition:
                    for document in unfinished:  # their next slice after everything queued meanwhile
                        self._queue.setdefault(document.id, document)
                    self._busy = False
                    self._running.clear()
                    self._settle_watchers()
                    self._condition.notify_all()

    def _next_batch(self) -> list[Document]:
        with self._condition:
            # Looked at under the condition request_stop notifies with: a stop asked for since the loop's own look
            # would otherwise be a lost wake-up, and the thread would sleep on through its idle scan (30 s).
            if not self._queue and not self._stopping.is_set():
                self._condition.wait(0 if self._scan_all else self._idle_scan_s)
            if self._stopping.is_set():
                return []
            if not self._queue:
                found = self._pending()
                for document in found:
                    self._queue.setdefault(document.id, document)
            batch: list[Document] = []
            while self._queue and len(batch) < _DOCUMENTS_PER_CALL:
                _, document = self._queue.popitem(last=False)
                batch.append(document)
            self._busy = bool(batch)
            self._running = {d.id for d in batch}
            if not batch:
                self._condition.notify_all()
            return batch

    def _pending(self) -> list[Document]:
        """Pending documents nobody works on: all of them at start, then those without recent progress."""
        try:
            if self._scan_all:
                found = self._knowledge.pending_documents(limit=_DOCUMENTS_PER_CALL)
                # A full page: there may be more left by the stopped process; look again right after.
                self._scan_all = len(found) == _DOCUMENTS_PER_CALL
                return found
            before = utc_ago(self._abandoned_after_s)
            return self._knowledge.pending_documents(limit=_DOCUMENTS_PER_CALL, updated_before=before)
        except Exception:
            logger.exception("looking for pending documents failed")
            return []


def _call(callback: Callable[[bool], None], settled: bool) -> None:
    try:
        callback(settled)
    except Exception:  # one watcher's failure is not the indexer's
        logger.exception("a callback on indexed documents failed")


class AsyncWorker:
    """A daemon thread running an event loop of its own, for background coroutines (enrichment, graph).

    Their blocking calls (``asyncio.to_thread``: stores, embeddings) go to this loop's own pool of ``threads``, never
    to the server's; at most ``concurrency`` of the submitted coroutines run at once, the others wait their turn.
    """

    def __init__(
        self,
        name: str,
        *,
        concurrency: int = 1,
        threads: int = 2,
        nice: int = 0,
        on_stop: Callable[[], Coroutine[Any, Any, Any]] | None = None,
    ) -> None:
        """A worker named ``name`` (its thread's and its pool's name); started by the first :meth:`submit`.

        Its thread and its pool run ``nice`` steps below the process (:mod:`ragline.ingest.priority`). ``on_stop``
        runs on the loop as it stops, once the work has ended: it closes what the work bound to the loop (the models'
        connection pools).
        """
        self._name = name
        self._nice = nice
        self._on_stop = on_stop
        self._concurrency = max(1, concurrency)
        self._threads = max(1, threads)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._pending: set[concurrent.futures.Future[Any]] = set()

    def _running_loop(self) -> tuple[asyncio.AbstractEventLoop, asyncio.Semaphore]:
        """This worker's loop and its turn-taking, started on first use (or again after a stop); under ``self._lock``."""
        if self._loop is None or self._semaphore is None:
            loop = asyncio.new_event_loop()
            loop.set_default_executor(
                concurrent.futures.ThreadPoolExecutor(self._threads, thread_name_prefix=f"{self._name}-io")
            )
            ready = threading.Event()

            def run() -> None:
                lower_this_thread(self._nice)  # its pool's threads start from this one: they inherit it
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                try:
                    loop.run_forever()  # until stop()
                    loop.run_until_complete(self._wind_down())
                finally:
                    loop.close()  # shuts its pool down too; here, as a stop may have given up waiting

            self._thread = threading.Thread(target=run, name=self._name, daemon=True)
            self._thread.start()
            ready.wait()
            self._loop, self._semaphore = loop, asyncio.Semaphore(self._concurrency)  # one per loop: bound to it
        return self._loop, self._semaphore

    async def _wind_down(self) -> None:
        """On the loop as it stops: its tasks cancelled together and awaited, then ``on_stop``.

        Together, so none waiting its turn starts in the slot another's cancellation frees; awaited, so each one ends
        (its ``finally`` runs, whoever waits on it is told) rather than being dropped pending when the loop closes.
        """
        tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._on_stop is not None:
            try:
                await self._on_stop()
            except Exception:
                logger.exception("closing the background loop's resources failed", extra={"worker": self._name})

    def submit(self, work: Callable[[], Coroutine[Any, Any, Any]]) -> concurrent.futures.Future[Any]:
        """Run the coroutine ``work()`` makes on this worker's loop; the future holds its outcome."""
        # Under the lock, so a stop sees this work: its task is made on the loop before the loop stops.
        with self._lock:
            loop, semaphore = self._running_loop()

            async def limited() -> Any:
                async with semaphore:
                    return await work()

            future = asyncio.run_coroutine_threadsafe(limited(), loop)
            self._pending.add(future)
        future.add_done_callback(self._done)
        return future

    def _done(self, future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._pending.discard(future)
        if not future.cancelled() and future.exception() is not None:
            logger.error("background work failed", exc_info=future.exception(), extra={"worker": self._name})

    @property
    def idle(self) -> bool:
        """True when nothing submitted is waiting or running."""
        with self._lock:
            return not self._pending

    def stop(self, timeout: float = 5.0) -> bool:
        """Cancel what is running or waiting, then stop the loop; True once its thread ended within ``timeout``.

        The loop's thread winds its work down (:meth:`_wind_down`) and closes the loop and its pool.
        """
        with self._lock:
            loop, thread, self._loop, self._thread, self._semaphore = self._loop, self._thread, None, None, None
            pending = list(self._pending)
        if loop is None or thread is None:
            return True
        with contextlib.suppress(RuntimeError):  # the loop already closed
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        if thread.is_alive():  # a task ignores its cancellation: whoever waits on one is told all the same
            for future in pending:
                future.cancel()
            return False
        return True
