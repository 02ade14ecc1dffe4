"""Files beyond the HTTP API's payload limit, uploaded to S3 with a presigned URL and indexed asynchronously.

API Gateway takes 10 MB per request and Lambda 6 MB per invocation; a larger file goes to the state bucket
directly:

1. ``POST /api/v1/knowledge-bases/{kb}/uploads`` with the file's name and size: an upload record
   (``awaiting_upload``) and a presigned ``PUT`` URL for exactly that many bytes (the type is checked first,
   so an unsupported file is refused before it is sent);
2. the client ``PUT``s the file there (``curl -T file "$URL"``);
3. ``POST .../uploads/{id}/complete``: the object is checked (there, within the limit), the upload becomes
   ``processing`` and the indexing function is invoked asynchronously; it reads the object, extracts and
   accepts the document (``accepted``, with its ``document_id``) or ends ``failed`` with the reason, then
   indexes it as any upload;
4. ``GET .../uploads/{id}`` says where it is, with the document and its status once accepted.

Completing twice, or a delivery of the indexing function twice, does the work once (a lease per upload;
the document is found again by its content hash). Upload records live in the state table (TTL) beside an
"open uploads" marker per upload in ``processing``, which the scheduled sweep reads to invoke the indexing
function again for one whose every delivery was lost.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from ragline.files.reading import UnsupportedFile, require_parser
from ragline.ingest.extract import require_reader
from ragline.ingest.large_uploads import Upload, UploadError
from ragline.ingest.service import TooManyChunks
from ragline.serverless.indexing import MAX_ATTEMPTS, Deadline, IndexingLeases, IndexRequest, LambdaIndexScheduler
from ragline.store.ids import new_id, utc_now
from ragline.tables.parse import EXCEL_SUFFIXES, is_table_file
from ragline.types import ChunkType
from ragline.types.text import safe_filename

if TYPE_CHECKING:
    from ragline.container import Container
    from ragline.store.models import KnowledgeBase

logger = logging.getLogger(__name__)

_OPEN = "uploads#open"


def check_file_type(filename: str) -> None:
    """The file can be read here (its type is supported and its parser installed), or UnsupportedFile."""
    suffix = Path(filename).suffix.lower()
    if is_table_file(filename):
        if suffix in EXCEL_SUFFIXES:
            require_parser("openpyxl", "Excel (.xlsx)")
        return
    require_reader(filename)


class UploadStore:
    """Upload records in the state table (``turn`` = ``upload#<tenant>#<id>``), kept ``ttl_seconds``."""

    def __init__(self, table: Any, ttl_seconds: int) -> None:
        """Upload records kept in ``table`` (the state table), expiring ``ttl_seconds`` after their last write."""
        self._table = table
        self._ttl = ttl_seconds

    @staticmethod
    def _key(tenant_id: str, upload_id: str) -> dict[str, str]:
        return {"turn": f"upload#{tenant_id}#{upload_id}", "item": "upload"}

    def put(self, upload: Upload) -> None:
        """Write the record (and the marker of a processing upload, which the sweep lists)."""
        item = {**self._key(upload.tenant_id, upload.id), **upload.model_dump()}
        item["expires_at"] = int(time.time()) + self._ttl
        self._table.put_item(Item=item)
        marker = {"turn": _OPEN, "item": f"{upload.created_at}#{upload.tenant_id}#{upload.id}"}
        if upload.status == "processing":
            self._table.put_item(
                Item={**marker, "tenant_id": upload.tenant_id, "upload_id": upload.id, "updated_at": upload.updated_at}
            )
        else:
            self._table.delete_item(Key=marker)

    def get(self, tenant_id: str, upload_id: str) -> Upload | None:
        """The tenant's upload ``upload_id``, or None."""
        item = self._table.get_item(Key=self._key(tenant_id, upload_id), ConsistentRead=True).get("Item")
        if item is None:
            return None
        data = {k: v for k, v in item.items() if k not in ("turn", "item", "expires_at")}
        data["size_bytes"] = int(data["size_bytes"])
        data["tags"] = list(data.get("tags") or [])
        return Upload(**data)

    def update(self, upload: Upload, **changes: Any) -> Upload:
        """The upload with ``changes`` applied, written back."""
        updated = upload.model_copy(update={**changes, "updated_at": utc_now()})
        self.put(updated)
        return updated

    def processing(self, updated_before: str = "", limit: int = 100) -> list[tuple[str, str]]:
        """(tenant, upload id) of uploads in ``processing``, oldest first (updated before the given time)."""
        found: list[tuple[str, str]] = []
        query: dict[str, Any] = {"KeyConditionExpression": Key("turn").eq(_OPEN), "ConsistentRead": True}
        while len(found) < limit:
            page = self._table.query(**query)
            for item in page.get("Items", []):
                if not updated_before or str(item.get("updated_at", "")) < updated_before:
                    found.append((str(item["tenant_id"]), str(item["upload_id"])))
            if not page.get("LastEvaluatedKey"):
                break
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return found[:limit]


class LargeUploads:
    """The HTTP side: an upload record and its presigned URL, the completion, the status."""

    def __init__(
        self,
        store: UploadStore,
        s3: Any,
        bucket: str,
        scheduler: LambdaIndexScheduler,
        *,
        max_bytes: int,
        url_ttl_s: int = 3600,
        prefix: str = "uploads/",
    ) -> None:
        """Uploads recorded in ``store`` and sent to ``bucket``, at most ``max_bytes``, their URLs valid ``url_ttl_s``."""
        self._store = store
        self._s3 = s3
        self._bucket = bucket
        self._scheduler = scheduler
        self.max_bytes = max_bytes
        self._url_ttl_s = url_ttl_s
        self._prefix = prefix

    def create(
        self,
        kb: KnowledgeBase,
        filename: str,
        size_bytes: int,
        *,
        title: str = "",
        tags: Sequence[str] = (),
        kind: Literal["document", "wiki"] = "document",
    ) -> tuple[Upload, dict[str, Any]]:
        """The upload record and how to send the file: ``{"url", "method", "headers", "expires_at"}``."""
        filename = safe_filename(filename, default="upload.txt")
        try:
            check_file_type(filename)
        except UnsupportedFile as exc:
            raise UploadError(415, "unsupported_file", str(exc), "filename") from None
        if size_bytes > self.max_bytes:
            raise UploadError(413, "file_too_large", f"size_bytes exceeds {self.max_bytes} bytes", "size_bytes")
        now = utc_now()
        upload_id = new_id()
        upload = Upload(
            id=upload_id,
            tenant_id=kb.tenant_id,
            knowledge_base_id=kb.id,
            filename=filename,
            title=title,
            tags=list(tags),
            kind=kind,
            size_bytes=size_bytes,
            key=f"{self._prefix}{kb.tenant_id}/{upload_id}/{filename}",
            created_at=now,
            updated_at=now,
        )
        self._store.put(upload)
        # Signed with the Content-Length: S3 takes exactly the declared number of bytes.
        url = self._s3.generate_presigned_url(
            "put_object",
            Params={"Bucket": self._bucket, "Key": upload.key, "ContentLength": size_bytes},
            ExpiresIn=self._url_ttl_s,
        )
        expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + self._url_ttl_s))
        send = {"url": url, "method": "PUT", "headers": {"Content-Length": str(size_bytes)}, "expires_at": expires}
        return upload, send

    def get(self, tenant_id: str, kb_id: str, upload_id: str) -> Upload:
        """The tenant's upload of knowledge base ``kb_id``; a 404 :class:`UploadError` otherwise."""
        upload = self._store.get(tenant_id, upload_id)
        if upload is None or upload.knowledge_base_id != kb_id:
            raise UploadError(404, "not_found", "upload not found", "upload_id")
        return upload

    def complete(self, tenant_id: str, kb_id: str, upload_id: str) -> Upload:
        """The file is in the bucket: hand it to the indexing function (again, for one still processing)."""
        upload = self.get(tenant_id, kb_id, upload_id)
        if upload.status in ("accepted", "failed"):
            return upload
        try:
            head = self._s3.head_object(Bucket=self._bucket, Key=upload.key)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                raise UploadError(
                    409,
                    "not_uploaded",
                    "the file is not in the bucket yet: PUT it to the upload URL first",
                    "upload_id",
                ) from None
            raise
        size = int(head.get("ContentLength", 0))
        if size > self.max_bytes:
            self._store.update(upload, status="failed", reason=f"the file exceeds {self.max_bytes} bytes")
            raise UploadError(413, "file_too_large", f"the file exceeds {self.max_bytes} bytes", "upload_id")
        upload = self._store.update(upload, status="processing", size_bytes=size)
        self._scheduler.send(IndexRequest(kind="upload", tenant_id=tenant_id, upload_id=upload_id))
        return upload


