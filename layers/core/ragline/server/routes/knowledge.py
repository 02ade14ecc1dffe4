"""Documents as WeKnora's "knowledge".

Upload a file, fetch one from a URL, write Markdown, list a page, get one or several, delete one or several.

The same documents as ragline's ``/documents`` routes, stored and indexed by the same code.
"""

from __future__ import annotations

import asyncio
import json
import logging
import mimetypes
import uuid
from typing import Annotated, Any
from urllib.parse import unquote, urlsplit

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse, Response
from pydantic import BaseModel

from ragline.container import Container
from ragline.ingest.service import (
    DocumentInput,
    IngestResult,
    NoOriginal,
    StillIndexing,
    TooManyChunks,
    UnsupportedFile,
)
from ragline.server.body_limit import upload_body
from ragline.server.deps import ContainerDep, TenantDep, knowledge_base_of, read_upload
from ragline.server.errors import UPLOAD_REPLIES, ApiError, ErrorReply
from ragline.server.records import KnowledgeView, knowledge_type
from ragline.server.routes.documents import ingest_text, ingest_upload, knowledge_view
from ragline.server.routes.tags import tag_filter, tag_value
from ragline.server.schemas.knowledge import (
    MAX_BATCH_IDS,
    BatchDeleteBody,
    BatchReparseBody,
    KnowledgeUpdateBody,
    ManualKnowledgeBody,
    ManualUpdateBody,
    TagUpdatesBody,
    UrlKnowledgeBody,
)
from ragline.server.views import Done, Envelope, Page, page_of
from ragline.store.models import Document, DocumentStatus, KnowledgeBase
from ragline.store.originals import FileOriginalStore, content_disposition
from ragline.types.text import Identifier
from ragline.web.fetch import FetchError, FetchFailure, fetch_document

logger = logging.getLogger(__name__)
router = APIRouter(prefix="/api/v1", tags=["knowledge"])

KNOWLEDGE_PAGE_SIZE = 20
MAX_PAGE_SIZE = 1000
# Documents read for a listing of one knowledge base.
MAX_LISTED_DOCUMENTS = 100_000
# WeKnora's "no tag" value of tag_id.
UNTAGGED = "__untagged__"
# Form fields of WeKnora's file upload that ragline accepts and does not act on.
IGNORED_FORM_FIELDS = ("enable_multimodel", "process_config", "channel", "metadata")
_DUPLICATE = {"file": "file already exists", "manual": "content already exists", "url": "URL already exists"}
# The extension a fetched document is read by when its URL's name has none (or, for a page, another one).
_EXTENSIONS = {
    "text/html": ".html",
    "application/xhtml+xml": ".html",
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/x-markdown": ".md",
    "text/csv": ".csv",
    "text/tab-separated-values": ".tsv",
    "application/pdf": ".pdf",
    "application/epub+zip": ".epub",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
}
# Form and body fields of WeKnora's URL knowledge that ragline accepts and does not act on.
IGNORED_URL_FIELDS = ("enable_multimodel", "process_config", "channel")


def _duplicate_reply(result: IngestResult, kind: str) -> JSONResponse:
    """WeKnora's 409 for a document already in the knowledge base: the existing one in ``data``."""
    return JSONResponse(
        {
            "success": False,
            "message": _DUPLICATE[kind],
            "code": f"duplicate_{kind}",
            "data": knowledge_view(result).model_dump(mode="json"),
        },
        status_code=409,
    )


def _tags(container: Container, kb: KnowledgeBase, tag_id: str | None) -> list[str]:
    value = (tag_id or "").strip()
    return [] if value in ("", UNTAGGED) else [tag_value(container, kb, value)]


def _form_text(form: Any, name: str, limit: int = 1000) -> str:
    value = form.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ApiError(422, "invalid_field", f"{name} must be a text field", name)
    if len(value) > limit:
        raise ApiError(422, "invalid_field", f"{name} exceeds {limit} characters", name)
    return value


