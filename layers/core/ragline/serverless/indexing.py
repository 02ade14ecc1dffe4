"""Documents indexed off the request path on AWS: an asynchronous function computes the vectors (and the graph).

The HTTP function (ingest_turn) accepts an upload — chunks stored, the document ``pending`` — and replies 202;
:class:`LambdaIndexScheduler`, the ingestion service's scheduler there, hands the document to the indexing
function with one asynchronous invocation (Lambda queues it and retries it twice on error). The indexing
function (:class:`DocumentWorker`) runs :meth:`IngestService.index_document`, which is idempotent and resumes
from the progress already recorded, so:

- a **retried or duplicated delivery** finds the document indexed (nothing to do) or resumes it; two
  deliveries at once do not both work on it: a lease per document (the state table) lets one through;
- a document too large for one invocation stops between batches before the function's deadline and the
  function invokes itself again for the rest (a **continuation**): no time limit on a document's size;
- an invocation that **times out** or crashes leaves its lease to expire; the retry takes it over and resumes;
- a document that makes **no progress** in ``MAX_ATTEMPTS`` attempts ends ``failed`` with the last reason
  (and its partial vectors removed: a failed document is never half-searchable); one whose every delivery
  was lost is found by the scheduled sweep (``pending`` and not updated for a while) and scheduled again.

After the vectors, the same invocation extracts the document's graph when its knowledge base asks for it, and
enriches it (generated questions, summary, knowledge-base description) when a generative chat model is
configured: a Lambda function is frozen once it has replied, so nothing may run "after the reply" in the HTTP
function.

Files beyond the HTTP API's payload limit go to S3 through a presigned URL (:mod:`ragline.serverless.uploads`);
the indexing function then reads, extracts and accepts them before indexing (``kind: "upload"``).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from botocore.exceptions import ClientError
from pydantic import BaseModel, Field

from ragline.ingest.service import IngestCancelled
from ragline.store.models import Document, DocumentStatus

if TYPE_CHECKING:
    from ragline.serverless.aws import AwsRuntime
    from ragline.serverless.uploads import UploadProcessor

logger = logging.getLogger(__name__)

# Attempts without progress before a document ends failed (Lambda makes 3 of one delivery).
MAX_ATTEMPTS = 3
# An invocation stops taking batches this long before its deadline (a batch of 128 chunks takes seconds).
DEADLINE_MARGIN_S = 60.0
# Document ids per asynchronous invocation (its payload is limited to 256 KB).
_IDS_PER_INVOCATION = 500
_LEASE_ITEM = "lease"


class IndexRequest(BaseModel):
    """The indexing function's event: documents to index, or an upload in S3 to accept and index."""

    ragline: Literal["index"] = "index"
    kind: Literal["documents", "upload"] = "documents"
    tenant_id: str = Field(min_length=1)
    document_ids: list[str] = Field(default_factory=list)
    upload_id: str = ""

    @staticmethod
    def matches(event: Any) -> bool:
        """True for an event meant for the indexing function."""
        return isinstance(event, dict) and event.get("ragline") == "index"


class LambdaIndexScheduler:
    """The ingestion service's scheduler on AWS.

    Accepted documents go to the indexing function, one asynchronous invocation per tenant (and per 500 documents).
    """

    def __init__(self, lambda_client: Any, function_name: str) -> None:
        """A scheduler invoking ``function_name`` through ``lambda_client``."""
        self._lambda = lambda_client
        self._function = function_name

    def __call__(self, documents: Sequence[Document]) -> None:
        """Send the documents' ids to the indexing function, one invocation per tenant and 500 documents."""
        by_tenant: dict[str, list[str]] = {}
        for document in documents:
            by_tenant.setdefault(document.tenant_id, []).append(document.id)
        for tenant_id, ids in by_tenant.items():
            for start in range(0, len(ids), _IDS_PER_INVOCATION):
                self.send(IndexRequest(tenant_id=tenant_id, document_ids=ids[start : start + _IDS_PER_INVOCATION]))

    def send(self, request: IndexRequest) -> None:
        """Invoke the indexing function asynchronously with ``request``."""
        self._lambda.invoke(
            FunctionName=self._function, InvocationType="Event", Payload=request.model_dump_json().encode()
        )


