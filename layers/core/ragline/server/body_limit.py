"""One size limit for every request body (every upload route, JSON or multipart, ragline's and WeKnora's)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ragline.server.errors import error_body

# Multipart boundaries and part headers around a file held to the limit itself.
MULTIPART_OVERHEAD = 64 * 1024


class BodySizeLimit:
    """Pure ASGI middleware: a request whose Content-Length passes the limit is answered 413 before its body is read.

    Routes that read bodies themselves also stop chunked bodies (no Content-Length) at the limit
    (:func:`ragline.ingest.uploads.read_body`), and a multipart file is held to it on its own.
    """

    def __init__(self, app: Any, limit: Callable[[], int]) -> None:
        """The middleware around ``app``; ``limit()`` gives the current limit in bytes."""
        self._app = app
        self._limit = limit

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Answer 413 for an HTTP request declaring a body over the limit; pass everything else on."""
        if scope["type"] == "http":
            limit = self._limit()
            for name, value in scope.get("headers", []):
                if name == b"content-length" and value.isdigit() and int(value) > limit + MULTIPART_OVERHEAD:
                    await _too_large(send, limit)
                    return
        await self._app(scope, receive, send)


async def _too_large(send: Any, limit: int) -> None:
    body = json.dumps(error_body(413, "file_too_large", f"the upload exceeds {limit} bytes", "file")).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})
