"""``X-Request-ID``.

Echoed on every reply (a new one when the client sent none or an unusable one), as WeKnora's clients and proxies expect,
so a client's id can be found in the server's logs.
"""

from __future__ import annotations

import re
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER = b"x-request-id"
# What is echoed must be safe in a header and a log line: visible ASCII, bounded.
_USABLE = re.compile(rb"^[\x21-\x7e]{1,128}$")


class RequestIdMiddleware:
    """Pure ASGI (no response buffering), so server-sent events stream through untouched."""

    def __init__(self, app: ASGIApp) -> None:
        """The middleware around ``app``."""
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on with its id, and echo the id on the reply's headers."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = next((value for name, value in scope.get("headers", []) if name == HEADER), b"")
        request_id = sent if _USABLE.match(sent) else str(uuid.uuid4()).encode()
        scope.setdefault("state", {})["request_id"] = request_id.decode()

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != HEADER]
                message["headers"] = [*headers, (HEADER, request_id)]
            await send(message)

        await self.app(scope, receive, send_with_id)
