"""The citation history of ragline's SQLite database.

Which documents a caller's past answers cited (the memory-affinity boost's signal; the port is
:class:`ragline.reranking.citations.CitationHistory`).
"""

from __future__ import annotations

import json
import logging
from collections import Counter

from ragline.store.db import Database

logger = logging.getLogger(__name__)


# Completed or not, an assistant message with references drew on those documents.
_CITING_ANSWERS = (
    "SELECT knowledge_references FROM messages"
    " WHERE tenant_id = ? AND user_id = ? AND role = 'assistant' AND knowledge_references != '[]'"
    " ORDER BY created_at DESC LIMIT ?"
)


class SqliteCitationHistory:
    """Counts citations in the ``messages`` table of ragline's SQLite database.

    An answer counts once per document however many of its chunks it cited: the signal is "this answer
    drew on that document". The newest ``max_messages`` answers are read, so the scan stays bounded.

    Only the caller's answers count (``user_id``, the X-User-Id that asked; "" is the tenant's default
    user): one person's reading habits do not steer another's results.
    """

    def __init__(self, db: Database, max_messages: int) -> None:
        """Citation counts read from ``db``, over the newest ``max_messages`` answers of the user."""
        self._db = db
        self._max_messages = max_messages

    def cited_documents(self, tenant_id: str, user_id: str, limit: int) -> dict[str, int]:
        """Document id → how many of this user's recent answers cited it, the most cited first, at most ``limit``."""
        counts: Counter[str] = Counter()
        for row in self._db.query(_CITING_ANSWERS, (tenant_id, user_id, self._max_messages)):
            try:
                references = json.loads(row["knowledge_references"])
            except ValueError:
                logger.warning("unreadable knowledge_references in a message of tenant %s", tenant_id)
                continue
            if not isinstance(references, list):
                continue
            documents = {
                ref.get("knowledge_id")
                for ref in references
                if isinstance(ref, dict) and isinstance(ref.get("knowledge_id"), str) and ref.get("knowledge_id")
            }
            counts.update(str(document) for document in documents)
        return dict(counts.most_common(limit))
