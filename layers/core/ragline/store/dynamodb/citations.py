"""Documents cited by a caller's past answers, for memory affinity (the AWS runtime's citation port)."""

from __future__ import annotations

from ragline.store.dynamodb.sessions import DynamoSessionStore


class DynamoCitationHistory:
    """Documents cited by a caller's past answers (memory affinity), from the tenant's most recent sessions.

    Messages are keyed by session, so the scan is bounded by sessions rather than messages: the newest
    ``max_sessions`` sessions of the tenant. As in the SQLite version, an answer counts once per document.
    """

    def __init__(self, sessions: DynamoSessionStore, max_sessions: int) -> None:
        """Citation counts over the messages of the tenant's newest ``max_sessions`` sessions."""
        self._sessions = sessions
        self._max_sessions = max_sessions

    def cited_documents(self, tenant_id: str, user_id: str, limit: int) -> dict[str, int]:
        """Document id → how many of this user's recent answers cited it, the most cited first, at most ``limit``."""
        counts: dict[str, int] = {}
        for session in self._sessions.sessions(tenant_id, limit=self._max_sessions):
            for message in self._sessions.messages(tenant_id, session.id):
                if message.role != "assistant" or message.user_id != user_id:
                    continue
                for knowledge_id in {
                    r.get("knowledge_id") for r in message.knowledge_references if isinstance(r, dict)
                }:
                    if isinstance(knowledge_id, str) and knowledge_id:
                        counts[knowledge_id] = counts.get(knowledge_id, 0) + 1
        return dict(sorted(counts.items(), key=lambda item: -item[1])[:limit])
