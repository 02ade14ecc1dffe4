"""Recall: the caller's memories that bear on a question, and the prompt section that carries them.

No model call: the question is embedded (when an embedder is available) and ranked against the user's
memories by :meth:`MemoryStore.search`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable

from ragline.memory.models import Memory
from ragline.memory.store import MemoryStore, ScoredMemories, VectorLike
from ragline.models.base import Embedder

logger = logging.getLogger(__name__)

DEFAULT_RECALL_TOP_K = 5
# Below this a memory is noise for the question. Measured with the bundled MiniLM: a memory that bears
# on a question scores 0.3-0.6 against it, unrelated ones stay under ~0.2; keyword overlap is a share
# of the question's words, so one of three words found (0.33) just passes.
MIN_RECALL_SCORE = 0.3

MEMORY_PROMPT_HEADER = "Things you know about the user from earlier conversations:"
MEMORY_PROMPT_GUIDANCE = (
    "Use them only where they help with the current question; the question and the sources come first."
)
_WHITESPACE = re.compile(r"\s+")


def recall(
    store: MemoryStore,
    embedder: Embedder | None,
    tenant_id: str,
    user_id: str,
    query: str,
    top_k: int = DEFAULT_RECALL_TOP_K,
    min_score: float = MIN_RECALL_SCORE,
    embedder_of: Callable[[str], Embedder | None] | None = None,
) -> ScoredMemories:
    """The user's memories scoring at least ``min_score`` for ``query``, best first, at most ``top_k``.

    ``embedder`` embeds the question; memories another model embedded are compared with the question
    embedded by ``embedder_of(that model)`` when it gives an embedder. A failing embedder degrades to
    keyword matching; a failing store raises (the caller decides).
    """
    if not query.strip() or top_k <= 0:
        return []
    query_vector = None
    embedding_model = ""
    if embedder is not None:
        try:
            query_vector = embedder.embed_query(query)
            embedding_model = embedder.model_id
        except Exception:
            logger.warning("memory recall: query embedding failed, matching keywords only", exc_info=True)

    def query_vector_of(model_id: str) -> VectorLike | None:
        other = embedder_of(model_id) if embedder_of is not None else None
        if other is None:
            return None
        try:
            return other.embed_query(query)
        except Exception:
            logger.warning("memory recall: query embedding failed for %s", model_id, exc_info=True)
            return None

    found = store.search(
        tenant_id, user_id, query_vector, query, top_k, embedding_model=embedding_model, query_vector_of=query_vector_of
    )
    return [(memory, score) for memory, score in found if score >= min_score]


def format_memory_prompt(memories: Iterable[Memory]) -> str:
    """The section appended to the system prompt; empty when there is nothing to say.

    Each memory is one bullet on one line: a memory's text cannot open a section of its own.
    """
    lines = [_WHITESPACE.sub(" ", memory.content).strip() for memory in memories]
    bullets = [f"- {line}" for line in lines if line]
    if not bullets:
        return ""
    return "\n".join([MEMORY_PROMPT_HEADER, *bullets, MEMORY_PROMPT_GUIDANCE])
