"""The HTTP API: knowledge bases, documents, sessions, questions, streams and stop (SPEC §3-4)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.datastructures import FormData

from ragline import __version__
from ragline.container import Container
from ragline.ingest.extract import UnsupportedFile, UnsupportedFileType
from ragline.ingest.faq import parse_entries, parse_faq_file
from ragline.ingest.service import DocumentInput, IngestResult
from ragline.memory.api import memory_router
from ragline.runtime.search import SearchBody, SearchFailed, result_view
from ragline.runtime.turns import AcceptedTurn, QuestionBody, TurnLauncher, UnknownKnowledgeBase
from ragline.server.errors import ApiError, install_error_handlers, not_found, validation_error
from ragline.server.sse import frames, sse_response
from ragline.store.models import DuplicateName, KnowledgeBase, Session, Tenant
from ragline.stream.base import stream_key
from ragline.stream.replay import start_offset
from ragline.types import ChunkType

# The chat page: plain ES modules and CSS, served as they are (no build step).
WEB_DIR = Path(__file__).with_name("web")


class KnowledgeBaseBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)
    description: str = Field(default="", max_length=2000)
    wiki_enabled: bool = False
    graph_extraction_enabled: bool = False


class DocumentBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(default="", max_length=500)
    content: str = Field(min_length=1)
    file_type: str = Field(default="markdown", pattern="^(markdown|text)$")
    description: str = Field(default="", max_length=2000)
    tags: list[str] = Field(default_factory=list, max_length=50)
    kind: Literal["document", "wiki"] = "document"


class FAQBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    entries: list[dict[str, Any]] = Field(min_length=1)
    title: str = Field(default="FAQ", max_length=500)
    tags: list[str] = Field(default_factory=list, max_length=50)


def _chunk_type(kind: str) -> str:
    return ChunkType.WIKI_PAGE if kind == "wiki" else ChunkType.TEXT


class SessionBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    knowledge_base_ids: list[str] = Field(default_factory=list)
    title: str = Field(default="", max_length=200)


class StopBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message_id: str = Field(min_length=1)


def tenant_of(request: Request, x_api_key: Annotated[str | None, Header()] = None) -> Tenant:
    """The caller's tenant from ``X-API-Key``; every route depends on it."""
    container: Container = request.app.state.container
    tenant = container.tenants.for_key(x_api_key or "")
    if tenant is None:
        raise ApiError(401, "unauthorized", "a valid X-API-Key header is required", "X-API-Key")
    return tenant


TenantDep = Annotated[Tenant, Depends(tenant_of)]


_background: set[asyncio.Task[None]] = set()


def _in_background(work: Any) -> None:
    """Keep a reference until the task ends (the loop holds only weak ones)."""
    task = asyncio.ensure_future(work)
    _background.add(task)
    task.add_done_callback(_background.discard)


def _document_reply(result: IngestResult) -> JSONResponse:
    payload = {**result.document.model_dump(), "chunk_count": result.chunk_count, "duplicate": result.duplicate}
    return JSONResponse(payload, status_code=200 if result.duplicate else 201)


