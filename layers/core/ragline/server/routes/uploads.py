"""Large files through object storage (a :class:`~ragline.ingest.large_uploads.LargeUploadService`; AWS's presigned uploads).

Ask for an upload URL, send the file there, say it is sent, read its status. Mounted where the runtime has a bucket
(``create_app(..., uploads=...)``); the embedded server takes files directly, up to its limit.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel

from ragline.ingest.large_uploads import LargeUploadService, Upload, UploadError
from ragline.server.deps import ContainerDep, TenantDep, knowledge_base_of
from ragline.server.errors import ApiError
from ragline.server.records import KnowledgeView
from ragline.server.schemas.uploads import UploadBody
from ragline.server.views import Envelope

router = APIRouter(prefix="/api/v1/knowledge-bases/{kb_id}/uploads", tags=["knowledge"])


def uploads_of(request: Request) -> LargeUploadService:
    """The deployment's large-upload service (mounted only where there is a bucket)."""
    uploads: LargeUploadService | None = getattr(request.app.state, "uploads", None)
    if uploads is None:  # pragma: no cover - the router is only mounted with a bucket
        raise ApiError(404, "not_found", "this deployment takes files directly, not through uploads")
    return uploads


UploadsDep = Annotated[LargeUploadService, Depends(uploads_of)]


class UploadTarget(BaseModel):
    """Where to send the file: ``PUT`` its bytes to ``url`` with these headers before ``expires_at``."""

    url: str
    method: Literal["PUT"] = "PUT"
    headers: dict[str, str]
    expires_at: str


class UploadView(BaseModel):
    """An upload.

    ``awaiting_upload`` → ``processing`` (sent; being read) → ``accepted`` (``document`` has its indexing status,
    pending → indexed | failed) or ``failed`` with the ``reason``.
    """

    id: str
    knowledge_base_id: str
    filename: str
    title: str
    tags: list[str]
    size_bytes: int
    status: Literal["awaiting_upload", "processing", "accepted", "failed"]
    reason: str
    document_id: str
    document: KnowledgeView | None = None
    created_at: str
    updated_at: str
    upload: UploadTarget | None = None


def _view(upload: Upload, container: Any, target: dict[str, Any] | None = None) -> UploadView:
    document = None
    if upload.document_id:
        stored = container.knowledge.document(upload.tenant_id, upload.document_id)
        document = KnowledgeView.of(stored) if stored is not None else None
    return UploadView(
        **upload.model_dump(include=set(UploadView.model_fields) - {"document", "upload"}),
        document=document,
        upload=UploadTarget(**target) if target else None,
    )


def _refused(exc: UploadError) -> ApiError:
    return ApiError(exc.status, exc.kind, str(exc), exc.field)


@router.post("", status_code=201, responses={413: {}, 415: {}})
def create_upload(
    kb_id: str, body: UploadBody, tenant: TenantDep, container: ContainerDep, uploads: UploadsDep
) -> Envelope[UploadView]:
    """An upload URL for a file too large for a request (up to ``max_bytes``).

    PUT the file there, then POST ``.../uploads/{id}/complete``.
    """
    kb = knowledge_base_of(container, tenant, kb_id)
    try:
        upload, target = uploads.create(
            kb, body.filename, body.size_bytes, title=body.title, tags=body.tags, kind=body.kind
        )
    except UploadError as exc:
        raise _refused(exc) from None
    return Envelope(data=_view(upload, container, target))


@router.post("/{upload_id}/complete", status_code=202, responses={404: {}, 409: {}, 413: {}})
def complete_upload(
    kb_id: str, upload_id: str, tenant: TenantDep, container: ContainerDep, uploads: UploadsDep
) -> Envelope[UploadView]:
    """The file is sent: it is read, accepted and indexed asynchronously (follow it with GET)."""
    knowledge_base_of(container, tenant, kb_id)
    try:
        upload = uploads.complete(tenant.id, kb_id, upload_id)
    except UploadError as exc:
        raise _refused(exc) from None
    return Envelope(data=_view(upload, container))


@router.get("/{upload_id}", responses={404: {}})
def get_upload(
    kb_id: str, upload_id: str, tenant: TenantDep, container: ContainerDep, uploads: UploadsDep
) -> Envelope[UploadView]:
    """An upload's status, with its document once accepted."""
    knowledge_base_of(container, tenant, kb_id)
    try:
        upload = uploads.get(tenant.id, kb_id, upload_id)
    except UploadError as exc:
        raise _refused(exc) from None
    return Envelope(data=_view(upload, container))
