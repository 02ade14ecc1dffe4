"""Files beyond a request's size limit, sent to object storage first: the upload record and the service's port.

The HTTP routes (``server/routes/uploads.py``) speak to a :class:`LargeUploadService`; the AWS runtime's
presigned-S3 implementation is :class:`ragline.serverless.uploads.LargeUploads`. The embedded server takes files
directly and mounts no such service.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from ragline.store.models import KnowledgeBase

UploadStatus = Literal["awaiting_upload", "processing", "accepted", "failed"]


class Upload(BaseModel):
    """A large upload's record: who sent what where, its status and the document it became."""

    id: str
    tenant_id: str
    knowledge_base_id: str
    filename: str
    title: str = ""
    tags: list[str] = Field(default_factory=list)
    kind: Literal["document", "wiki"] = "document"
    size_bytes: int
    key: str
    status: UploadStatus = "awaiting_upload"
    reason: str = ""
    document_id: str = ""
    created_at: str
    updated_at: str


class UploadError(Exception):
    """Refused: ``status`` (404, 409, 413, 415) and the field it is about."""

    def __init__(self, status: int, kind: str, message: str, field: str) -> None:
        """A refusal with its HTTP ``status``, error ``kind``, ``message`` and ``field``."""
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.field = field


class LargeUploadService(Protocol):
    """Prepare an upload, hear that its file was sent, say where it is."""

    max_bytes: int

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
        ...

    def get(self, tenant_id: str, kb_id: str, upload_id: str) -> Upload:
        """The tenant's upload of knowledge base ``kb_id``; a 404 :class:`UploadError` otherwise."""
        ...

    def complete(self, tenant_id: str, kb_id: str, upload_id: str) -> Upload:
        """The file was sent: read, accept and index it asynchronously."""
        ...