@router.post(
    "/knowledge-bases/{kb_id}/knowledge/file",
    responses={
        409: {"description": "The same file is already in the knowledge base (its record in data)"},
        **UPLOAD_REPLIES,
    },
    openapi_extra={
        "requestBody": {
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "required": ["file"],
                        "properties": {
                            "file": {"type": "string", "format": "binary"},
                            "fileName": {"type": "string", "maxLength": 500},
                            "tag_id": {"type": "string", "maxLength": 200},
                            "metadata": {"type": "string", "maxLength": 20_000},
                            "enable_multimodel": {"type": "string", "maxLength": 1000},
                            "process_config": {"type": "string", "maxLength": 1000},
                            "channel": {"type": "string", "maxLength": 1000},
                        },
                    }
                }
            },
            "required": True,
        }
    },
)
@upload_body
async def create_knowledge_from_file(
    kb_id: str, request: Request, tenant: TenantDep, container: ContainerDep
) -> Envelope[KnowledgeView]:
    """A file (multipart ``file``), extracted, chunked and indexed before the reply."""
    kb = await asyncio.to_thread(knowledge_base_of, container, tenant, kb_id)
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise ApiError(415, "unsupported_media_type", "send the file as multipart/form-data", "file")
    form = await request.form(max_files=1)
    filename, raw = await read_upload(container, form, "upload.txt")
    # fileName keeps a folder upload's relative path; ragline keeps the base name as the file's name.
    custom = _form_text(form, "fileName", 500).strip()
    if custom:
        filename = custom.replace("\\", "/").rsplit("/", 1)[-1] or filename
    metadata = _form_text(form, "metadata", 20_000)
    if metadata:
        try:
            json.loads(metadata)
        except ValueError:
            raise ApiError(422, "invalid_field", "metadata must be a JSON object", "metadata") from None
    ignored = [name for name in IGNORED_FORM_FIELDS if name == "metadata" or _form_text(form, name)]
    if ignored:
        logger.debug("knowledge file upload: ignoring WeKnora fields %s", ", ".join(ignored))
    tags = await asyncio.to_thread(_tags, container, kb, _form_text(form, "tag_id", 200))
    result = await ingest_upload(container, kb, filename, raw, title="", tags=tags, kind="document")
    if result.duplicate:
        return _duplicate_reply(result, "file")  # type: ignore[return-value]
    return Envelope(data=knowledge_view(result))


def url_file_name(url: str, media_type: str, file_name: str = "", file_type: str = "") -> str:
    """The name a fetched document is stored and read by.

    The one given, else the URL's last path segment; with ``file_type``'s extension when given, else one for its media
    type when the name has none (a page is read as HTML whatever its URL ends with: ``index.php`` → ``index.php.html``).
    """
    name = file_name.strip() or unquote(urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1]) or "page"
    lower = name.lower()
    if file_type:
        extension = "." + file_type.strip().lstrip(".").lower()
        return name if lower.endswith(extension) else name + extension
    extension = _EXTENSIONS.get(media_type, "")
    if extension == ".html":
        return name if lower.endswith((".html", ".htm")) else name + extension
    if extension and "." not in name.rsplit("/", 1)[-1]:
        return name + extension
    return name


