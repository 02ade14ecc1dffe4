"""Step 3: passages cited in the conversation's latest answer that still bear on the question.

A follow-up ("and how do I undo that?") often retrieves little by itself; the passages behind the previous
answer carry the context it refers to. They come from one round only, must share enough words with the
question, and are discounted so that fresh hits of equal relevance rank first.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from ragline.merge.config import HISTORY_MAX_REFERENCES, HISTORY_MIN_OVERLAP, HISTORY_SCORE_FACTOR
from ragline.merge.join import token_overlap_ratio
from ragline.text.segmentation import tokenize_simple
from ragline.types import History, MatchType, SearchResult

# Recorded on each injected reference, for logs and evaluation.
HISTORY_OVERLAP_KEY = "history_overlap"
_RATIO_FORMAT = "{:.4f}"


def latest_references(history: Sequence[History]) -> list[SearchResult]:
    """The references of the newest round that has any (``history`` is oldest first)."""
    for round_ in reversed(history):
        if round_.knowledge_references:
            return list(round_.knowledge_references)
    return []


def history_references(
    query: str,
    history: Sequence[History],
    present_ids: Collection[str],
    *,
    min_overlap: float = HISTORY_MIN_OVERLAP,
    score_factor: float = HISTORY_SCORE_FACTOR,
    limit: int = HISTORY_MAX_REFERENCES,
) -> list[SearchResult]:
    """Copies of the latest round's references worth adding, best first as the round listed them.

    Kept when |query ∩ passage| / min(|query|, |passage|) >= ``min_overlap`` (tokens as search counts them)
    and the id is not already a result; the score is multiplied by ``score_factor``; at most ``limit``.
    """
    query_tokens = tokenize_simple(query)
    seen = set(present_ids)
    kept: list[SearchResult] = []
    for reference in latest_references(history):
        if len(kept) >= limit:
            break
        if reference.id in seen:
            continue
        overlap = token_overlap_ratio(query_tokens, tokenize_simple(reference.content))
        if overlap < min_overlap:
            continue
        seen.add(reference.id)
        injected = reference.model_copy(deep=True)
        injected.score = reference.score * score_factor
        injected.match_type = MatchType.HISTORY
        injected.metadata[HISTORY_OVERLAP_KEY] = _RATIO_FORMAT.format(overlap)
        kept.append(injected)
    return kept
