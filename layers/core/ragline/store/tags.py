"""Tags of a knowledge base in SQLite (WeKnora's tag objects: a name, a colour, an order)."""

from __future__ import annotations

from typing import Any

from ragline.store.db import Database
from ragline.store.ids import utc_now
from ragline.store.models import DuplicateName, Tag, new_tag, tag_changes

_COLUMNS = "id, tenant_id, knowledge_base_id, name, color, sort_order, created_at, updated_at"


def _tag(row: Any) -> Tag:
    return Tag(**dict(row))


class SqliteTagStore:
    """Tags of knowledge bases in ragline's SQLite database; a name is unique within its knowledge base."""

    def __init__(self, db: Database) -> None:
        """Tags kept in ``db``."""
        self._db = db

    def create_tag(
        self, tenant_id: str, kb_id: str, name: str, *, color: str = "", sort_order: int = 0, tag_id: str = ""
    ) -> Tag:
        """A new tag (``tag_id`` to register one under a given id); a taken name raises :class:`DuplicateName`."""
        tag = new_tag(tenant_id, kb_id, name, color=color, sort_order=sort_order, tag_id=tag_id)
        with self._db.transaction() as conn:
            taken = conn.execute(
                "SELECT 1 FROM tags WHERE knowledge_base_id = ? AND (name = ? OR id = ?)", (kb_id, name, tag.id)
            ).fetchone()
            if taken is not None:
                raise DuplicateName(name)
            conn.execute(
                f"INSERT INTO tags ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (tag.id, tenant_id, kb_id, name, color, sort_order, tag.created_at, tag.updated_at),
            )
        return tag

    def tag(self, tenant_id: str, kb_id: str, tag_id: str) -> Tag | None:
        """The knowledge base's tag ``tag_id``, or None when it is not this tenant's."""
        row = self._db.query_one(
            f"SELECT {_COLUMNS} FROM tags WHERE id = ? AND knowledge_base_id = ? AND tenant_id = ?",
            (tag_id, kb_id, tenant_id),
        )
        return _tag(row) if row else None

    def tags(self, tenant_id: str, kb_id: str) -> list[Tag]:
        """The knowledge base's tags by ``sort_order``, then name."""
        rows = self._db.query(
            f"SELECT {_COLUMNS} FROM tags WHERE knowledge_base_id = ? AND tenant_id = ? ORDER BY sort_order, name",
            (kb_id, tenant_id),
        )
        return [_tag(r) for r in rows]

    def update_tag(
        self,
        tenant_id: str,
        kb_id: str,
        tag_id: str,
        *,
        name: str | None = None,
        color: str | None = None,
        sort_order: int | None = None,
    ) -> Tag | None:
        """Rename, recolour or reorder a tag; the tag as stored after, or None when it is not this tenant's."""
        with self._db.transaction() as conn:
            tag = self.tag(tenant_id, kb_id, tag_id)
            if tag is None:
                return None
            changes = tag_changes(tag, name=name, color=color, sort_order=sort_order)
            if "name" in changes:
                taken = conn.execute(
                    "SELECT 1 FROM tags WHERE knowledge_base_id = ? AND name = ?", (kb_id, name)
                ).fetchone()
                if taken is not None:
                    raise DuplicateName(str(name))
            if not changes:
                return tag
            changes["updated_at"] = utc_now()
            assignments = ", ".join(f"{column} = ?" for column in changes)
            conn.execute(
                f"UPDATE tags SET {assignments} WHERE id = ? AND knowledge_base_id = ?",
                (*changes.values(), tag_id, kb_id),
            )
        return tag.model_copy(update=changes)

    def delete_tag(self, tenant_id: str, kb_id: str, tag_id: str) -> bool:
        """Remove a tag's registration (documents keep the string); False when it is not this tenant's."""
        return (
            self._db.execute(
                "DELETE FROM tags WHERE id = ? AND knowledge_base_id = ? AND tenant_id = ?", (tag_id, kb_id, tenant_id)
            )
            > 0
        )
