"""WeKnora's ``/auth`` routes: accounts for its web app (register, login, refresh, logout, me, password).

Registering creates the user's own tenant (as WeKnora's does) with an API key, shown once. Tokens are JWTs
(``server/accounts.py``); the routes that call a store are plain ``def`` (run in the threadpool).
OIDC is off and ``auto-setup`` answers 403 as WeKnora's standard edition does: a server any browser can reach must
not hand out an account to whoever asks first.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, Header
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from ragline.container import Container
from ragline.server.accounts import (
    InvalidToken,
    LoginThrottle,
    check_credentials,
    hash_password,
    issue_token,
    password_matches,
    verify_token,
)
from ragline.server.deps import ContainerDep, account_of
from ragline.server.errors import ApiError, error_body
from ragline.server.schemas.auth import ChangePasswordBody, LoginBody, RefreshBody, RegisterBody
from ragline.server.views import Done, Envelope
from ragline.server.wire import tenant_number
from ragline.store.models import Tenant
from ragline.store.users import DuplicateEmail, User, UserStore

logger = logging.getLogger(__name__)
router = APIRouter(prefix="/api/v1/auth", tags=["accounts"])
throttle = LoginThrottle()

_BEARER = "bearer "


class UserView(BaseModel):
    """WeKnora's user record (no password hash, ever)."""

    id: str
    username: str
    email: str
    avatar: str = ""
    tenant_id: int
    is_active: bool = True
    is_system_admin: bool = False
    can_access_all_tenants: bool = False
    created_at: str
    updated_at: str

    @classmethod
    def of(cls, user: User) -> UserView:
        """The view of ``user``."""
        return cls(
            id=user.id,
            username=user.username,
            email=user.email,
            tenant_id=tenant_number(user.tenant_id),
            created_at=user.created_at,
            updated_at=user.updated_at,
        )


class TenantView(BaseModel):
    """WeKnora's tenant (``api_key`` only in the reply to a registration: only its hash is kept)."""

    id: int
    name: str
    description: str = ""
    status: str = "active"
    business: str = ""
    storage_quota: int = 0
    storage_used: int = 0
    created_at: str
    updated_at: str
    api_key: str | None = None

    @classmethod
    def of(cls, tenant: Tenant, api_key: str | None = None) -> TenantView:
        """The view of ``tenant``."""
        return cls(
            id=tenant_number(tenant.id),
            name=tenant.name,
            created_at=tenant.created_at,
            updated_at=tenant.created_at,
            api_key=api_key,
        )


class Membership(BaseModel):
    """The user's role in a tenant: the owner of their own."""

    tenant_id: int
    tenant_name: str
    role: str = "owner"


class Registered(BaseModel):
    """A registration's reply."""

    success: bool = True
    message: str = "Registration successful"
    user: UserView
    tenant: TenantView


class LoggedIn(BaseModel):
    """A login's reply: the user, their tenant and both tokens."""

    success: bool = True
    message: str = "Login successful"
    user: UserView
    tenant: TenantView
    memberships: list[Membership]
    token: str
    refresh_token: str


class Refreshed(BaseModel):
    """New tokens for a refresh token (the old refresh token is revoked)."""

    success: bool = True
    message: str = "Token refreshed successfully"
    access_token: str
    refresh_token: str


class Capabilities(BaseModel):
    """Deployment switches the web app reads."""

    can_create_tenant: bool = False
    auto_accept_invitation: bool = False


class Me(BaseModel):
    """``/auth/me``'s data."""

    user: UserView
    tenant: TenantView
    memberships: list[Membership]
    tenant_required: bool = False
    capabilities: Capabilities = Field(default_factory=Capabilities)


class MeReply(BaseModel):
    """``{"success": true, "data": {...}}``."""

    success: bool = True
    data: Me


class Valid(BaseModel):
    """A valid token's owner."""

    success: bool = True
    valid: bool = True
    user_id: str
    tenant_id: int


class AuthConfig(BaseModel):
    """How people may sign up here."""

    success: bool = True
    registration_mode: str = "self_serve"


class OidcConfig(BaseModel):
    """OIDC sign-in: not offered by ragline."""

    success: bool = True
    enabled: bool = False
    provider_display_name: str = ""


def _users(container: Container) -> UserStore:
    if container.users is None:
        raise ApiError(403, "forbidden", "accounts are not enabled on this deployment")
    return container.users


def _token_of(authorization: str | None) -> str:
    if authorization and authorization[: len(_BEARER)].lower() == _BEARER:
        return authorization[len(_BEARER) :].strip()
    raise ApiError(401, "unauthorized", "an Authorization: Bearer <token> header is required", "Authorization")


def _tenant(container: Container, user: User) -> Tenant:
    tenant = container.tenants.by_id(user.tenant_id)
    if tenant is None:
        raise ApiError(401, "unauthorized", "invalid or expired token", "Authorization")
    return tenant


def _membership(tenant: Tenant) -> Membership:
    return Membership(tenant_id=tenant_number(tenant.id), tenant_name=tenant.name)


AuthorizationHeader = Annotated[str | None, Header()]


