"""The embedded runtime's indexing worker: one thread computes the vectors of accepted documents.

Uploads return once a document is stored and keyword-searchable; this thread then runs
:meth:`IngestService.index_documents` on what was scheduled, several documents per call so short ones
share batches. On start it picks up documents left ``pending`` by a stopped process (or by
``ragline ingest --no-wait``), and while idle it looks again for pending work nobody has reported progress
on for a while. Stopping sets a flag the work checks between batches: the thread ends within one batch,
and unfinished documents stay ``pending`` with their progress, resumed by the next start. Shutdown waits for
that batch no longer than its grace period, counted from SIGTERM.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from ragline.ingest.service import IngestCancelled, IngestService
from ragline.store.base import KnowledgeStore
from ragline.store.models import Document

logger = logging.getLogger(__name__)

# Documents handed to one indexing call (their chunks share embedding batches).
_DOCUMENTS_PER_CALL = 64


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds")


class BackgroundIndexer:
    """A daemon thread that indexes scheduled and abandoned pending documents."""

    def __init__(
        self,
        ingest: IngestService,
        knowledge: KnowledgeStore,
        *,
        idle_scan_s: float = 30.0,
        abandoned_after_s: float = 120.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """An indexer of ``ingest``'s pending documents; a pending document untouched for ``abandoned_after_s`` is taken up again."""
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

    # Control ----------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the daemon thread; a started indexer is left as it is."""
        if self._thread is not None:
            return
        self._stopping.clear()
        self._stop_requested_at = None
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
        if thread is None:
            return True
        thread.join(max(0.0, self._stop_requested_at + timeout - self._clock()))
        return not thread.is_alive()

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

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Blocks until nothing is queued or running (tests, ``--wait``); True when idle."""
        with self._condition:
            return self._condition.wait_for(lambda: not self._queue and not self._busy, timeout)

    # Work -------------------------------------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stopping.is_set():
            batch = self._next_batch()
            if not batch:
                continue
            try:
                self._ingest.index_documents(batch, cancel=self._stopping)
            except IngestCancelled:
                logger.info("indexing stopped; pending documents resume at the next start")
            except Exception:  # a failure is recorded on the documents; the worker goes on
                logger.exception("indexing batch failed")
            finally:
                with self._condition:
                    self._busy = False
                    self._running.clear()
                    self._condition.notify_all()

    def _next_batch(self) -> list[Document]:
        with self._condition:
            if not self._queue:
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
            before = _iso(datetime.now(UTC) - timedelta(seconds=self._abandoned_after_s))
            return self._knowledge.pending_documents(limit=_DOCUMENTS_PER_CALL, updated_before=before)
        except Exception:
            logger.exception("looking for pending documents failed")
            return []
