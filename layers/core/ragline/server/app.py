"""The HTTP API: knowledge bases, documents, sessions, questions, streams and stop (SPEC §3-4).

One API in WeKnora's wire format (``server/wire.py``): WeKnora's routes for what ragline does, and
ragline's own routes beside them. One router per resource under ``server/routes/``; this module wires
them to a container and a launcher.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from starlette.routing import BaseRoute

from ragline import __version__
from ragline.container import Container
from ragline.runtime.turns import TurnLauncher
from ragline.server.body_limit import RequestGuard
from ragline.server.deps import authenticate, tenant_of
from ragline.server.errors import ERROR_REPLIES, ApiError, install_error_handlers
from ragline.server.request_id import RequestIdMiddleware
from ragline.server.routes import (
    agents,
    auth,
    chat,
    chunks,
    documents,
    faq,
    images,
    initialization,
    knowledge,
    knowledge_bases,
    messages,
    models,
    search,
    sessions,
    system,
    tags,
    tenant_settings,
    unconfigured,
)
from ragline.server.routes.memories import memory_router

# The chat page: plain ES modules and CSS, served as they are (no build step).
WEB_DIR = Path(__file__).with_name("web")
# Where `make web-vendor` installs the page's libraries from npm, in a checkout (layers/core/ragline/server/app.py).
CHECKOUT_VENDOR_DIR = Path(__file__).resolve().parents[4] / "build" / "web-vendor"
# The page's libraries, each one file served at /vendor/<name> (what the page imports, and only that).
VENDOR_FILES = {"highlight.min.js": Path("node_modules/@highlightjs/cdn-assets/es/highlight.min.js")}

ROUTERS = (
    auth.router,
    knowledge_bases.router,
    initialization.router,
    knowledge.router,
    tags.router,
    faq.router,
    documents.router,
    chunks.router,
    images.router,
    sessions.router,
    messages.router,
    search.router,
    models.router,
    agents.router,
    system.router,
    tenant_settings.router,
    unconfigured.router,
    chat.router,
    chat.stream_router,
)


def flat_routes(routes: Sequence[BaseRoute]) -> list[BaseRoute]:
    """The app's routes one by one, as the guard matches them.

    Recent FastAPI keeps an included router as one entry (``original_router``): its routes are listed in its place.
    ragline's routers carry their prefix themselves (``APIRouter(prefix=...)``), never ``include_router``'s.
    """
    flat: list[BaseRoute] = []
    for route in routes:
        included = getattr(route, "original_router", None)
        flat.extend(flat_routes(included.routes) if included is not None else [route])
    return flat


def _guard(app: FastAPI, container: Container) -> None:
    """The key checked and the body bounded before the body is read; the request id outermost, on every reply."""
    app.add_middleware(
        RequestGuard,
        routes=lambda: flat_routes(app.router.routes),
        limits=lambda: container.config.limits,
        key_dependency=tenant_of,
        authenticate=authenticate,
    )
    app.add_middleware(RequestIdMiddleware)


def _healthz(app: FastAPI) -> None:
    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        return {"status": "ok", "version": __version__}


def create_app(
    container: Container,
    launcher: TurnLauncher,
    *,
    on_shutdown: Callable[[], Awaitable[None]] | None = None,
    stream_base_url: str = "",
    uploads: Any = None,
) -> FastAPI:
    """The whole API.

    ``uploads`` (the AWS runtime's ``LargeUploads``) adds the routes of files sent through object storage, beyond a
    request's size limit.
    """

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
        # Every route checks the key and its input: the error replies each may give, in OpenAPI.
        responses=ERROR_REPLIES,
    )
    install_error_handlers(app)
    _guard(app, container)
    app.state.container = container
    app.state.launcher = launcher
    # In AWS the stream is served by another function (stream_reader's URL); embedded, by this server.
    app.state.stream_base_url = stream_base_url

    _healthz(app)
    for router in ROUTERS:
        app.include_router(router)
    if uploads is not None:
        from ragline.server.routes import uploads as upload_routes

        app.state.uploads = uploads
        app.include_router(upload_routes.router)
    # Long-term memory: list and delete one's memories (the user within the tenant is X-User-Id).
    app.include_router(memory_router(lambda: container.memories, tenant_of))

    # The chat page at / and its modules under /static/ (the page holds no key: it asks for one once).
    app.mount("/static", StaticFiles(directory=WEB_DIR), name="static")
    _vendor(app, container.settings.web_vendor_dir if container is not None else None)

    # Without a container only the API's schema is built (its OpenAPI document): no page to serve.
    web_app_dir = container.settings.web_app_dir if container is not None else None
    if web_app_dir is not None:
        _web_app(app, web_app_dir)
        return app

    @app.get("/", include_in_schema=False)
    async def chat_page() -> FileResponse:
        return FileResponse(WEB_DIR / "index.html", headers={"Cache-Control": "no-cache"})

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> FileResponse:
        # Browsers ask for /favicon.ico whatever the page links: the page's SVG icon.
        return FileResponse(
            WEB_DIR / "favicon.svg", media_type="image/svg+xml", headers={"Cache-Control": "max-age=86400"}
        )

    return app


def _vendor(app: FastAPI, configured: Path | None) -> None:
    """The page's libraries at ``/vendor/<name>``.

    From ``configured`` (RAGLINE_WEB_VENDOR_DIR), else the checkout's build/web-vendor; a library not installed
    answers 404 and the page does without it.
    """
    root = configured or CHECKOUT_VENDOR_DIR

    @app.get("/vendor/{name}", include_in_schema=False)
    async def vendor_file(name: str) -> FileResponse:
        relative = VENDOR_FILES.get(name)
        path = root / relative if relative is not None else None
        if path is None or not path.is_file():
            raise ApiError(404, "not_found", f"{name} is not installed (make web-vendor)", field="name")
        return FileResponse(path, media_type="text/javascript", headers={"Cache-Control": "max-age=86400"})


def _web_app(app: FastAPI, root: Path) -> None:
    """A built single-page app at ``/`` (WeKnora's): its files as they are, any other path its ``index.html``.

    What nginx does in front of WeKnora; the API stays under ``/api/`` on the same origin.
    """
    root = root.resolve()
    index = root / "index.html"
    if not index.is_file():
        raise ValueError(f"{root} holds no index.html: not a built web app")

    @app.get("/{path:path}", include_in_schema=False)
    async def web_app(path: str) -> FileResponse:
        if path.startswith("api/"):
            raise ApiError(404, "not_found", "no such route")
        candidate = (root / path).resolve()
        if path and candidate.is_relative_to(root) and candidate.is_file():
            cache = "max-age=31536000, immutable" if path.startswith("assets/") else "no-cache"
            return FileResponse(candidate, headers={"Cache-Control": cache})
        return FileResponse(index, headers={"Cache-Control": "no-cache"})


def create_stream_app(container: Container, launcher: TurnLauncher) -> FastAPI:
    """The routes of an answer's stream alone.

    Follow it by offset (``/events``, WeKnora's ``continue-stream``), stop it, and ``/healthz``. What AWS's
    stream_reader serves from its function URL; everything else is ingest_turn's (a request for it here is a 404).
    """
    app = FastAPI(
        title="ragline stream",
        version=__version__,
        description="Streamed, resumable answers of ragline and their stop.",
        responses=ERROR_REPLIES,
        # The API's description is ingest_turn's (/docs there).
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    install_error_handlers(app)
    _guard(app, container)
    app.state.container = container
    app.state.launcher = launcher
    app.state.stream_base_url = ""
    _healthz(app)
    app.include_router(chat.stream_router)
    return app