class Deadline:
    """Cancellation for :meth:`IngestService.index_document`: set once the invocation nears its end."""

    def __init__(self, remaining_ms: Callable[[], int], margin_s: float = DEADLINE_MARGIN_S) -> None:
        """A deadline ``margin_s`` seconds before the invocation's end, read from ``remaining_ms``."""
        self._remaining_ms = remaining_ms
        self._margin_ms = margin_s * 1000

    def is_set(self) -> bool:
        """True once the invocation has less than the margin left."""
        return self._remaining_ms() < self._margin_ms

    def expires_at(self) -> float:
        """When the invocation ends (epoch seconds): a lease held past it belongs to a dead invocation."""
        return time.time() + self._remaining_ms() / 1000


@dataclass(frozen=True)
class Lease:
    """One invocation's hold on a job (a document, an upload).

    How many attempts it has had without progress and why the last one ended, if it said.
    """

    job: str
    holder: str
    attempts: int
    last_error: str


class IndexingLeases:
    """Leases on indexing jobs, in the state table (``turn`` = ``index#<job>``).

    One invocation works on a job at a time; a lease ends when its holder releases it or its invocation's deadline
    passes.
    """

    def __init__(self, table: Any, ttl_seconds: int, clock: Callable[[], float] = time.time) -> None:
        """Leases kept in ``table`` (the state table), expiring ``ttl_seconds`` after they are taken."""
        self._table = table
        self._ttl = ttl_seconds
        self._clock = clock

    def take(self, job: str, holder: str, until: float, progress: int) -> Lease | None:
        """The lease, or None while another invocation holds it.

        ``progress`` (chunks done) since the last attempt resets the count of attempts.
        """
        key = {"turn": f"index#{job}", "item": _LEASE_ITEM}
        now = self._clock()
        for _ in range(5):
            item = self._table.get_item(Key=key, ConsistentRead=True).get("Item")
            if item is not None and str(item.get("holder", "")) not in ("", holder) and float(item["until"]) > now:
                return None
            attempts = 1
            last_error = ""
            if item is not None:
                last_error = str(item.get("last_error", ""))
                if str(item.get("holder", "")):
                    # Held by an invocation that never released it: it timed out or crashed.
                    last_error = last_error or "the previous attempt ended before it finished (timeout or crash)"
                if int(item.get("progress", -1)) >= progress:
                    attempts = int(item.get("attempts", 0)) + 1
            version = int(item.get("version", 0)) if item is not None else 0
            try:
                self._table.put_item(
                    Item={
                        **key,
                        "holder": holder,
                        "until": Decimal(str(round(until, 3))),
                        "attempts": attempts,
                        "progress": progress,
                        "last_error": last_error,
                        "version": version + 1,
                        "expires_at": int(now) + self._ttl,
                    },
                    ConditionExpression="attribute_not_exists(turn) OR version = :v",
                    ExpressionAttributeValues={":v": version},
                )
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                    continue  # another invocation moved it meanwhile: look again
                raise
            return Lease(job, holder, attempts, last_error)
        return None

    def release(self, lease: Lease, error: str = "") -> None:
        """Let go of the lease; ``error`` says why this attempt ended without finishing."""
        try:
            self._table.update_item(
                Key={"turn": f"index#{lease.job}", "item": _LEASE_ITEM},
                UpdateExpression="SET holder = :none, last_error = :e, version = version + :one",
                ConditionExpression="holder = :me",
                ExpressionAttributeValues={":none": "", ":e": error[:500], ":me": lease.holder, ":one": 1},
            )
        except ClientError as error_:
            if error_.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise


@dataclass
class WorkReport:
    """What one invocation of the indexing function did (its reply)."""

    indexed: list[str]
    failed: list[str]
    busy: list[str]
    continued: list[str]

    def summary(self) -> dict[str, Any]:
        """The report as the function's reply."""
        return {"indexed": self.indexed, "failed": self.failed, "busy": self.busy, "continued": self.continued}