@dataclass
class Accepted:
    """What the indexing function got from an upload: the document to index, or nothing (failed, busy)."""

    document_id: str = ""
    busy: bool = False


class UploadProcessor:
    """The indexing function's side: the object read, extracted and accepted as a pending document."""

    def __init__(
        self,
        store: UploadStore,
        s3: Any,
        bucket: str,
        container: Container,
        max_attempts: int = MAX_ATTEMPTS,
    ) -> None:
        """A processor reading uploads from ``bucket`` into ``container``'s ingestion, giving up after ``max_attempts``."""
        self._store = store
        self._s3 = s3
        self._bucket = bucket
        self._container = container
        self._max_attempts = max_attempts

    def accept(
        self, tenant_id: str, upload_id: str, holder: str, deadline: Deadline, leases: IndexingLeases
    ) -> Accepted:
        """Read the uploaded object and accept it as a pending document, once; nothing when failed or busy."""
        upload = self._store.get(tenant_id, upload_id)
        if upload is None or upload.status == "failed":
            return Accepted()
        if upload.status == "accepted":
            return Accepted(upload.document_id)
        lease = leases.take(f"upload#{tenant_id}#{upload_id}", holder, deadline.expires_at(), 0)
        if lease is None:
            return Accepted(busy=True)
        if lease.attempts > self._max_attempts:
            self._store.update(
                upload,
                status="failed",
                reason=f"the file could not be read in {self._max_attempts} attempts: {lease.last_error}"[:500],
            )
            leases.release(lease)
            return Accepted()
        try:
            document_id = self._accept(upload)
        except (UnsupportedFile, TooManyChunks) as exc:
            self._store.update(upload, status="failed", reason=str(exc)[:500])
            leases.release(lease)
            return Accepted()
        except Exception as exc:
            leases.release(lease, f"{type(exc).__name__}: {exc}")
            raise
        leases.release(lease)
        return Accepted(document_id)

    def _accept(self, upload: Upload) -> str:
        kb = self._container.knowledge.knowledge_base(upload.tenant_id, upload.knowledge_base_id)
        if kb is None:
            self._store.update(upload, status="failed", reason="the knowledge base was deleted")
            return ""
        raw = self._s3.get_object(Bucket=self._bucket, Key=upload.key)["Body"].read()
        chunk_type = ChunkType.WIKI_PAGE if upload.kind == "wiki" else ChunkType.TEXT
        result = self._container.ingest.accept_bytes(
            kb, upload.filename, raw, title=upload.title, tags=upload.tags, chunk_type=chunk_type
        )
        self._store.update(upload, status="accepted", document_id=result.document.id, reason="")
        # The text lives in the chunks now (the bucket's lifecycle would remove the object anyway).
        self._s3.delete_object(Bucket=self._bucket, Key=upload.key)
        return result.document.id


def stale_before(seconds: float, clock: Callable[[], float] = time.time) -> str:
    """The ``updated_at`` (ISO, as ``utc_now`` writes it) before which a record counts as stale."""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(clock() - seconds, UTC).isoformat(timespec="milliseconds")
