"""Sign-in for WeKnora's web app: password hashes (bcrypt), JWT access and refresh tokens (PyJWT), login throttling.

A token names its user, the user's tenant, its kind (``access`` or ``refresh``), the user's token version (a
password change raises it: older tokens are refused) and an id (a logout revokes it). Tokens are signed with
HS256 and the deployment's secret, which the user store generates at first use and keeps.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Literal

import bcrypt
import jwt

from ragline.store.ids import new_id
from ragline.store.users import User, UserStore

TokenKind = Literal["access", "refresh"]
ACCESS_TTL_S = 2 * 3600
REFRESH_TTL_S = 7 * 24 * 3600
_ALGORITHM = "HS256"
_ISSUER = "ragline"
# bcrypt reads at most 72 bytes of a password: a longer one is refused rather than silently cut.
MAX_PASSWORD_BYTES = 72


def hash_password(password: str) -> str:
    """The bcrypt hash of ``password`` (salted; cost 12)."""
    return bcrypt.hashpw(password.encode("utf-8"), bcrypt.gensalt(rounds=12)).decode("ascii")


def password_matches(password: str, password_hash: str) -> bool:
    """Whether ``password`` is the one ``password_hash`` was made from (constant time)."""
    raw = password.encode("utf-8")
    return len(raw) <= MAX_PASSWORD_BYTES and bcrypt.checkpw(raw, password_hash.encode("ascii"))


@functools.cache
def _absent_hash() -> str:
    """A hash to check against when the e-mail is unknown: a wrong address takes as long as a wrong password."""
    return hash_password("absent")


def check_credentials(users: UserStore, email: str, password: str) -> User | None:
    """The user with this e-mail and password, or None (the same work whether or not the address is known)."""
    user = users.by_email(email)
    matches = password_matches(password, user.password_hash if user else _absent_hash())
    return user if user is not None and matches else None


def looks_like_token(credential: str) -> bool:
    """A JWT (three dot-separated parts) rather than an API key."""
    return credential.count(".") == 2


@dataclass(frozen=True)
class Claims:
    """What a verified token says."""

    user_id: str
    tenant_id: str
    kind: TokenKind
    version: int
    jti: str
    expires_at: float


class InvalidToken(Exception):
    """A token that is forged, expired, revoked, of the wrong kind or of a user who changed their password."""


def issue_token(users: UserStore, user: User, kind: TokenKind) -> str:
    """A signed token of ``kind`` for ``user``."""
    now = int(time.time())
    claims = {
        "iss": _ISSUER,
        "sub": user.id,
        "tid": user.tenant_id,
        "typ": kind,
        "ver": user.token_version,
        "jti": new_id(),
        "iat": now,
        "exp": now + (ACCESS_TTL_S if kind == "access" else REFRESH_TTL_S),
    }
    return jwt.encode(claims, users.signing_secret(), algorithm=_ALGORITHM)


def verify_token(users: UserStore, token: str, kind: TokenKind) -> tuple[Claims, User]:
    """The claims of a valid token of ``kind`` and its user; :class:`InvalidToken` otherwise."""
    try:
        raw = jwt.decode(
            token,
            users.signing_secret(),
            algorithms=[_ALGORITHM],
            issuer=_ISSUER,
            options={"require": ["exp", "iat", "sub", "jti", "iss"]},
        )
    except jwt.ExpiredSignatureError:
        raise InvalidToken("token expired") from None
    except jwt.InvalidTokenError:
        raise InvalidToken("invalid token") from None
    claims = Claims(
        user_id=str(raw["sub"]),
        tenant_id=str(raw.get("tid", "")),
        kind=raw.get("typ", ""),
        version=int(raw.get("ver", -1)),
        jti=str(raw["jti"]),
        expires_at=float(raw["exp"]),
    )
    if claims.kind != kind:
        raise InvalidToken(f"not an {kind} token" if kind == "access" else f"not a {kind} token")
    user = users.by_id(claims.user_id)
    if user is None or user.tenant_id != claims.tenant_id or user.token_version != claims.version:
        raise InvalidToken("token no longer valid")
    if users.is_revoked(claims.jti):
        raise InvalidToken("token revoked")
    return claims, user


class LoginThrottle:
    """At most ``attempts`` failed logins per e-mail address and per client within ``window_s`` (in this process).

    A success does not reset the count: guessing passwords between correct logins gains nothing.
    """

    def __init__(self, attempts: int = 5, window_s: float = 300.0) -> None:
        """A throttle allowing ``attempts`` failures per ``window_s`` seconds."""
        self.attempts = attempts
        self.window_s = window_s
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, key: str, now: float) -> deque[float]:
        times = self._failures.setdefault(key, deque())
        while times and now - times[0] > self.window_s:
            times.popleft()
        return times

    def retry_after(self, *keys: str) -> int:
        """Seconds until another attempt is allowed for any of ``keys``; 0 when one is allowed now."""
        now = time.monotonic()
        with self._lock:
            waits = [
                self.window_s - (now - times[0])
                for times in (self._recent(k, now) for k in keys)
                if len(times) >= self.attempts
            ]
        return int(max(waits)) + 1 if waits else 0

    def failed(self, *keys: str) -> None:
        """Count a failed attempt against each of ``keys``."""
        now = time.monotonic()
        with self._lock:
            for key in keys:
                self._recent(key, now).append(now)
            if len(self._failures) > 10_000:  # forget keys with no recent failure
                for stale in [k for k, times in self._failures.items() if not self._recent(k, now)]:
                    del self._failures[stale]
