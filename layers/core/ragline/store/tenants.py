"""Tenants and their API keys in SQLite. Keys are stored as SHA-256 hashes; the key itself is shown once."""

from __future__ import annotations

from ragline.store.db import Database
from ragline.store.ids import new_id, utc_now
from ragline.store.models import Tenant, generate_key, hash_key

__all__ = ["SqliteTenantStore", "Tenant", "generate_key", "hash_key"]


class SqliteTenantStore:
    """Tenants and their hashed API keys in ragline's SQLite database."""

    def __init__(self, db: Database) -> None:
        """Tenants kept in ``db``."""
        self._db = db

    def create(self, name: str, api_key: str | None = None) -> tuple[Tenant, str]:
        """A new tenant with one API key; returns the key in clear text (it is not stored so)."""
        key = api_key or generate_key()
        tenant = Tenant(id=new_id(), name=name, created_at=utc_now())
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?)",
                (tenant.id, tenant.name, tenant.created_at),
            )
            conn.execute(
                "INSERT INTO api_keys (key_hash, tenant_id, created_at) VALUES (?, ?, ?)",
                (hash_key(key), tenant.id, tenant.created_at),
            )
        return tenant, key

    def add_key(self, tenant_id: str, api_key: str) -> None:
        """Give the tenant another API key (kept as its hash); adding a key it already has does nothing."""
        self._db.execute(
            "INSERT OR IGNORE INTO api_keys (key_hash, tenant_id, created_at) VALUES (?, ?, ?)",
            (hash_key(api_key), tenant_id, utc_now()),
        )

    def for_key(self, api_key: str) -> Tenant | None:
        """The tenant an API key belongs to, or None for an unknown or empty key."""
        if not api_key:
            return None
        row = self._db.query_one(
            "SELECT t.id, t.name, t.created_at FROM api_keys k JOIN tenants t ON t.id = k.tenant_id"
            " WHERE k.key_hash = ?",
            (hash_key(api_key),),
        )
        return Tenant(**dict(row)) if row else None

    def by_id(self, tenant_id: str) -> Tenant | None:
        """The tenant ``tenant_id``, or None."""
        row = self._db.query_one("SELECT id, name, created_at FROM tenants WHERE id = ?", (tenant_id,))
        return Tenant(**dict(row)) if row else None

    def by_name(self, name: str) -> Tenant | None:
        """The first tenant created under ``name``, or None (names are not unique)."""
        row = self._db.query_one("SELECT id, name, created_at FROM tenants WHERE name = ? ORDER BY created_at", (name,))
        return Tenant(**dict(row)) if row else None

    def list(self) -> list[Tenant]:
        """Every tenant, oldest first."""
        return [
            Tenant(**dict(r)) for r in self._db.query("SELECT id, name, created_at FROM tenants ORDER BY created_at")
        ]