def create_app(
    container: Container, launcher: TurnLauncher, *, on_shutdown: Any = None, stream_base_url: str = ""
) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        if on_shutdown is not None:
            await on_shutdown()

    app = FastAPI(
        title="ragline",
        version=__version__,
        description="Knowledge-base question answering with streamed, resumable answers.",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    app.state.container = container
    app.state.launcher = launcher
    config = container.config
    stream_config = config.stream

    def kb_of(tenant: Tenant, kb_id: str) -> KnowledgeBase:
        kb = container.knowledge.knowledge_base(tenant.id, kb_id)
        if kb is None:
            raise not_found("knowledge base", "kb_id")
        return kb

    async def read_upload(form: FormData, default_name: str) -> tuple[str, bytes]:
        """The multipart ``file`` field's name and bytes, refused when missing or over the upload limit."""
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise ApiError(422, "missing_field", "file is required", "file")
        raw = await upload.read()
        if len(raw) > config.limits.max_upload_bytes:
            raise ApiError(413, "file_too_large", f"file exceeds {config.limits.max_upload_bytes} bytes", "file")
        return upload.filename or default_name, raw

    def session_of(tenant: Tenant, session_id: str) -> Session:
        session = container.sessions.session(tenant.id, session_id)
        if session is None:
            raise not_found("session", "session_id")
        return session

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    # Knowledge bases -------------------------------------------------------------------------------------
    @app.post("/api/v1/knowledge-bases", status_code=201, tags=["knowledge"])
    async def create_knowledge_base(body: KnowledgeBaseBody, tenant: TenantDep) -> dict[str, Any]:
        try:
            kb = container.knowledge.create_knowledge_base(
                tenant.id,
                body.name.strip(),
                container.models.default_embedder_id,
                body.description,
                wiki_enabled=body.wiki_enabled,
                graph_extraction_enabled=body.graph_extraction_enabled,
            )
        except DuplicateName:
            raise ApiError(409, "duplicate_name", f"a knowledge base named {body.name!r} exists", "name") from None
        return {**kb.model_dump(), "document_count": 0}

    @app.get("/api/v1/knowledge-bases", tags=["knowledge"])
    async def list_knowledge_bases(tenant: TenantDep) -> dict[str, Any]:
        bases = container.knowledge.list_knowledge_bases(tenant.id)
        counts = container.knowledge.document_counts([kb.id for kb in bases])
        return {"items": [{**kb.model_dump(), "document_count": counts.get(kb.id, 0)} for kb in bases]}

    @app.get("/api/v1/knowledge-bases/{kb_id}", tags=["knowledge"])
    async def get_knowledge_base(kb_id: str, tenant: TenantDep) -> dict[str, Any]:
        kb = kb_of(tenant, kb_id)
        return {
            **kb.model_dump(),
            "document_count": container.knowledge.document_counts([kb.id]).get(kb.id, 0),
        }

    @app.post(
        "/api/v1/knowledge-bases/{kb_id}/documents",
        status_code=201,
        tags=["knowledge"],
        openapi_extra={
            "requestBody": {
                "content": {
                    "multipart/form-data": {
                        "schema": {
                            "type": "object",
                            "properties": {"file": {"type": "string", "format": "binary"}},
                        }
                    },
                    "application/json": {"schema": DocumentBody.model_json_schema()},
                },
                "required": True,
            }
        },
    )
    async def upload_document(kb_id: str, request: Request, tenant: TenantDep) -> JSONResponse:
        """A file (multipart ``file``) or text (JSON ``{"title", "content"}``); indexed before the reply."""
        kb = kb_of(tenant, kb_id)
        content_type = request.headers.get("content-type", "")
        if content_type.startswith("multipart/form-data"):
            form = await request.form(max_files=1)
            filename, raw = await read_upload(form, "upload.txt")
            title = str(form.get("title") or "")
            tags = [t.strip() for t in str(form.get("tags") or "").split(",") if t.strip()]
            kind = str(form.get("kind") or "document")
            if kind not in ("document", "wiki"):
                raise ApiError(422, "invalid_field", "kind must be document or wiki", "kind")
            try:
                result = await asyncio.to_thread(
                    container.ingest.ingest_bytes,
                    kb,
                    filename,
                    raw,
                    title=title,
                    tags=tags,
                    chunk_type=_chunk_type(kind),
                )
            except UnsupportedFile as exc:
                status = 415 if isinstance(exc, UnsupportedFileType) else 422
                raise ApiError(status, "unsupported_file", str(exc), "file") from None
            if not result.duplicate:
                _in_background(container.index_graph(kb, result.document))
            return _document_reply(result)
        else:
            try:
                body = DocumentBody.model_validate_json(await request.body())
            except ValidationError as exc:
                raise validation_error(exc.errors()) from None
            if not body.content.strip():
                raise ApiError(422, "empty_document", "content must not be empty", "content")
            kwargs: dict[str, Any] = {
                "content": body.content,
                "title": body.title,
                "file_type": body.file_type,
                "description": body.description,
            }
        item = DocumentInput(**kwargs, tags=body.tags, chunk_type=_chunk_type(body.kind))
        results = await asyncio.to_thread(container.ingest.ingest_many, kb, [item])
        if not results[0].duplicate:
            # A model call per chunk: the document is searchable now, its graph follows.
            _in_background(container.index_graph(kb, results[0].document))
        return _document_reply(results[0])

    @app.post(
        "/api/v1/knowledge-bases/{kb_id}/faq",
        status_code=201,
        tags=["knowledge"],
        openapi_extra={
            "requestBody": {
                "content": {
                    "application/json": {"schema": FAQBody.model_json_schema()},
                    "multipart/form-data": {
                        "schema": {"type": "object", "properties": {"file": {"type": "string", "format": "binary"}}}
                    },
                },
                "required": True,
            }
        },
    )
    async def import_faq(kb_id: str, request: Request, tenant: TenantDep) -> JSONResponse:
        """FAQ entries (standard question, similar and negative questions, answers) as JSON, or a JSON/CSV file."""
        kb = kb_of(tenant, kb_id)
        try:
            if request.headers.get("content-type", "").startswith("multipart/form-data"):
                form = await request.form(max_files=1)
                filename, raw = await read_upload(form, "faq.json")
                entries = parse_faq_file(filename, raw)
                title = str(form.get("title") or "FAQ")
                tags = [t.strip() for t in str(form.get("tags") or "").split(",") if t.strip()]
            else:
                try:
                    body = FAQBody.model_validate_json(await request.body())
                except ValidationError as exc:
                    raise validation_error(exc.errors()) from None
                entries, title, tags = parse_entries(body.entries), body.title, body.tags
        except UnsupportedFile as exc:
            status = 415 if isinstance(exc, UnsupportedFileType) else 422
            raise ApiError(status, "invalid_faq", str(exc), "entries") from None
        result = await asyncio.to_thread(container.ingest.ingest_faq, kb, entries, title=title, tags=tags)
        return _document_reply(result)

    @app.get("/api/v1/knowledge-bases/{kb_id}/documents", tags=["knowledge"])
    async def list_documents(
        kb_id: str, tenant: TenantDep, limit: Annotated[int, Query(ge=1, le=1000)] = 100, offset: int = 0
    ) -> dict[str, Any]:
        kb = kb_of(tenant, kb_id)
        docs = container.knowledge.documents(tenant.id, kb.id, limit=limit, offset=max(0, offset))
        return {"items": [d.model_dump() for d in docs]}

    @app.get("/api/v1/knowledge-bases/{kb_id}/documents/{document_id}/chunks", tags=["knowledge"])
    async def list_chunks(kb_id: str, document_id: str, tenant: TenantDep) -> dict[str, Any]:
        kb = kb_of(tenant, kb_id)
        document = container.knowledge.document(tenant.id, document_id)
        if document is None or document.knowledge_base_id != kb.id:
            raise not_found("document", "document_id")
        chunks = container.knowledge.chunks_of_document(tenant.id, document_id)
        return {"items": [c.model_dump() for c in chunks]}

    @app.get("/api/v1/chunks/{chunk_id}", tags=["knowledge"])
    async def get_chunk(chunk_id: str, tenant: TenantDep) -> dict[str, Any]:
        chunks = container.knowledge.chunks(tenant.id, [chunk_id])
        if not chunks:
            raise not_found("chunk", "chunk_id")
        return chunks[0].model_dump()

    # Sessions and messages ---------------------------------------------------------------------------------
    @app.post("/api/v1/sessions", status_code=201, tags=["sessions"])
    async def create_session(body: SessionBody, tenant: TenantDep) -> dict[str, Any]:
        ids = list(dict.fromkeys(body.knowledge_base_ids))
        found = {kb.id for kb in container.knowledge.knowledge_bases(tenant.id, ids)}
        for kb_id in ids:
            if kb_id not in found:
                raise not_found(f"knowledge base {kb_id}", "knowledge_base_ids")
        return container.sessions.create_session(tenant.id, ids, title=body.title).model_dump()

    @app.get("/api/v1/sessions", tags=["sessions"])
    async def list_sessions(tenant: TenantDep) -> dict[str, Any]:
        return {"items": [s.model_dump() for s in container.sessions.sessions(tenant.id)]}

    @app.get("/api/v1/sessions/{session_id}", tags=["sessions"])
    async def get_session(session_id: str, tenant: TenantDep) -> dict[str, Any]:
        return session_of(tenant, session_id).model_dump()

    @app.get("/api/v1/sessions/{session_id}/messages", tags=["sessions"])
    async def list_messages(session_id: str, tenant: TenantDep) -> dict[str, Any]:
        session = session_of(tenant, session_id)
        return {"items": [m.model_dump() for m in container.sessions.messages(tenant.id, session.id)]}

    @app.post("/api/v1/knowledge-search", tags=["knowledge"])
    async def knowledge_search(body: SearchBody, tenant: TenantDep) -> dict[str, Any]:
        """Ranked passages through the chat pipeline's search → rerank → MMR path, with their scores."""
        if len(body.query) > config.limits.max_query_chars:
            raise ApiError(422, "query_too_long", f"query exceeds {config.limits.max_query_chars} characters", "query")
        try:
            results = await container.search.search(tenant.id, body)
        except UnknownKnowledgeBase as exc:
            raise not_found(f"knowledge base {exc.value}", exc.field) from None
        except SearchFailed as exc:
            raise ApiError(502, exc.error.error_type, exc.error.message) from None
        return {"items": [result_view(r) for r in results]}

    # Questions, streams, stop --------------------------------------------------------------------------------
    async def accept(session: Session, body: QuestionBody, user_id: str = "") -> AcceptedTurn:
        if len(body.query) > config.limits.max_query_chars:
            raise ApiError(422, "query_too_long", f"query exceeds {config.limits.max_query_chars} characters", "query")
        try:
            turn = await container.turns.accept(session, body, user_id)
        except UnknownKnowledgeBase as exc:
            raise not_found(f"{exc.field[:-4].replace('_', ' ')} {exc.value}", exc.field) from None
        if not turn.duplicate:
            await launcher.launch(turn)
        return turn

    @app.post("/api/v1/sessions/{session_id}/questions", status_code=202, tags=["chat"])
    async def ask(
        session_id: str,
        body: QuestionBody,
        tenant: TenantDep,
        x_user_id: Annotated[str, Header(max_length=200)] = "",
    ) -> dict[str, str]:
        session = session_of(tenant, session_id)
        ids = (await accept(session, body, x_user_id)).ids()
        # In AWS the stream is served by another function (stream_reader's URL); embedded, by this server.
        ids["stream_url"] = stream_base_url.rstrip("/") + ids["stream_url"]
        return ids

    @app.post("/api/v1/knowledge-chat/{session_id}", tags=["chat"], response_class=JSONResponse)
    async def knowledge_chat(
        session_id: str,
        body: QuestionBody,
        tenant: TenantDep,
        x_user_id: Annotated[str, Header(max_length=200)] = "",
    ) -> Any:
        """Ask and stream in one call (WeKnora-compatible)."""
        session = session_of(tenant, session_id)
        turn = await accept(session, body, x_user_id)
        return sse_response(
            frames(
                container.stream,
                turn.key,
                0,
                stream_config,
                request_id=turn.request.request_id,
                session_id=session.id,
                assistant_message_id=turn.assistant_message.id,
            ),
            stream_config,
        )

    async def stream_message(
        tenant: Tenant, session_id: str, message_id: str, last_event_id: str | None, offset: int | None
    ) -> Any:
        session = session_of(tenant, session_id)
        message = container.sessions.message(tenant.id, session.id, message_id)
        if message is None or message.role != "assistant":
            raise not_found("message", "message_id")
        key = stream_key(session.id, message.id)
        if not await container.stream.has_events(key):
            raise not_found("stream", "message_id")
        try:
            start = start_offset(last_event_id, offset)
        except ValueError as exc:
            field = "Last-Event-ID" if last_event_id is not None else "offset"
            raise ApiError(422, "invalid_field", str(exc), field) from None
        return sse_response(
            frames(
                container.stream,
                key,
                start,
                stream_config,
                request_id=message.request_id,
                session_id=session.id,
                assistant_message_id=message.id,
            ),
            stream_config,
        )

    @app.get("/api/v1/sessions/{session_id}/messages/{message_id}/events", tags=["chat"])
    async def message_events(
        session_id: str,
        message_id: str,
        tenant: TenantDep,
        offset: Annotated[int | None, Query()] = None,
        last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
    ) -> Any:
        return await stream_message(tenant, session_id, message_id, last_event_id, offset)

    @app.get("/api/v1/sessions/continue-stream/{session_id}", tags=["chat"])
    async def continue_stream(
        session_id: str,
        tenant: TenantDep,
        message_id: Annotated[str, Query(min_length=1)],
        offset: Annotated[int | None, Query()] = None,
        last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
    ) -> Any:
        return await stream_message(tenant, session_id, message_id, last_event_id, offset)

    @app.post("/api/v1/sessions/{session_id}/stop", tags=["chat"])
    async def stop(session_id: str, body: StopBody, tenant: TenantDep) -> dict[str, str]:
        session = session_of(tenant, session_id)
        try:
            status = await container.turns.stop(launcher, tenant.id, session.id, body.message_id)
        except LookupError:
            raise not_found("message", "message_id") from None
        if status == "already_completed":
            return {"status": status, "message": "Message already completed"}
        return {"status": status, "message": "Generation stopped"}

    # Long-term memory: list and delete one's memories (the user within the tenant is X-User-Id).
    app.include_router(memory_router(lambda: container.memories, tenant_of))

    # The chat page at / and its modules under /static/ (the page holds no key: it asks for one once).
    app.mount("/static", StaticFiles(directory=WEB_DIR), name="static")

    @app.get("/", include_in_schema=False)
    async def chat_page() -> FileResponse:
        return FileResponse(WEB_DIR / "index.html", headers={"Cache-Control": "no-cache"})

    return app
