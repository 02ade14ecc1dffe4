"""WeKnora's nginx, for a test: a built web app at ``/`` and ``/api/`` passed to an API, on one origin.

WeKnora serves its app with nginx (``frontend/nginx.conf``): the files of ``dist/`` as they are, ``index.html`` for
any other path (the app's own routes), and ``/api/`` proxied to the backend unbuffered, so that its answers stream.
Put in front of the deployed stack's HTTP API (API Gateway → ``ingest_turn``), the app calls ragline on AWS as it
would behind any proxy or CDN that routes ``/api/`` to the API's URL and the rest to the app's files.
"""

from __future__ import annotations

import mimetypes
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from tests.support.streaming import ClosingStreamingResponse

# Hop-by-hop headers (RFC 9110 §7.6.1) and those the proxy sets itself: never forwarded either way.
_NOT_FORWARDED = {b"host", b"connection", b"keep-alive", b"transfer-encoding", b"content-length", b"upgrade", b"te"}
_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def _forwarded(headers: list[tuple[bytes, bytes]]) -> Iterator[tuple[bytes, bytes]]:
    return ((name, value) for name, value in headers if name.lower() not in _NOT_FORWARDED)


def web_app_front(dist: Path, api_url: str) -> Starlette:
    """An ASGI app serving ``dist`` at ``/`` (with the single-page fallback) and proxying ``/api/`` to ``api_url``."""
    root = dist.resolve()
    index = root / "index.html"
    client = httpx.AsyncClient(base_url=api_url.rstrip("/"), timeout=httpx.Timeout(None))

    async def api(request: Request) -> Response:
        upstream = client.build_request(
            request.method,
            request.url.path,
            params=request.url.query,
            headers=list(_forwarded(request.headers.raw)),
            content=await request.body(),
        )
        reply = await client.send(upstream, stream=True)

        async def body() -> AsyncIterator[bytes]:
            try:
                async for chunk in reply.aiter_raw():
                    yield chunk
            finally:
                await reply.aclose()

        response = ClosingStreamingResponse(body(), status_code=reply.status_code)
        # As sent (a repeated header such as Set-Cookie stays repeated); the length is the server's to set.
        response.raw_headers = list(_forwarded(reply.headers.raw))
        return response

    async def files(request: Request) -> Response:
        path = request.path_params["path"]
        candidate = (root / path).resolve()
        if path and candidate.is_relative_to(root) and candidate.is_file():
            media_type = mimetypes.guess_type(candidate.name)[0] or "application/octet-stream"
            return FileResponse(candidate, media_type=media_type)
        return FileResponse(index, media_type="text/html", headers={"Cache-Control": "no-cache"})

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield
        await client.aclose()

    return Starlette(
        routes=[
            Route("/api/{path:path}", api, methods=_METHODS),
            Route("/{path:path}", files, methods=["GET", "HEAD"]),
        ],
        lifespan=lifespan,
    )
