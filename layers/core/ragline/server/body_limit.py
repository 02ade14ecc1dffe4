"""Before a byte of a request's body is read: its key checked, and its size bounded, chunked or not.

Every route has a body limit: a route marked :func:`upload_body` (a file, a document's text, FAQ entries, a
question with its images) takes ``limits.max_upload_bytes``; every other route ``limits.max_body_bytes`` (its
JSON is a few fields). A Content-Length over the limit is answered 413 at once; a body without one (chunked)
is counted as it arrives and answered 413 the moment it passes, the rest never read. A route that needs the
API key has it checked first: a keyless request is answered 401 before its body is read, whatever it sends.

A request cut at shutdown (its task cancelled) is answered with the error envelope (503), not the server's
plain-text 500.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragline.config import LimitsConfig
from ragline.server.errors import ApiError, error_body

# Multipart boundaries and part headers around a file held to the limit itself.
MULTIPART_OVERHEAD = 64 * 1024
# Where the guard leaves the caller's tenant for the route's own dependency (``request.state.tenant``).
TENANT_STATE = "tenant"

_UPLOAD_MARK = "__ragline_upload_body__"
_F = TypeVar("_F", bound=Callable[..., Any])


def upload_body(endpoint: _F) -> _F:
    """Marks a route whose body is an upload (``limits.max_upload_bytes``), not a small JSON body.

    Put it under the route's decorator, so the endpoint FastAPI registers carries the mark.
    """
    setattr(endpoint, _UPLOAD_MARK, True)
    return endpoint


@dataclass(frozen=True)
class _Policy:
    needs_key: bool
    upload: bool


def _depends_on(dependant: Dependant, call: Callable[..., Any]) -> bool:
    return any(d.call is call or _depends_on(d, call) for d in dependant.dependencies)


class RequestGuard:
    """Pure ASGI middleware (no buffering: server-sent events stream through it untouched)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        routes: Callable[[], Sequence[BaseRoute]],
        limits: Callable[[], LimitsConfig],
        key_dependency: Callable[..., Any],
        authenticate: Callable[[Request], Any],
    ) -> None:
        """The guard around ``app``.

        ``routes()`` are the app's routes (matched as the router will); a route depending on ``key_dependency``
        needs the key, checked by ``authenticate(request)`` (run in a worker thread: it may read a store) before
        the body is read; its result is left in ``request.state.tenant``. ``limits()`` gives the current limits.
        """
        self._app = app
        self._routes = routes
        self._limits = limits
        self._key_dependency = key_dependency
        self._authenticate = authenticate
        self._policies: dict[int, _Policy] = {}
        self._matched: Sequence[BaseRoute] | None = None  # the routes, read at the first request

    def _policy(self, scope: Scope) -> _Policy:
        if self._matched is None:
            self._matched = self._routes()
        for route in self._matched:
            match, _ = route.matches(scope)
            if match != Match.FULL:
                continue
            policy = self._policies.get(id(route))
            if policy is None:
                if isinstance(route, APIRoute):
                    needs_key = _depends_on(route.dependant, self._key_dependency)
                    policy = _Policy(needs_key, bool(getattr(route.endpoint, _UPLOAD_MARK, False)))
                else:
                    policy = _Policy(False, False)
                self._policies[id(route)] = policy
            return policy
        return _Policy(False, False)  # the router answers 404 or 405

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the key, bound the body, then pass the request on."""
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        reply = _Reply(send)
        try:
            await self._guarded(scope, receive, reply)
        except asyncio.CancelledError:
            # The server is stopping and cut this request: the client gets the envelope, then the task ends.
            if not reply.started:
                await _send_error(send, ApiError(503, "shutting_down", "the server stopped before the reply"))
            raise

    async def _guarded(self, scope: Scope, receive: Receive, reply: _Reply) -> None:
        policy = self._policy(scope)
        limits = self._limits()
        if policy.needs_key:
            try:
                tenant = await anyio.to_thread.run_sync(self._authenticate, Request(scope))
            except ApiError as error:
                await _send_error(reply, error)
                return
            scope.setdefault("state", {})[TENANT_STATE] = tenant
        if policy.upload:
            limit = limits.max_upload_bytes + MULTIPART_OVERHEAD
            too_large = ApiError(413, "file_too_large", f"the upload exceeds {limits.max_upload_bytes} bytes", "file")
        else:
            limit = limits.max_body_bytes
            too_large = ApiError(413, "body_too_large", f"the request body exceeds {limit} bytes", "body")
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > limit:
                await _send_error(reply, too_large)
                return
        await self._app(scope, _bounded(receive, reply, limit, too_large), reply)


class _Reply:
    """``send``, remembering whether the reply has begun; once the guard has answered, the app's reply is dropped."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False
        self.answered = False

    async def __call__(self, message: Message) -> None:
        if self.answered:
            return
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)


def _bounded(receive: Receive, reply: _Reply, limit: int, too_large: ApiError) -> Receive:
    """``receive`` counting the body: past ``limit`` the guard answers 413 and the app sees the client gone."""
    size = 0

    async def bounded() -> Message:
        nonlocal size
        if reply.answered:
            return {"type": "http.disconnect"}
        message = await receive()
        if message["type"] == "http.request":
            size += len(message.get("body", b""))
            if size > limit:
                if not reply.started:
                    await _send_error(reply, too_large)
                reply.answered = True
                return {"type": "http.disconnect"}
        return message

    return bounded


async def _send_error(send: Send | _Reply, error: ApiError) -> None:
    body = json.dumps(error_body(error.status, error.code, error.message, error.field)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if error.status == 503:
        headers.append((b"retry-after", b"5"))
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
    if isinstance(send, _Reply):
        send.answered = True
