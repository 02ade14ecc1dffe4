"""What the routes depend on: the container, the launcher, the caller's tenant, and lookups that 404."""

from __future__ import annotations

from typing import Annotated

import anyio
from fastapi import Depends, Header, Request
from starlette.datastructures import FormData

from ragline.container import Container
from ragline.runtime.turns import TurnLauncher
from ragline.server.accounts import InvalidToken, looks_like_token, verify_token
from ragline.server.body_limit import TENANT_STATE
from ragline.server.errors import ApiError, not_found
from ragline.server.wire import tenant_number
from ragline.store.models import KnowledgeBase, Session, Tenant
from ragline.store.users import User

# The dependencies that only read the app's state or the request's are ``async def``: FastAPI runs a plain ``def``
# dependency on a worker thread, a hop to a thread and back for each of them on every request.


def _container(request: Request) -> Container:
    container: Container = request.app.state.container
    return container


async def container_of(request: Request) -> Container:
    """The container the app was built with (a route dependency)."""
    return _container(request)


async def launcher_of(request: Request) -> TurnLauncher:
    """The turn launcher the app was built with (a route dependency)."""
    launcher: TurnLauncher = request.app.state.launcher
    return launcher


async def stream_base_url_of(request: Request) -> str:
    """Where answers stream from: this server (``""``), or in AWS stream_reader's function URL."""
    base: str = request.app.state.stream_base_url
    return base.rstrip("/")


ContainerDep = Annotated[Container, Depends(container_of)]
LauncherDep = Annotated[TurnLauncher, Depends(launcher_of)]
StreamBaseDep = Annotated[str, Depends(stream_base_url_of)]


_BEARER = "bearer "
# Where authenticate leaves the id of a signed-in user (a web-app token, not an API key).
ACCOUNT_STATE = "account_id"


def account_id_of(request: Request) -> str:
    """The signed-in user's id when the caller sent a web-app token; "" for an API key."""
    return str(getattr(request.state, ACCOUNT_STATE, "") or "")


def authenticate(request: Request) -> Tenant:
    """The caller's tenant from its API key or its user's access token, read from the headers alone (never the body).

    A web-app user's JWT, sent as ``Authorization: Bearer <token>``, is their own tenant's. Keys are sent as ``X-API-Key`` or ``Authorization: Bearer <key>`` (WeKnora's clients send either). ``X-Tenant-ID``, when
    sent, must name the key's own tenant (its number, or its id): the key alone decides the tenant, so the header can
    confirm it and never widen it.

    The request guard (:mod:`ragline.server.body_limit`) calls this before a byte of the body is read, so a keyless
    request costs nothing; :func:`tenant_of`, the routes' dependency, then finds its answer.
    """
    headers = request.headers
    x_api_key, authorization = headers.get("x-api-key"), headers.get("authorization")
    x_tenant_id = headers.get("x-tenant-id")
    key = (x_api_key or "").strip()
    if not key and authorization and authorization[: len(_BEARER)].lower() == _BEARER:
        key = authorization[len(_BEARER) :].strip()
    container = _container(request)
    if looks_like_token(key):
        # A web-app user's access token: their own tenant.
        user = account_of(container, key)
        setattr(request.state, ACCOUNT_STATE, user.id)
        tenant = container.tenants.by_id(user.tenant_id)
    else:
        tenant = container.tenants.for_key(key)
    if tenant is None:
        field = "X-API-Key" if x_api_key is not None or authorization is None else "Authorization"
        raise ApiError(401, "unauthorized", "a valid X-API-Key header (or Authorization: Bearer) is required", field)
    if x_tenant_id is not None and x_tenant_id.strip() not in {str(tenant_number(tenant.id)), tenant.id}:
        raise ApiError(403, "forbidden", "X-Tenant-ID does not match the API key's tenant", "X-Tenant-ID")
    return tenant


async def tenant_of(
    request: Request,
    x_api_key: Annotated[str | None, Header()] = None,
    authorization: Annotated[str | None, Header()] = None,
    x_tenant_id: Annotated[str | None, Header()] = None,
) -> Tenant:
    """The caller's tenant (every route depends on it): :func:`authenticate`'s, as the request guard found it.

    The header parameters describe the API's auth in OpenAPI; :func:`authenticate` reads them (its store lookups on
    a worker thread, never on the loop).
    """
    known = getattr(request.state, TENANT_STATE, None)
    if isinstance(known, Tenant):
        return known
    return await anyio.to_thread.run_sync(authenticate, request)


def account_of(container: Container, token: str) -> User:
    """The user of a valid access token; a 401 otherwise (which check failed is not said)."""
    if container.users is None:
        raise ApiError(401, "unauthorized", "accounts are not enabled on this deployment", "Authorization")
    try:
        return verify_token(container.users, token, "access")[1]
    except InvalidToken:
        raise ApiError(401, "unauthorized", "invalid or expired token", "Authorization") from None


TenantDep = Annotated[Tenant, Depends(tenant_of)]
# The user within the tenant (long-term memory is per user); name the parameter ``x_user_id``.
UserIdHeader = Annotated[str, Header(max_length=200)]


def knowledge_base_of(container: Container, tenant: Tenant, kb_id: str) -> KnowledgeBase:
    """The tenant's knowledge base ``kb_id``; a 404 naming ``kb_id`` otherwise."""
    kb = container.knowledge.knowledge_base(tenant.id, kb_id)
    if kb is None:
        raise not_found("knowledge base", "kb_id")
    return kb


def session_of(container: Container, tenant: Tenant, session_id: str) -> Session:
    """The tenant's session ``session_id``; a 404 naming ``session_id`` otherwise."""
    session = container.sessions.session(tenant.id, session_id)
    if session is None:
        raise not_found("session", "session_id")
    return session


async def read_upload(container: Container, form: FormData, default_name: str) -> tuple[str, bytes]:
    """The multipart ``file`` field's name and bytes, refused when missing or over the upload limit."""
    upload = form.get("file")
    if upload is None or isinstance(upload, str):
        raise ApiError(422, "missing_field", "file is required", "file")
    raw = await upload.read()
    limit = container.config.limits.max_upload_bytes
    if len(raw) > limit:
        raise ApiError(413, "file_too_large", f"file exceeds {limit} bytes", "file")
    return upload.filename or default_name, raw


def check_query_length(container: Container, query: str) -> None:
    """Refuse a query over the configured length (422 naming ``query``)."""
    limit = container.config.limits.max_query_chars
    if len(query) > limit:
        raise ApiError(422, "query_too_long", f"query exceeds {limit} characters", "query")
