"""Editing a conversation's history: fork a session at a turn, rewind it to a turn, search sessions by what they say.

Built on the session store's primitives, so both runtimes (SQLite, DynamoDB) behave the same.

A point in a conversation is a turn: the message named and the other message of its turn (same request id).
Forking copies the turns up to and including that one into a new session; rewinding deletes the turns after
it. Neither touches a turn whose answer is still being written (:class:`TurnRunning`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragline.store.base import SessionStore
from ragline.store.ids import new_id
from ragline.store.models import Message, Session

# Characters of context either side of a match in a message, in a search result's snippet.
SNIPPET_CONTEXT = 60
# Citation tags and other markup an answer carries: not what a reader searched for.
_MARKUP = re.compile(r"<[A-Za-z/][^<>]*>")


class UnknownMessage(LookupError):
    """The message named is not one of the session's."""


class TurnRunning(RuntimeError):
    """A turn the operation would copy or delete is still being written: stop it first."""


def _ordered(messages: Sequence[Message]) -> list[Message]:
    """Oldest first, a turn's question before its answer (the stores' order, made explicit)."""
    return sorted(messages, key=lambda m: (m.created_at, m.role != "user"))


def split_at(messages: Sequence[Message], message_id: str) -> tuple[list[Message], list[Message]]:
    """The messages up to and including ``message_id``'s turn, and those after it."""
    ordered = _ordered(messages)
    target = next((m for m in ordered if m.id == message_id), None)
    if target is None:
        raise UnknownMessage(message_id)
    last = max(i for i, m in enumerate(ordered) if m.request_id == target.request_id)
    return ordered[: last + 1], ordered[last + 1 :]


def _running(messages: Sequence[Message]) -> bool:
    return any(m.role == "assistant" and not m.is_completed for m in messages)


def fork_title(title: str) -> str:
    """A forked session's title: the original's with " (fork)", or none when it had none."""
    return f"{title} (fork)" if title else ""


def fork_session(sessions: SessionStore, session: Session, message_id: str) -> tuple[Session, list[Message]]:
    """A new session holding copies of the turns up to ``message_id``'s.

    A new session of the same tenant, knowledge bases and options holding copies (new ids, same text, references, times
    and feedback) of the turns up to ``message_id``'s; the original is unchanged.
    """
    kept, _ = split_at(sessions.messages(session.tenant_id, session.id, limit=100_000), message_id)
    if _running(kept):
        raise TurnRunning(message_id)
    fork = sessions.create_session(
        session.tenant_id,
        session.knowledge_base_ids,
        title=fork_title(session.title),
        options=session.options,
        description=session.description,
    )
    new_ids = {m.id: new_id() for m in kept}
    copies = [
        m.model_copy(
            update={"id": new_ids[m.id], "session_id": fork.id, "alternative_of": new_ids.get(m.alternative_of, "")}
        )
        for m in kept
    ]
    sessions.add_messages(copies)
    return fork, copies


def rewind_session(sessions: SessionStore, session: Session, message_id: str) -> list[Message]:
    """Deletes the turns after ``message_id``'s; returns the messages deleted."""
    _, after = split_at(sessions.messages(session.tenant_id, session.id, limit=100_000), message_id)
    if _running(after):
        raise TurnRunning(message_id)
    sessions.delete_messages(session.tenant_id, session.id, [m.id for m in after])
    return after


def snippet(text: str, needle: str, context: int = SNIPPET_CONTEXT) -> str:
    """The part of ``text`` (markup removed) around the first case-insensitive occurrence of ``needle``.

    "" when it does not occur.
    """
    plain = " ".join(_MARKUP.sub(" ", text).split())
    at = plain.casefold().find(needle.casefold())
    if at < 0:
        return ""
    start, end = max(0, at - context), min(len(plain), at + len(needle) + context)
    return ("…" if start else "") + plain[start:end] + ("…" if end < len(plain) else "")


def search_sessions(
    sessions: SessionStore, tenant_id: str, text: str, candidates: Sequence[Session]
) -> list[tuple[Session, str]]:
    """The ``candidates`` whose title or any message holds ``text`` (case-insensitive), with snippets.

    The ``candidates`` (this tenant's sessions, in the order to list them) whose title or any message holds ``text``
    (case-insensitive), each with a snippet of the first message that does ("" when the title matched).
    """
    needle = " ".join(text.split())
    if not needle:
        return [(s, "") for s in candidates]
    found: list[tuple[Session, str]] = []
    for session in candidates:
        if needle.casefold() in session.title.casefold():
            found.append((session, ""))
            continue
        for message in sessions.messages(tenant_id, session.id, limit=100_000):
            match = snippet(message.content, needle)
            if match:
                found.append((session, match))
                break
    return found