class DocumentWorker:
    """The indexing function: vectors (then the graph) of accepted documents, uploads read from S3 first."""

    def __init__(
        self,
        runtime: AwsRuntime,
        leases: IndexingLeases,
        scheduler: LambdaIndexScheduler,
        uploads: UploadProcessor | None = None,
        *,
        max_attempts: int = MAX_ATTEMPTS,
        margin_s: float = DEADLINE_MARGIN_S,
    ) -> None:
        """A worker on ``runtime``, holding jobs with ``leases`` and rescheduling with ``scheduler``."""
        self._runtime = runtime
        self._container = runtime.container
        self._leases = leases
        self._scheduler = scheduler
        self._uploads = uploads
        self._max_attempts = max_attempts
        self._margin_s = margin_s

    def handle(self, event: dict[str, Any], remaining_ms: Callable[[], int], request_id: str = "") -> dict[str, Any]:
        """Index the event's documents (or accept its upload first) until the deadline nears; the rest is sent on."""
        request = IndexRequest.model_validate(event)
        deadline = Deadline(remaining_ms, self._margin_s)
        holder = request_id or str(uuid.uuid4())
        report = WorkReport([], [], [], [])
        document_ids = list(request.document_ids)
        if request.kind == "upload":
            if self._uploads is None:
                raise RuntimeError("an upload to index, but this function has no upload bucket")
            accepted = self._uploads.accept(request.tenant_id, request.upload_id, holder, deadline, self._leases)
            if accepted.busy:
                report.busy.append(request.upload_id)
            if accepted.document_id:
                document_ids.append(accepted.document_id)
        remaining: list[str] = []
        for position, document_id in enumerate(document_ids):
            outcome = "continue" if deadline.is_set() else self._index(request.tenant_id, document_id, holder, deadline)
            if outcome == "continue":
                remaining = document_ids[position:]
                break
            getattr(report, outcome).append(document_id)
        if remaining:
            # Out of time: the rest in a fresh invocation (after this one let go of its leases).
            report.continued = remaining
            self._scheduler.send(IndexRequest(tenant_id=request.tenant_id, document_ids=remaining))
        logger.info("indexing", extra={"tenant_id": request.tenant_id, **report.summary()})
        return report.summary()

    def _index(self, tenant_id: str, document_id: str, holder: str, deadline: Deadline) -> str:
        """``indexed``, ``failed``, ``busy`` (another invocation has it) or ``continue`` (out of time)."""
        knowledge = self._container.knowledge
        document = knowledge.document(tenant_id, document_id)
        if document is None:
            return "failed"  # deleted meanwhile: nothing to index
        if document.status != DocumentStatus.PENDING:
            return "indexed" if document.status == DocumentStatus.INDEXED else "failed"
        lease = self._leases.take(f"{tenant_id}#{document_id}", holder, deadline.expires_at(), document.embedded_count)
        if lease is None:
            return "busy"
        if lease.attempts > self._max_attempts:
            self._fail(document, f"indexing made no progress in {self._max_attempts} attempts: {lease.last_error}")
            self._leases.release(lease)
            return "failed"
        try:
            indexed = self._container.ingest.index_document(tenant_id, document_id, cancel=deadline)
        except IngestCancelled:
            self._leases.release(lease)
            return "continue"
        except Exception as exc:
            # The engine or the store failed: Lambda retries the delivery (and the next attempt resumes).
            self._leases.release(lease, f"{type(exc).__name__}: {exc}")
            raise
        self._leases.release(lease)
        if indexed is None:
            return "failed"
        if indexed.status == DocumentStatus.FAILED:
            self._drop_vectors(indexed)
            return "failed"
        if indexed.status != DocumentStatus.INDEXED:
            return "continue"
        self._graph(indexed)
        self._enrich(indexed)
        return "indexed"

    def _fail(self, document: Document, reason: str) -> None:
        logger.warning("document failed", extra={"document_id": document.id, "reason": reason})
        self._container.knowledge.set_document_status(
            document.tenant_id, document.id, DocumentStatus.FAILED, reason=reason[:500]
        )
        self._drop_vectors(document)

    def _drop_vectors(self, document: Document) -> None:
        """A failed document is not searchable in part: the vectors of the batches that made it go."""
        try:
            self._container.engine.delete_document(document.id)
        except Exception:
            logger.exception("could not remove a failed document's vectors", extra={"document_id": document.id})

    def _enrich(self, document: Document) -> None:
        """Questions, summary and knowledge-base description, in this invocation after the vectors.

        A Lambda function is frozen once it has replied. A failure is recorded on the document, never retried.
        """
        kb = self._container.knowledge.knowledge_base(document.tenant_id, document.knowledge_base_id)
        if kb is not None:
            asyncio.run(self._container.enrich_document(kb, document))

    def _graph(self, document: Document) -> None:
        kb = self._container.knowledge.knowledge_base(document.tenant_id, document.knowledge_base_id)
        if kb is not None and kb.graph_extraction_enabled:
            asyncio.run(self._container.index_graph(kb, document))
