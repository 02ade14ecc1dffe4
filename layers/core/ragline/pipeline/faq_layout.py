"""FAQ priority in context assembly.

FAQ answers first and marked high priority, documents after them; the first FAQ whose score (before any FAQ boost)
reaches the direct-answer threshold is an exact match.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragline.types import ChatManage, ChunkType, SearchResult


@dataclass(frozen=True)
class FaqLayout:
    """The context's FAQ answers, its documents, and the FAQ that matches exactly (None when none does)."""

    faq: list[SearchResult]
    documents: list[SearchResult]
    exact_id: str | None


def pre_boost_score(result: SearchResult) -> float:
    """An FAQ result's score before the FAQ boost (what the direct-answer threshold compares), else its score."""
    original = result.metadata.get("faq_original_score")
    return float(original) if original not in (None, "") else result.score


def faq_layout(cm: ChatManage, results: list[SearchResult]) -> FaqLayout | None:
    """None when FAQ priority is off or no FAQ was retrieved (the plain layout applies)."""
    if not cm.request.faq_priority_enabled:
        return None
    faq = [r for r in results if r.chunk_type == ChunkType.FAQ]
    if not faq:
        return None
    threshold = cm.request.faq_direct_answer_threshold
    exact = next((r.id for r in faq if pre_boost_score(r) >= threshold), None)
    return FaqLayout(faq=faq, documents=[r for r in results if r.chunk_type != ChunkType.FAQ], exact_id=exact)
