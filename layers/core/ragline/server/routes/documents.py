"""Documents of a knowledge base, ragline's routes: upload a file or text, import FAQ entries, list.

WeKnora's routes for the same documents (its "knowledge") are in ``knowledge.py``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response

from ragline.container import Container
from ragline.files.reading import UnsupportedFile, UnsupportedFileType
from ragline.ingest.faq import parse_entries, parse_faq_file
from ragline.ingest.service import DocumentInput, IngestCancelled, IngestResult, TooManyChunks
from ragline.ingest.uploads import ClientGone, UploadTooLarge, document_status_code, read_body
from ragline.server.body_limit import upload_body
from ragline.server.deps import ContainerDep, TenantDep, knowledge_base_of, read_upload
from ragline.server.errors import UPLOAD_REPLIES, ApiError, not_found, parse_body
from ragline.server.records import KnowledgeView
from ragline.server.schemas.documents import DocumentBody, FAQBody
from ragline.server.views import Envelope
from ragline.store.models import KnowledgeBase
from ragline.types import ChunkType
from ragline.types.text import forbidden_characters, safe_filename

# The largest offset a store takes (SQLite's INTEGER): 2^63 overflowed it (a plain-text 500).
MAX_OFFSET = 2**63 - 1

router = APIRouter(prefix="/api/v1/knowledge-bases/{kb_id}", tags=["knowledge"])


def _chunk_type(kind: str) -> str:
    return ChunkType.WIKI_PAGE if kind == "wiki" else ChunkType.TEXT


def _file_upload_body(json_schema: dict[str, Any], *, json_first: bool = False) -> dict[str, Any]:
    """OpenAPI for a body that is either a multipart ``file`` or JSON (the route reads it itself)."""
    multipart = {"schema": {"type": "object", "properties": {"file": {"type": "string", "format": "binary"}}}}
    json = {"schema": json_schema}
    content = {"application/json": json, "multipart/form-data": multipart}
    if not json_first:
        content = {"multipart/form-data": multipart, "application/json": json}
    return {"requestBody": {"content": content, "required": True}}


def _tags_field(value: object) -> list[str]:
    return [t.strip() for t in str(value or "").split(",") if t.strip()]


def _document_reply(result: IngestResult, response: Response) -> Envelope[KnowledgeView]:
    """200 for a duplicate, 202 while the vectors are computed (``status: pending``), 201 once indexed."""
    response.status_code = document_status_code(result)
    return Envelope(data=knowledge_view(result))


def knowledge_view(result: IngestResult) -> KnowledgeView:
    """The view of an ingested document, with its chunk count and whether it was a duplicate."""
    document = result.document.model_copy(update={"chunk_count": result.chunk_count})
    return KnowledgeView.of(document, duplicate=result.duplicate)


async def _accept(
    container: Container,
    kb: KnowledgeBase,
    request: Request | None,
    work: Callable[[threading.Event], IngestResult],
    wait: bool,
) -> IngestResult:
    """The upload's sequence (:class:`~ragline.ingest.uploads.UploadFlow`), its refusals as the API's replies."""
    try:
        return await container.uploads.accept(kb, work, request=request, wait=wait)
    except TooManyChunks as exc:
        raise ApiError(413, "too_many_chunks", str(exc), "content") from None
    except UnsupportedFile as exc:
        status = 415 if isinstance(exc, UnsupportedFileType) else 422
        raise ApiError(status, "unsupported_file", str(exc), "file") from None
    except ClientGone:
        # Nobody reads this reply (nginx's "client closed request"); nothing was stored.
        raise ApiError(499, "client_closed_request", "the client went away before the upload was stored") from None
    except IngestCancelled:
        # A document stored in parts is listed from its first part: a delete meanwhile stops its store.
        raise ApiError(409, "document_deleted", "the document was deleted while it was being stored") from None


async def ingest_upload(
    container: Container,
    kb: KnowledgeBase,
    filename: str,
    raw: bytes,
    *,
    title: str,
    tags: list[str],
    kind: str,
    request: Request | None = None,
    wait: bool = False,
    source: str = "",
) -> IngestResult:
    """An uploaded file, extracted and chunked off the event loop.

    Keyword-searchable when this returns, its vectors computed in the background (``status`` pending → indexed | failed)
    unless ``wait``.

    The file is stored under its safe base name (no directories, controls or bidi characters); a title or
    tag with NUL, control or bidi characters is refused (422, naming the field).
    """
    for field, values in (("title", [title]), ("tags", tags)):
        for value in values:
            found = forbidden_characters(value, allow_line_breaks=False)
            if found is not None:
                raise ApiError(422, "invalid_field", f"{field} must not contain {found}", field)
    filename = safe_filename(filename, default="upload.txt")

    def work(cancel: threading.Event) -> IngestResult:
        return container.ingest.accept_bytes(
            kb, filename, raw, title=title, source=source, tags=tags, chunk_type=_chunk_type(kind), cancel=cancel
        )

    return await _accept(container, kb, request, work, wait)


async def ingest_text(
    container: Container, kb: KnowledgeBase, item: DocumentInput, *, request: Request | None = None, wait: bool = False
) -> IngestResult:
    """A text document, as :func:`ingest_upload`."""
    if not item.content.strip():
        raise ApiError(422, "empty_document", "content must not be empty", "content")
    return await _accept(
        container, kb, request, lambda cancel: container.ingest.accept_many(kb, [item], cancel=cancel)[0], wait
    )


@router.post(
    "/documents",
    status_code=201,
    responses={
        200: {"model": Envelope[KnowledgeView], "description": "The same content was already stored"},
        202: {"model": Envelope[KnowledgeView], "description": "Stored, keyword-searchable; vectors being computed"},
        **UPLOAD_REPLIES,
    },
    openapi_extra=_file_upload_body(DocumentBody.model_json_schema()),
)
@upload_body
async def upload_document(
    kb_id: str,
    request: Request,
    response: Response,
    tenant: TenantDep,
    container: ContainerDep,
    wait: Annotated[bool, Query(description="Reply once the vectors are computed too (201)")] = False,
) -> Envelope[KnowledgeView]:
    """A file (multipart ``file``) or text (JSON ``{"title", "content"}``).

    Keyword-searchable once the reply is sent; its vectors follow in the background (``status`` pending → indexed |
    failed), unless ``wait``.
    """
    kb = await asyncio.to_thread(knowledge_base_of, container, tenant, kb_id)
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        form = await request.form(max_files=1)
        filename, raw = await read_upload(container, form, "upload.txt")
        kind = str(form.get("kind") or "document")
        if kind not in ("document", "wiki"):
            raise ApiError(422, "invalid_field", "kind must be document or wiki", "kind")
        title, tags = str(form.get("title") or ""), _tags_field(form.get("tags"))
        result = await ingest_upload(
            container, kb, filename, raw, title=title, tags=tags, kind=kind, request=request, wait=wait
        )
    else:
        try:
            raw_body = await read_body(request, container.config.limits.max_upload_bytes)
        except UploadTooLarge as exc:
            raise ApiError(413, "file_too_large", str(exc), "file") from None
        body = parse_body(DocumentBody, raw_body)
        item = DocumentInput(
            content=body.content,
            title=body.title,
            file_type=body.file_type,
            description=body.description,
            tags=body.tags,
            chunk_type=_chunk_type(body.kind),
        )
        result = await ingest_text(container, kb, item, request=request, wait=wait)
    return _document_reply(result, response)


@router.get("/documents/{document_id}")
def get_document(kb_id: str, document_id: str, tenant: TenantDep, container: ContainerDep) -> Envelope[KnowledgeView]:
    """One document with its status, failure reason, progress (``embedded_count`` of ``chunk_count``), size and pages."""
    kb = knowledge_base_of(container, tenant, kb_id)
    document = container.knowledge.document(tenant.id, document_id)
    if document is None or document.knowledge_base_id != kb.id:
        raise not_found("document", "document_id")
    return Envelope(data=KnowledgeView.of(document))


@router.post(
    "/faq",
    status_code=201,
    responses={
        200: {"model": Envelope[KnowledgeView], "description": "The same entries were already stored"},
        **UPLOAD_REPLIES,
    },
    openapi_extra=_file_upload_body(FAQBody.model_json_schema(), json_first=True),
)
@upload_body
async def import_faq(
    kb_id: str, request: Request, response: Response, tenant: TenantDep, container: ContainerDep
) -> Envelope[KnowledgeView]:
    """FAQ entries (standard question, similar and negative questions, answers) as JSON, or a JSON/CSV file."""
    kb = await asyncio.to_thread(knowledge_base_of, container, tenant, kb_id)
    try:
        if request.headers.get("content-type", "").startswith("multipart/form-data"):
            form = await request.form(max_files=1)
            filename, raw = await read_upload(container, form, "faq.json")
            entries = parse_faq_file(filename, raw)
            title = str(form.get("title") or "FAQ")
            tags = _tags_field(form.get("tags"))
        else:
            try:
                raw_body = await read_body(request, container.config.limits.max_upload_bytes)
            except UploadTooLarge as exc:
                raise ApiError(413, "file_too_large", str(exc), "file") from None
            body = parse_body(FAQBody, raw_body)
            entries, title, tags = parse_entries(body.entries), body.title, body.tags
    except UnsupportedFile as exc:
        status = 415 if isinstance(exc, UnsupportedFileType) else 422
        raise ApiError(status, "invalid_faq", str(exc), "entries") from None
    result = await asyncio.to_thread(container.ingest.ingest_faq, kb, entries, title=title, tags=tags)
    return _document_reply(result, response)


@router.get("/documents")
def list_documents(
    kb_id: str,
    tenant: TenantDep,
    container: ContainerDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> Envelope[list[KnowledgeView]]:
    """A knowledge base's documents, oldest first, one page at a time."""
    kb = knowledge_base_of(container, tenant, kb_id)
    documents = container.knowledge.documents(tenant.id, kb.id, limit=limit, offset=offset)
    return Envelope(data=[KnowledgeView.of(d) for d in documents])
