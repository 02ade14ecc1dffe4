"""Which documents a caller's past answers cited.

The signal behind the memory-affinity boost (the port; the SQLite adapter is
:class:`ragline.store.citations.SqliteCitationHistory`).

The durable per-person signal in a knowledge-base product is which material a person actually works from;
the references attached to their answers record it without asking them anything.
"""

from __future__ import annotations

from typing import Protocol


class CitationHistory(Protocol):
    """Which documents a caller's past answers cited, counted per document."""

    def cited_documents(self, tenant_id: str, user_id: str, limit: int) -> dict[str, int]:
        """knowledge_id → number of the caller's past answers that cited it; the ``limit`` most cited."""
        ...
