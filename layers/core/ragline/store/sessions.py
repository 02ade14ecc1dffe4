"""Sessions and messages in SQLite. A turn is a user message and an assistant message linked by request id."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ragline.store.db import Database
from ragline.store.ids import utc_now
from ragline.store.models import Message, Session, new_session, new_turn

_MESSAGE_COLUMNS = (
    "id",
    "session_id",
    "tenant_id",
    "request_id",
    "role",
    "content",
    "knowledge_references",
    "is_completed",
    "stop_reason",
    "created_at",
    "updated_at",
    "feedback",
    "feedback_comment",
    "alternative_of",
    "user_id",
    "images",
)
_INSERT_MESSAGE = (
    f"INSERT INTO messages ({', '.join(_MESSAGE_COLUMNS)}) VALUES ({', '.join('?' for _ in _MESSAGE_COLUMNS)})"
)


def _message_row(message: Message) -> tuple[Any, ...]:
    row = message.model_dump()
    row["knowledge_references"] = json.dumps(message.knowledge_references, ensure_ascii=False)
    row["images"] = json.dumps(message.images, ensure_ascii=False)
    row["is_completed"] = int(message.is_completed)
    return tuple(row[column] for column in _MESSAGE_COLUMNS)


def _session(row: Any) -> Session:
    data = dict(row)
    data["knowledge_base_ids"] = json.loads(data["knowledge_base_ids"])
    data["options"] = json.loads(data["options"])
    data["title_provisional"] = bool(data["title_provisional"])
    return Session(**data)


def _message(row: Any) -> Message:
    data = dict(row)
    data["knowledge_references"] = json.loads(data["knowledge_references"])
    data["images"] = json.loads(data.get("images") or "[]")
    data["is_completed"] = bool(data["is_completed"])
    return Message(**data)


class SqliteSessionStore:
    """Sessions and messages in ragline's SQLite database."""

    def __init__(self, db: Database) -> None:
        """Sessions and messages kept in ``db``."""
        self._db = db

    def create_session(
        self,
        tenant_id: str,
        knowledge_base_ids: Sequence[str],
        title: str = "",
        options: dict[str, Any] | None = None,
        description: str = "",
    ) -> Session:
        """A new session of the tenant over ``knowledge_base_ids``."""
        session = new_session(tenant_id, knowledge_base_ids, title, options, description)
        self._db.execute(
            "INSERT INTO sessions (id, tenant_id, title, description, knowledge_base_ids, options, created_at,"
            " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session.id,
                tenant_id,
                title,
                description,
                json.dumps(session.knowledge_base_ids),
                json.dumps(session.options),
                session.created_at,
                session.updated_at,
            ),
        )
        return session

    def session(self, tenant_id: str, session_id: str) -> Session | None:
        """The tenant's session ``session_id``, or None when it is not the tenant's."""
        row = self._db.query_one("SELECT * FROM sessions WHERE id = ? AND tenant_id = ?", (session_id, tenant_id))
        return _session(row) if row else None

    def sessions(self, tenant_id: str, limit: int = 100) -> list[Session]:
        """The tenant's sessions, most recently active first, at most ``limit``."""
        rows = self._db.query(
            "SELECT * FROM sessions WHERE tenant_id = ? ORDER BY updated_at DESC LIMIT ?", (tenant_id, limit)
        )
        return [_session(r) for r in rows]

    def update_session(
        self,
        tenant_id: str,
        session_id: str,
        *,
        title: str | None = None,
        description: str | None = None,
        pinned: bool | None = None,
    ) -> Session | None:
        """Change a session's title, description or pin; the session as stored after, or None."""
        changes: dict[str, Any] = {}
        if title is not None:
            changes["title"] = title
            changes["title_provisional"] = 0
        if description is not None:
            changes["description"] = description
        if changes:
            changes["updated_at"] = utc_now()
        if pinned is not None:
            changes["pinned_at"] = utc_now() if pinned else None
        with self._db.transaction() as conn:
            if changes:
                assignments = ", ".join(f"{column} = ?" for column in changes)
                conn.execute(
                    f"UPDATE sessions SET {assignments} WHERE id = ? AND tenant_id = ?",
                    (*changes.values(), session_id, tenant_id),
                )
            row = conn.execute(
                "SELECT * FROM sessions WHERE id = ? AND tenant_id = ?", (session_id, tenant_id)
            ).fetchone()
        return _session(row) if row else None

    def delete_session(self, tenant_id: str, session_id: str) -> bool:
        """Remove the session and its messages; False when there is no such session of this tenant's."""
        with self._db.transaction() as conn:
            conn.execute("DELETE FROM messages WHERE session_id = ? AND tenant_id = ?", (session_id, tenant_id))
            deleted = conn.execute("DELETE FROM sessions WHERE id = ? AND tenant_id = ?", (session_id, tenant_id))
            return deleted.rowcount > 0

    def clear_messages(self, tenant_id: str, session_id: str) -> int:
        """Remove every message of this tenant's session and keep the session; how many were removed."""
        return self._db.execute("DELETE FROM messages WHERE session_id = ? AND tenant_id = ?", (session_id, tenant_id))

    def set_title(self, tenant_id: str, session_id: str, title: str) -> None:
        """Store the generated title (no longer provisional); an update is activity (``updated_at``)."""
        self._db.execute(
            "UPDATE sessions SET title = ?, title_provisional = 0, updated_at = ? WHERE id = ? AND tenant_id = ?",
            (title, utc_now(), session_id, tenant_id),
        )

    def set_provisional_title(self, tenant_id: str, session_id: str, title: str) -> bool:
        """Title a session that has no title yet with a provisional ``title``; False when it has one."""
        changed = self._db.execute(
            "UPDATE sessions SET title = ?, title_provisional = 1 WHERE id = ? AND tenant_id = ? AND title = ''",
            (title, session_id, tenant_id),
        )
        return changed > 0

    def create_turn(
        self,
        session: Session,
        request_id: str,
        query: str,
        alternative_of: str = "",
        user_id: str = "",
        images: Sequence[dict[str, str]] = (),
    ) -> tuple[Message, Message]:
        """The user message (complete) and the assistant message (pending) of one turn, atomically."""
        user, assistant = new_turn(session, request_id, query, alternative_of, user_id, images)
        with self._db.transaction() as conn:
            for message in (user, assistant):
                conn.execute(_INSERT_MESSAGE, _message_row(message))
            conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (user.created_at, session.id))
        return user, assistant

    def set_image_description(self, session_id: str, message_id: str, text: str) -> None:
        """The description becomes the first image's caption (one UPDATE of the message's images)."""
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT images FROM messages WHERE id = ? AND session_id = ?", (message_id, session_id)
            ).fetchone()
            images = json.loads(row["images"] or "[]") if row else []
            if not images:
                return
            images[0]["caption"] = text
            conn.execute(
                "UPDATE messages SET images = ? WHERE id = ? AND session_id = ?",
                (json.dumps(images, ensure_ascii=False), message_id, session_id),
            )

    def add_messages(self, messages: Sequence[Message]) -> None:
        """Store messages as they are (a forked session's copies)."""
        with self._db.transaction() as conn:
            for message in messages:
                conn.execute(_INSERT_MESSAGE, _message_row(message))

    def delete_messages(self, tenant_id: str, session_id: str, message_ids: Sequence[str]) -> int:
        """Remove the named messages of this tenant's session; how many were removed."""
        deleted = 0
        with self._db.transaction() as conn:
            for message_id in message_ids:
                deleted += conn.execute(
                    "DELETE FROM messages WHERE id = ? AND session_id = ? AND tenant_id = ?",
                    (message_id, session_id, tenant_id),
                ).rowcount
        return deleted

    def set_feedback(
        self, tenant_id: str, session_id: str, message_id: str, rating: str, comment: str
    ) -> Message | None:
        """Store the reader's rating and comment on a message; the message as stored after, or None."""
        with self._db.transaction() as conn:
            conn.execute(
                "UPDATE messages SET feedback = ?, feedback_comment = ? WHERE id = ? AND session_id = ?"
                " AND tenant_id = ?",
                (rating, comment, message_id, session_id, tenant_id),
            )
            row = conn.execute(
                "SELECT * FROM messages WHERE id = ? AND session_id = ? AND tenant_id = ?",
                (message_id, session_id, tenant_id),
            ).fetchone()
        return _message(row) if row else None

    def complete_assistant_message(
        self, session_id: str, message_id: str, content: str, references: list[dict[str, Any]], stop_reason: str = ""
    ) -> bool:
        """Completes a pending assistant message once; False when it was already completed."""
        changed = self._db.execute(
            "UPDATE messages SET content = ?, knowledge_references = ?, is_completed = 1, stop_reason = ?,"
            " updated_at = ? WHERE id = ? AND session_id = ? AND role = 'assistant' AND is_completed = 0",
            (content, json.dumps(references, ensure_ascii=False), stop_reason, utc_now(), message_id, session_id),
        )
        return changed > 0

    def message_by_request(self, tenant_id: str, session_id: str, request_id: str) -> tuple[Message, Message] | None:
        """The (user, assistant) pair of an earlier turn with this request id, or None."""
        rows = self._db.query(
            "SELECT * FROM messages WHERE session_id = ? AND tenant_id = ? AND request_id = ?",
            (session_id, tenant_id, request_id),
        )
        pair = {row["role"]: _message(row) for row in rows}
        if "user" in pair and "assistant" in pair:
            return pair["user"], pair["assistant"]
        return None

    def incomplete_assistant_messages(self, limit: int = 1000) -> list[Message]:
        """Assistant messages not completed yet, of every tenant, oldest first (for recovery)."""
        rows = self._db.query(
            "SELECT * FROM messages WHERE is_completed = 0 AND role = 'assistant' ORDER BY created_at LIMIT ?",
            (limit,),
        )
        return [_message(r) for r in rows]

    def message(self, tenant_id: str, session_id: str, message_id: str) -> Message | None:
        """The tenant's message ``message_id`` of the session, or None."""
        row = self._db.query_one(
            "SELECT * FROM messages WHERE id = ? AND session_id = ? AND tenant_id = ?",
            (message_id, session_id, tenant_id),
        )
        return _message(row) if row else None

    def messages(self, tenant_id: str, session_id: str, limit: int = 1000) -> list[Message]:
        """The session's messages, oldest first, a turn's question before its answer."""
        rows = self._db.query(
            "SELECT * FROM messages WHERE session_id = ? AND tenant_id = ? ORDER BY created_at, role DESC LIMIT ?",
            (session_id, tenant_id, limit),
        )
        return [_message(r) for r in rows]

    def recent_messages(self, session_id: str, limit: int) -> list[Message]:
        """The newest ``limit`` messages, newest first."""
        rows = self._db.query(
            "SELECT * FROM messages WHERE session_id = ? ORDER BY created_at DESC, role ASC LIMIT ?",
            (session_id, limit),
        )
        return [_message(r) for r in rows]

    def delete_message(self, tenant_id: str, session_id: str, message_id: str) -> bool:
        """Remove one message of the session; False when there is no such message of this tenant's."""
        return (
            self._db.execute(
                "DELETE FROM messages WHERE id = ? AND session_id = ? AND tenant_id = ?",
                (message_id, session_id, tenant_id),
            )
            > 0
        )