@router.post("/register", status_code=201)
def register(body: RegisterBody, container: ContainerDep) -> Registered:
    """A new user and their own tenant; an e-mail address already registered is refused (409)."""
    users = _users(container)
    if users.by_email(body.email) is not None:
        raise ApiError(409, "duplicate_email", "this e-mail address is already registered", "email")
    tenant, key = container.tenants.create(f"{body.username}'s workspace")
    try:
        user = users.create(body.email, body.username.strip(), hash_password(body.password), tenant.id)
    except DuplicateEmail:
        raise ApiError(409, "duplicate_email", "this e-mail address is already registered", "email") from None
    logger.info("user registered", extra={"stage": "accounts"})
    return Registered(user=UserView.of(user), tenant=TenantView.of(tenant, key))


@router.post("/login", response_model=LoggedIn)
def login(body: LoginBody, container: ContainerDep) -> Any:
    """Tokens for a right e-mail and password; 401 otherwise, and 429 after 5 failures for the address in 5 minutes."""
    users = _users(container)
    keys = (f"email#{body.email.strip().lower()}",)
    wait = throttle.retry_after(*keys)
    if wait:
        reply = error_body(429, "too_many_attempts", "too many failed logins; try again later")
        return JSONResponse(reply, status_code=429, headers={"Retry-After": str(wait)})
    user = check_credentials(users, body.email, body.password)
    if user is None:
        throttle.failed(*keys)
        raise ApiError(401, "unauthorized", "wrong e-mail address or password")
    tenant = _tenant(container, user)
    return LoggedIn(
        user=UserView.of(user),
        tenant=TenantView.of(tenant),
        memberships=[_membership(tenant)],
        token=issue_token(users, user, "access"),
        refresh_token=issue_token(users, user, "refresh"),
    )


@router.post("/refresh")
def refresh(body: RefreshBody, container: ContainerDep) -> Refreshed:
    """New access and refresh tokens; the refresh token used is revoked (each one works once)."""
    users = _users(container)
    try:
        claims, user = verify_token(users, body.refresh_token, "refresh")
    except InvalidToken:
        raise ApiError(401, "unauthorized", "invalid or expired refresh token", "refreshToken") from None
    users.revoke(claims.jti, claims.expires_at)
    return Refreshed(access_token=issue_token(users, user, "access"), refresh_token=issue_token(users, user, "refresh"))


@router.get("/validate")
def validate(container: ContainerDep, authorization: AuthorizationHeader = None) -> Valid:
    """Whether the access token is valid, and whose it is (401 when it is not)."""
    user = account_of(container, _token_of(authorization))
    return Valid(user_id=user.id, tenant_id=tenant_number(user.tenant_id))


@router.post("/logout")
def logout(container: ContainerDep, authorization: AuthorizationHeader = None) -> Done:
    """The access token is revoked."""
    users = _users(container)
    try:
        claims, _ = verify_token(users, _token_of(authorization), "access")
    except InvalidToken:
        raise ApiError(401, "unauthorized", "invalid or expired token", "Authorization") from None
    users.revoke(claims.jti, claims.expires_at)
    return Done(message="Logged out successfully")


@router.get("/me")
def me(container: ContainerDep, authorization: AuthorizationHeader = None) -> MeReply:
    """The signed-in user, their tenant and their membership in it."""
    user = account_of(container, _token_of(authorization))
    tenant = _tenant(container, user)
    return MeReply(data=Me(user=UserView.of(user), tenant=TenantView.of(tenant), memberships=[_membership(tenant)]))


@router.get("/tenant", response_model=Envelope[TenantView], response_model_exclude_none=True)
def current_tenant(container: ContainerDep, authorization: AuthorizationHeader = None) -> Envelope[TenantView]:
    """The signed-in user's tenant."""
    user = account_of(container, _token_of(authorization))
    return Envelope(data=TenantView.of(_tenant(container, user)))


def _password_policy(password: str) -> bool:
    return 8 <= len(password) <= 32 and any(c.isalpha() for c in password) and any(c.isdigit() for c in password)


def _password_error(details: str, message: str) -> JSONResponse:
    body = error_body(400, "invalid_field", message, "new_password" if details != "invalid_old_password" else None)
    body["error"]["details"] = details
    return JSONResponse(body, status_code=400)


@router.post("/change-password", response_model=Done)
def change_password(
    body: ChangePasswordBody, container: ContainerDep, authorization: AuthorizationHeader = None
) -> Any:
    """A new password (8–32 characters, letters and digits); every token issued before is refused."""
    users = _users(container)
    user = account_of(container, _token_of(authorization))
    if not password_matches(body.old_password, user.password_hash):
        return _password_error("invalid_old_password", "the current password is wrong")
    if not _password_policy(body.new_password):
        return _password_error("password_policy", "the new password needs 8-32 characters, letters and digits")
    if body.new_password == body.old_password:
        return _password_error("same_password", "the new password is the current one")
    users.set_password(user.id, hash_password(body.new_password))
    return Done(message="Password changed successfully")


@router.get("/config")
def auth_config() -> AuthConfig:
    """Anyone may register (self-serve)."""
    return AuthConfig()


@router.get("/oidc/config")
def oidc_config() -> OidcConfig:
    """OIDC is not offered."""
    return OidcConfig()


# Always a 403 (it has no successful reply to describe): answered for the web app, left out of the API's schema.
@router.post("/auto-setup", include_in_schema=False)
def auto_setup() -> JSONResponse:
    """WeKnora's Lite-edition sign-in without a password: off here (403, as WeKnora's standard edition answers)."""
    reply = error_body(403, "forbidden", "auto-setup is only available in lite edition")
    return JSONResponse(reply, status_code=403)