@router.post(
    "/knowledge-bases/{kb_id}/knowledge/url",
    responses={
        409: {"description": "The same document is already in the knowledge base (its record in data)"},
        422: {
            "description": "The URL is refused (scheme, private address) or could not be fetched",
            "model": ErrorReply,
        },
        **UPLOAD_REPLIES,
    },
)
async def create_knowledge_from_url(
    kb_id: str, body: UrlKnowledgeBody, tenant: TenantDep, container: ContainerDep
) -> Envelope[KnowledgeView]:
    """A web page or a document file fetched from ``url``, then ingested as an upload.

    A web page or a document file fetched from ``url`` (http or https; private, loopback and link-local addresses
    refused unless ``web_fetch.allow_private`` / ``allowed_endpoints`` say otherwise, every redirect checked), then
    extracted, chunked and indexed as an upload. Its ``source`` is the URL.
    """
    kb = await asyncio.to_thread(knowledge_base_of, container, tenant, kb_id)
    ignored = sorted(set(IGNORED_URL_FIELDS) & body.model_fields_set)
    if ignored:
        logger.debug("knowledge from URL: ignoring WeKnora fields %s", ", ".join(ignored))
    tags = await asyncio.to_thread(_tags, container, kb, body.tag_id)
    try:
        fetched = await fetch_document(
            body.url.strip(), container.config.web_fetch, max_bytes=container.config.limits.max_upload_bytes
        )
    except FetchError as exc:
        if exc.reason == FetchFailure.TOO_LARGE:
            raise ApiError(413, "payload_too_large", str(exc), "url") from None
        if exc.reason == FetchFailure.UNSUPPORTED_CONTENT_TYPE:
            raise ApiError(415, "unsupported_media_type", str(exc), "url") from None
        raise ApiError(422, "url_refused" if exc.refused else "url_fetch_failed", str(exc), "url") from None
    filename = url_file_name(fetched.url, fetched.media_type, body.file_name or "", body.file_type or "")
    title = (body.title or "").strip()
    result = await ingest_upload(
        container, kb, filename, fetched.body, title=title, tags=tags, kind="document", source=fetched.url
    )
    if result.duplicate:
        return _duplicate_reply(result, "url")  # type: ignore[return-value]
    return Envelope(data=knowledge_view(result))


@router.post(
    "/knowledge-bases/{kb_id}/knowledge/manual",
    responses={409: {"description": "The same content is already in the knowledge base (its record in data)"}},
)
@upload_body
async def create_manual_knowledge(
    kb_id: str, body: ManualKnowledgeBody, tenant: TenantDep, container: ContainerDep
) -> Envelope[KnowledgeView]:
    """Markdown written by hand, chunked and indexed before the reply."""
    kb = await asyncio.to_thread(knowledge_base_of, container, tenant, kb_id)
    if body.status or body.channel:
        logger.debug("manual knowledge: ignoring WeKnora fields status, channel")
    item = DocumentInput(
        content=body.content,
        title=body.title.strip(),
        file_type="md",
        tags=await asyncio.to_thread(_tags, container, kb, body.tag_id),
    )
    result = await ingest_text(container, kb, item)
    if result.duplicate:
        return _duplicate_reply(result, "manual")  # type: ignore[return-value]
    return Envelope(data=knowledge_view(result))


def _matches(
    document: Document, *, tag_id: str, tagged: set[str], keyword: str, file_type: str, parse_status: str
) -> bool:
    view = KnowledgeView.of(document)
    if tag_id == UNTAGGED and document.tags:
        return False
    if tag_id not in ("", UNTAGGED) and not tagged & set(document.tags):
        return False
    if keyword and keyword.casefold() not in f"{document.title}\n{document.filename}".casefold():
        return False
    if file_type and file_type not in (document.file_type, view.type):
        return False
    return not parse_status or parse_status == view.parse_status


@router.get("/knowledge-bases/{kb_id}/knowledge")
def list_knowledge(
    kb_id: str,
    tenant: TenantDep,
    container: ContainerDep,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = KNOWLEDGE_PAGE_SIZE,
    tag_id: Annotated[str, Query(max_length=200)] = "",
    keyword: Annotated[str, Query(max_length=200)] = "",
    file_type: Annotated[str, Query(max_length=40)] = "",
    parse_status: Annotated[str, Query(max_length=40)] = "",
) -> Page[KnowledgeView]:
    """A knowledge base's documents, newest first, one page at a time.

    Filtered by tag, a keyword in the title or file name, file type (or ``manual`` / ``url`` / ``file``) and parse
    status.
    """
    kb = knowledge_base_of(container, tenant, kb_id)
    documents = container.knowledge.documents(tenant.id, kb.id, limit=MAX_LISTED_DOCUMENTS)
    documents.sort(key=lambda d: d.created_at, reverse=True)
    tagged = set(tag_filter(container, tenant.id, [kb.id], [tag_id]) or []) if tag_id not in ("", UNTAGGED) else set()
    filters = {"keyword": keyword.strip(), "file_type": file_type, "parse_status": parse_status}
    kept = [d for d in documents if _matches(d, tag_id=tag_id, tagged=tagged, **filters)]
    return page_of([KnowledgeView.of(d) for d in kept], page, page_size)


