"""Accounts of WeKnora's web app: users (one tenant each), revoked tokens and the token-signing secret.

Two stores with one protocol: SQLite for the embedded runtime (the signing secret generated at first use and kept
in the database), the tenants table on AWS (items ``user#<id>``, ``email#<email>`` and ``revoked#<jti>``; the
signing secret is a Secrets Manager secret the template generates, never an item). Passwords arrive hashed
(``server/accounts.py``).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any, Protocol

from botocore.exceptions import ClientError
from pydantic import BaseModel

from ragline.store.db import Database
from ragline.store.ids import new_id, utc_now

_USER_COLUMNS = "id, email, username, password_hash, tenant_id, token_version, created_at, updated_at"


class User(BaseModel):
    """A person who signs in with an e-mail address and a password; they own one tenant."""

    id: str
    email: str
    username: str
    password_hash: str
    tenant_id: str
    # Raised by a password change: every token issued before is refused.
    token_version: int = 0
    created_at: str
    updated_at: str


class DuplicateEmail(Exception):
    """Another user signed up with this e-mail address."""


class UserStore(Protocol):
    """Users, revoked tokens and the secret tokens are signed with."""

    def create(self, email: str, username: str, password_hash: str, tenant_id: str) -> User:
        """A new user; an e-mail address already used raises :class:`DuplicateEmail`."""
        ...

    def by_email(self, email: str) -> User | None:
        """The user signed up with ``email`` (compared lower-cased), or None."""
        ...

    def by_id(self, user_id: str) -> User | None:
        """The user ``user_id``, or None."""
        ...

    def set_password(self, user_id: str, password_hash: str) -> User | None:
        """A new password; every token issued before it is refused from now on."""
        ...

    def revoke(self, jti: str, expires_at: float) -> None:
        """Refuse the token ``jti`` (until it would have expired anyway)."""
        ...

    def is_revoked(self, jti: str) -> bool:
        """Whether the token ``jti`` was revoked (a logout)."""
        ...

    def signing_secret(self) -> str:
        """The deployment's token-signing secret, generated at first use and kept."""
        ...


def _new_user(email: str, username: str, password_hash: str, tenant_id: str) -> User:
    now = utc_now()
    return User(
        id=new_id(),
        email=email.strip().lower(),
        username=username,
        password_hash=password_hash,
        tenant_id=tenant_id,
        created_at=now,
        updated_at=now,
    )


_SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL UNIQUE,
    username TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    tenant_id TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    token_version INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS revoked_tokens (
    jti TEXT PRIMARY KEY,
    expires_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS deployment_secrets (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


class SqliteUserStore:
    """Users in ragline's SQLite database."""

    def __init__(self, db: Database) -> None:
        """Users kept in ``db`` (its tables are created here)."""
        self._db = db
        with db.transaction() as conn:
            for statement in filter(str.strip, _SCHEMA.split(";")):
                conn.execute(statement)

    def create(self, email: str, username: str, password_hash: str, tenant_id: str) -> User:
        """A new user; an e-mail address already used raises :class:`DuplicateEmail`."""
        user = _new_user(email, username, password_hash, tenant_id)
        with self._db.transaction() as conn:
            if conn.execute("SELECT 1 FROM users WHERE email = ?", (user.email,)).fetchone():
                raise DuplicateEmail(user.email)
            conn.execute(
                f"INSERT INTO users ({_USER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                tuple(user.model_dump().values()),
            )
        return user

    def _one(self, where: str, value: str) -> User | None:
        row = self._db.query_one(f"SELECT {_USER_COLUMNS} FROM users WHERE {where} = ?", (value,))
        return User(**dict(row)) if row else None

    def by_email(self, email: str) -> User | None:
        """The user signed up with ``email`` (compared lower-cased), or None."""
        return self._one("email", email.strip().lower())

    def by_id(self, user_id: str) -> User | None:
        """The user ``user_id``, or None."""
        return self._one("id", user_id)

    def set_password(self, user_id: str, password_hash: str) -> User | None:
        """A new password; every token issued before it is refused from now on."""
        self._db.execute(
            "UPDATE users SET password_hash = ?, token_version = token_version + 1, updated_at = ? WHERE id = ?",
            (password_hash, utc_now(), user_id),
        )
        return self.by_id(user_id)

    def revoke(self, jti: str, expires_at: float) -> None:
        """Refuse the token ``jti``; revocations past their token's expiry are forgotten here."""
        with self._db.transaction() as conn:
            conn.execute("DELETE FROM revoked_tokens WHERE expires_at < ?", (time.time(),))
            conn.execute("INSERT OR IGNORE INTO revoked_tokens (jti, expires_at) VALUES (?, ?)", (jti, expires_at))

    def is_revoked(self, jti: str) -> bool:
        """Whether the token ``jti`` was revoked (a logout)."""
        return self._db.query_one("SELECT 1 FROM revoked_tokens WHERE jti = ?", (jti,)) is not None

    def signing_secret(self) -> str:
        """The deployment's token-signing secret, generated at first use and kept in the database."""
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO deployment_secrets (name, value) VALUES ('jwt', ?)", (secrets.token_urlsafe(48),)
            )
            row = conn.execute("SELECT value FROM deployment_secrets WHERE name = 'jwt'").fetchone()
        return str(row["value"])


_IS_NEW = "attribute_not_exists(pk)"


def _conditional_failure(error: ClientError) -> bool:
    code = error.response.get("Error", {}).get("Code")
    return code in {"ConditionalCheckFailedException", "TransactionCanceledException"}


class DynamoUserStore:
    """Users in the tenants table (the table the API's keys are in, already the API function's)."""

    def __init__(self, table: Any, signing_secret: Callable[[], str]) -> None:
        """Users kept in ``table`` (the tenants table: one ``pk`` key).

        Tokens are signed with what ``signing_secret`` reads: the deployment's secret, from Secrets Manager.
        """
        self._table = table
        self._signing_secret = signing_secret

    def create(self, email: str, username: str, password_hash: str, tenant_id: str) -> User:
        """A new user and its e-mail claim in one transaction; an address already used raises DuplicateEmail."""
        user = _new_user(email, username, password_hash, tenant_id)
        client, table = self._table.meta.client, self._table.name
        try:
            client.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": table,
                            "Item": {"pk": f"email#{user.email}", "user_id": user.id},
                            "ConditionExpression": _IS_NEW,
                        }
                    },
                    {"Put": {"TableName": table, "Item": {"pk": f"user#{user.id}", **user.model_dump()}}},
                ]
            )
        except ClientError as error:
            if _conditional_failure(error):
                raise DuplicateEmail(user.email) from None
            raise
        return user

    def by_id(self, user_id: str) -> User | None:
        """The user ``user_id``, or None."""
        item = self._table.get_item(Key={"pk": f"user#{user_id}"}, ConsistentRead=True).get("Item")
        if not item:
            return None
        item.pop("pk", None)
        return User(**{**item, "token_version": int(item.get("token_version", 0))})

    def by_email(self, email: str) -> User | None:
        """The user signed up with ``email`` (compared lower-cased), or None."""
        claim = self._table.get_item(Key={"pk": f"email#{email.strip().lower()}"}, ConsistentRead=True).get("Item")
        return self.by_id(str(claim["user_id"])) if claim else None

    def set_password(self, user_id: str, password_hash: str) -> User | None:
        """A new password; every token issued before it is refused from now on."""
        try:
            self._table.update_item(
                Key={"pk": f"user#{user_id}"},
                UpdateExpression="SET password_hash = :h, updated_at = :u ADD token_version :one",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeValues={":h": password_hash, ":u": utc_now(), ":one": 1},
            )
        except ClientError as error:
            if _conditional_failure(error):
                return None
            raise
        return self.by_id(user_id)

    def revoke(self, jti: str, expires_at: float) -> None:
        """Refuse the token ``jti``; ``expires_at`` is the item's TTL attribute."""
        self._table.put_item(Item={"pk": f"revoked#{jti}", "expires_at": int(expires_at) + 1})

    def is_revoked(self, jti: str) -> bool:
        """Whether the token ``jti`` was revoked (a logout)."""
        return "Item" in self._table.get_item(Key={"pk": f"revoked#{jti}"}, ConsistentRead=True)

    def signing_secret(self) -> str:
        """The deployment's token-signing secret, as the function's reader gives it (read once per container)."""
        return self._signing_secret()