@router.get("/knowledge/batch")
def get_knowledge_batch(
    tenant: TenantDep,
    container: ContainerDep,
    ids: Annotated[list[Identifier], Query(min_length=1, max_length=MAX_BATCH_IDS)],
    kb_id: Annotated[str, Query(max_length=200)] = "",
) -> Envelope[list[KnowledgeView]]:
    """The documents named (repeat ``ids``), in that order; unknown ids are left out."""
    documents = [d for d in (container.knowledge.document(tenant.id, i) for i in dict.fromkeys(ids)) if d]
    if kb_id:
        documents = [d for d in documents if d.knowledge_base_id == kb_id]
    return Envelope(data=[KnowledgeView.of(d) for d in documents])


class KnowledgeSearchPage(BaseModel):
    """WeKnora's reply to a knowledge search: ``data`` is the list, ``has_more`` beside it."""

    success: bool = True
    data: list[KnowledgeView]
    has_more: bool


@router.get("/knowledge/search")
def search_knowledge(
    tenant: TenantDep,
    container: ContainerDep,
    keyword: Annotated[str, Query(max_length=200)] = "",
    offset: Annotated[int, Query(ge=0, le=MAX_LISTED_DOCUMENTS)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = KNOWLEDGE_PAGE_SIZE,
    file_types: Annotated[str, Query(max_length=400)] = "",
    agent_id: Annotated[str, Query(max_length=200)] = "",
) -> KnowledgeSearchPage:
    """The tenant's documents whose title or file name holds ``keyword``, newest first.

    The tenant's documents in every knowledge base whose title or file name holds ``keyword`` (any case), of the
    ``file_types`` listed (comma-separated extensions: ``txt,pdf``), newest first. (``agent_id``, a shared agent's
    scope, is accepted and not acted on: ragline has no agents.)
    """
    if agent_id:
        logger.debug("knowledge search: ignoring agent_id")
    types = {t.strip().lstrip(".").lower() for t in file_types.split(",") if t.strip()}
    needle = keyword.strip().casefold()
    found: list[Document] = []
    for kb in container.knowledge.list_knowledge_bases(tenant.id):
        for document in container.knowledge.documents(tenant.id, kb.id, limit=MAX_LISTED_DOCUMENTS):
            if needle and needle not in f"{document.title}\n{document.filename}".casefold():
                continue
            extension = document.filename.rsplit(".", 1)[-1].lower() if "." in document.filename else ""
            if types and not types & {document.file_type.lower(), extension}:
                continue
            found.append(document)
    found.sort(key=lambda d: d.created_at, reverse=True)
    page = found[offset : offset + limit]
    return KnowledgeSearchPage(data=[KnowledgeView.of(d) for d in page], has_more=offset + limit < len(found))


class Success(BaseModel):
    """WeKnora's bare success reply."""

    success: bool = True


@router.put("/knowledge/tags")
def update_knowledge_tags(body: TagUpdatesBody, tenant: TenantDep, container: ContainerDep) -> Success:
    """Each document named carries the tag given (a tag's id or number, or a new name), or none.

    All or nothing: a document that is not the tenant's (or not in ``kb_id``) refuses the whole batch.
    """
    documents: list[tuple[Document, str | None]] = []
    for knowledge_id, tag in body.updates.items():
        document = container.knowledge.document(tenant.id, knowledge_id)
        if document is None or (body.kb_id and document.knowledge_base_id != body.kb_id):
            raise ApiError(404, "not_found", f"knowledge {knowledge_id} not found", "updates")
        documents.append((document, tag))
    bases: dict[str, KnowledgeBase] = {}
    for document, tag in documents:
        kb = bases.get(document.knowledge_base_id) or knowledge_base_of(container, tenant, document.knowledge_base_id)
        bases[kb.id] = kb
        tags = _tags(container, kb, tag)
        container.knowledge.update_document(tenant.id, document.id, tags=tags)
    return Success()


class KnowledgeUpdated(Done):
    """A document update's reply: the document as stored."""

    data: KnowledgeView


@router.put("/knowledge/{knowledge_id}")
def update_knowledge(
    knowledge_id: str, body: KnowledgeUpdateBody, tenant: TenantDep, container: ContainerDep
) -> KnowledgeUpdated:
    """A new title or description (``""`` clears it).

    Both are searched and shown with every passage, and the title is embedded with each: the document is searchable by
    its new title at the reply and is ``pending`` again until its vectors are recomputed.
    """
    document = document_or_404(container, tenant.id, knowledge_id)
    if body.custom_metadata is not None:
        logger.debug("update knowledge: ignoring custom_metadata")
    title = body.title.strip() if body.title is not None else None
    updated = container.knowledge.update_document(tenant.id, document.id, title=title, description=body.description)
    if updated is None:
        raise ApiError(404, "not_found", "knowledge not found", "id")
    if (updated.title, updated.description) != (document.title, document.description):
        updated = container.reparser.reindex(updated)
    return KnowledgeUpdated(message="Knowledge updated successfully", data=KnowledgeView.of(updated))


def document_or_404(container: Container, tenant_id: str, knowledge_id: str) -> Document:
    """The tenant's document ``knowledge_id``; a 404 naming ``id`` otherwise."""
    document = container.knowledge.document(tenant_id, knowledge_id)
    if document is None:
        raise ApiError(404, "not_found", "knowledge not found", "id")
    return document


def original_name(document: Document) -> str:
    """The name an original is handed over under: the uploaded file's, else the title as Markdown or text."""
    if document.filename:
        return document.filename
    suffix = ".txt" if document.file_type == "text" else ".md"
    return (document.title or "document") + suffix


def original_media_type(filename: str) -> str:
    """By extension, as WeKnora's preview: text types in UTF-8, unknown ones as bytes."""
    guessed = mimetypes.guess_type(filename)[0]
    if guessed is None and filename.lower().endswith((".md", ".markdown")):
        guessed = "text/markdown"
    if guessed is None:
        return "application/octet-stream"
    return f"{guessed}; charset=utf-8" if guessed.startswith("text/") or guessed == "application/json" else guessed


_ORIGINAL_REPLIES: dict[int | str, dict[str, Any]] = {
    200: {
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
        "description": "The file as it was received (preview: with its own media type)",
    },
    307: {"description": "A large original: a link to fetch it from the object store directly"},
    404: {"model": ErrorReply, "description": "No such document, or no original kept for it"},
}


async def _original(container: Container, tenant_id: str, knowledge_id: str, *, inline: bool) -> Response:
    document = await asyncio.to_thread(document_or_404, container, tenant_id, knowledge_id)
    store = container.originals
    size = await asyncio.to_thread(store.size, tenant_id, document.id) if store is not None else None
    if store is None or size is None:
        raise ApiError(404, "no_original", "no original is kept for this document (an FAQ import)", "id")
    filename = original_name(document)
    media_type = original_media_type(filename) if inline else "application/octet-stream"
    headers = {"Content-Disposition": content_disposition(filename, inline=inline)}
    if inline:
        headers["Cache-Control"] = "private, max-age=3600"
    if size > container.config.limits.original_inline_max_bytes:
        link = store.link(tenant_id, document.id, filename=filename, media_type=media_type, inline=inline)
        if link is not None:
            return RedirectResponse(link, status_code=307)
    if isinstance(store, FileOriginalStore) and (path := store.path(tenant_id, document.id)) is not None:
        return FileResponse(path, media_type=media_type, headers=headers)
    data = await asyncio.to_thread(store.load, tenant_id, document.id)
    if data is None:
        raise ApiError(404, "no_original", "no original is kept for this document", "id")
    return Response(data, media_type=media_type, headers=headers)


@router.get("/knowledge/{knowledge_id}/download", response_class=Response, responses=_ORIGINAL_REPLIES)
async def download_knowledge(knowledge_id: str, tenant: TenantDep, container: ContainerDep) -> Response:
    """The file the document was made from, as received (``attachment``; a large one on AWS by a link)."""
    return await _original(container, tenant.id, knowledge_id, inline=False)


@router.get("/knowledge/{knowledge_id}/preview", response_class=Response, responses=_ORIGINAL_REPLIES)
async def preview_knowledge(knowledge_id: str, tenant: TenantDep, container: ContainerDep) -> Response:
    """The same file for a browser to show in place: its media type by extension, ``inline``, cached an hour."""
    return await _original(container, tenant.id, knowledge_id, inline=True)


class Reparsed(Done):
    """A reparse's reply: the document, ``processing`` until its new vectors are in."""

    data: KnowledgeView


def _reparse_error(exc: Exception) -> ApiError:
    if isinstance(exc, NoOriginal):
        return ApiError(409, "no_original", f"{exc}: upload it again", "id")
    if isinstance(exc, TooManyChunks):
        return ApiError(413, "too_many_chunks", str(exc), "id")
    if isinstance(exc, StillIndexing):
        return ApiError(409, "still_indexing", str(exc), "id")
    if isinstance(exc, UnsupportedFile):
        return ApiError(409, "not_reparsable", str(exc), "id")
    return ApiError(404, "not_found", "knowledge not found", "id")


async def _reparse(container: Container, document: Document, **changes: Any) -> Document:
    """Parsed again off the event loop; its graph (if its knowledge base extracts one) rebuilt after."""
    try:
        reparsed = await asyncio.to_thread(container.reparser.reparse, document, **changes)
    except (NoOriginal, StillIndexing, TooManyChunks, UnsupportedFile, LookupError) as exc:
        raise _reparse_error(exc) from None
    kb = await asyncio.to_thread(container.knowledge.knowledge_base, document.tenant_id, document.knowledge_base_id)
    if kb is None:
        return reparsed
    if kb.graph_extraction_enabled:
        await asyncio.to_thread(container.removal.forget_graph, document)
    # New chunks: their graph is built and their questions asked again (the description, kept, is not rewritten).
    return await asyncio.to_thread(container.after_accept, kb, reparsed)


@router.post("/knowledge/{knowledge_id}/reparse", responses={409: {"model": ErrorReply}})
async def reparse_knowledge(knowledge_id: str, tenant: TenantDep, container: ContainerDep) -> Reparsed:
    """The document parsed again from its original with today's extraction and chunking, under the same id.

    Searchable by keyword at the reply, ``processing`` until its new vectors are in.
    """
    document = await asyncio.to_thread(document_or_404, container, tenant.id, knowledge_id)
    reparsed = await _reparse(container, document)
    return Reparsed(message="Knowledge reparse task submitted", data=KnowledgeView.of(reparsed))


class BatchReparsed(BaseModel):
    """How many documents a batch reparse took, and its task id."""

    task_id: str
    reparse_count: int


class BatchReparseReply(Done):
    """A batch reparse's reply."""

    data: BatchReparsed


@router.post("/knowledge/batch-reparse", responses={409: {"model": ErrorReply}})
async def batch_reparse_knowledge(
    body: BatchReparseBody, tenant: TenantDep, container: ContainerDep
) -> BatchReparseReply:
    """Several documents of one knowledge base parsed again.

    An id that is not one of its documents, or one with nothing to parse again, refuses the whole batch before any is
    touched.
    """
    kb = await asyncio.to_thread(knowledge_base_of, container, tenant, body.kb_id)
    if body.process_config is not None:
        logger.debug("batch reparse: ignoring process_config")
    documents: list[Document] = []
    for knowledge_id in dict.fromkeys(body.ids):
        document = await asyncio.to_thread(container.knowledge.document, tenant.id, knowledge_id)
        if document is None or document.knowledge_base_id != kb.id:
            raise ApiError(422, "invalid_field", f"{knowledge_id} is not a document of knowledge base {kb.id}", "ids")
        if document.file_type == "faq" or container.originals is None:
            raise ApiError(409, "not_reparsable", f"{knowledge_id} has no original to parse again", "ids")
        if await asyncio.to_thread(container.originals.size, tenant.id, document.id) is None:
            raise ApiError(409, "no_original", f"no original is kept for {knowledge_id}: upload it again", "ids")
        if document.status == DocumentStatus.PENDING:
            raise ApiError(409, "still_indexing", f"{knowledge_id} is being indexed: try again once it is", "ids")
        documents.append(document)
    for document in documents:
        await _reparse(container, document)
    return BatchReparseReply(
        message="Batch reparse task submitted",
        data=BatchReparsed(task_id=f"kg_reparse_{uuid.uuid4().hex}", reparse_count=len(documents)),
    )


@router.put("/knowledge/manual/{knowledge_id}", responses={409: {"model": ErrorReply}})
@upload_body
async def update_manual_knowledge(
    knowledge_id: str, body: ManualUpdateBody, tenant: TenantDep, container: ContainerDep
) -> Envelope[KnowledgeView]:
    """New Markdown, a new title or a new tag for a manual document.

    New Markdown for a manual document (parsed again under the same id: ``processing`` until its vectors are in), a new
    title, or a new tag. Only documents written by hand take it.
    """
    document = await asyncio.to_thread(document_or_404, container, tenant.id, knowledge_id)
    if knowledge_type(document) != "manual":
        raise ApiError(409, "not_manual", "only manual knowledge is edited here: upload a file again", "id")
    if body.status or body.channel:
        logger.debug("manual knowledge update: ignoring status, channel")
    if body.tag_id is not None:
        kb = await asyncio.to_thread(knowledge_base_of, container, tenant, document.knowledge_base_id)
        tags = await asyncio.to_thread(_tags, container, kb, body.tag_id)
        retagged = await asyncio.to_thread(container.knowledge.update_document, tenant.id, document.id, tags=tags)
        document = retagged or document
    title = body.title.strip() if body.title is not None else None
    if body.content is not None:
        document = await _reparse(container, document, content=body.content, title=title)
    elif title is not None and title != document.title:
        updated = (
            await asyncio.to_thread(container.knowledge.update_document, tenant.id, document.id, title=title)
            or document
        )
        document = await asyncio.to_thread(container.reparser.reindex, updated)
    return Envelope(data=KnowledgeView.of(document))


@router.get("/knowledge/{knowledge_id}")
def get_knowledge(knowledge_id: str, tenant: TenantDep, container: ContainerDep) -> Envelope[KnowledgeView]:
    """One document by id."""
    return Envelope(data=KnowledgeView.of(document_or_404(container, tenant.id, knowledge_id)))


@router.delete("/knowledge/{knowledge_id}")
def delete_knowledge(knowledge_id: str, tenant: TenantDep, container: ContainerDep) -> Done:
    """The document, its chunks, index entries, graph and table."""
    document_or_404(container, tenant.id, knowledge_id)
    if container.removal.delete_document(tenant.id, knowledge_id) is None:
        raise ApiError(404, "not_found", "knowledge not found", "id")
    return Done(message="Deleted successfully")


class BatchDeleted(BaseModel):
    """How many documents a batch delete removed, and its task id."""

    task_id: str
    deleted_count: int


class BatchDeleteReply(Done):
    """A batch delete's reply."""

    data: BatchDeleted


@router.post("/knowledge/batch-delete")
def batch_delete_knowledge(body: BatchDeleteBody, tenant: TenantDep, container: ContainerDep) -> BatchDeleteReply:
    """Several documents of one knowledge base, all or none.

    An id that is not one of its documents refuses the whole batch. Done before the reply (WeKnora queues a task; the
    task id names this one).
    """
    kb = knowledge_base_of(container, tenant, body.kb_id)
    ids = list(dict.fromkeys(body.ids))
    for knowledge_id in ids:
        document = container.knowledge.document(tenant.id, knowledge_id)
        if document is None or document.knowledge_base_id != kb.id:
            raise ApiError(422, "invalid_field", f"{knowledge_id} is not a document of knowledge base {kb.id}", "ids")
    deleted = [i for i in ids if container.removal.delete_document(tenant.id, i)]
    return BatchDeleteReply(
        message="Batch delete task submitted",
        data=BatchDeleted(task_id=f"kg_delete_{uuid.uuid4().hex}", deleted_count=len(deleted)),
    )
