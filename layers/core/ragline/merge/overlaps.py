"""Step 8: passages that say what another passage already says are dropped.

Exact duplicates are gone by now (id and content signature); this catches the near ones, across
documents and knowledge bases too: a passage whose normalised text lies inside another's, or two
passages sharing at least ``min_ratio`` of the smaller token set while neither is more than
``max_size_ratio`` times the other's size (beyond that the smaller one is a detail worth keeping, not a
copy). Of such a pair the lower score goes; on equal scores the shorter; on equal lengths the later one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragline.merge.config import PARTIAL_OVERLAP_MAX_SIZE_RATIO, PARTIAL_OVERLAP_MIN_RATIO
from ragline.merge.images import merge_image_info
from ragline.merge.join import is_content_contained, token_overlap_ratio
from ragline.text.segmentation import normalize_content, tokenize_simple
from ragline.types import SearchResult
from ragline.types.search import is_image_hit


@dataclass(frozen=True)
class _Entry:
    """A passage's comparison keys, computed once: the pairwise loop is quadratic."""

    normalized: str
    tokens: frozenset[str]
    score: float


def _entry(result: SearchResult) -> _Entry:
    return _Entry(normalize_content(result.content), frozenset(tokenize_simple(result.content)), result.score)


def _redundant(first: _Entry, second: _Entry, *, min_ratio: float, max_size_ratio: float) -> bool:
    short, long = (first, second) if len(first.normalized) <= len(second.normalized) else (second, first)
    if is_content_contained(short.normalized, long.normalized):
        return True
    sizes = sorted((len(first.tokens), len(second.tokens)))
    if not sizes[0] or sizes[1] > max_size_ratio * sizes[0]:
        return False
    return token_overlap_ratio(first.tokens, second.tokens) >= min_ratio


def _loser(entries: Sequence[_Entry], i: int, j: int) -> int:
    """Index of the passage to drop among ``i`` < ``j``: lower score, then shorter, then later."""
    first, second = entries[i], entries[j]
    if first.score != second.score:
        return i if first.score < second.score else j
    if len(first.normalized) != len(second.normalized):
        return i if len(first.normalized) < len(second.normalized) else j
    return j


def remove_partial_overlaps(
    results: Sequence[SearchResult],
    *,
    min_ratio: float = PARTIAL_OVERLAP_MIN_RATIO,
    max_size_ratio: float = PARTIAL_OVERLAP_MAX_SIZE_RATIO,
) -> list[SearchResult]:
    """``results`` without the passages another one makes redundant, order kept."""
    entries = [_entry(result) for result in results]
    removed: set[int] = set()
    # A dropped image's chunk: the passage that made it redundant carries its image on (index → images).
    inherited: dict[int, str] = {}
    for i in range(len(entries)):
        if i in removed:
            continue
        for j in range(i + 1, len(entries)):
            if j in removed:
                continue
            if not _redundant(entries[i], entries[j], min_ratio=min_ratio, max_size_ratio=max_size_ratio):
                continue
            loser = _loser(entries, i, j)
            winner = j if loser == i else i
            removed.add(loser)
            if is_image_hit(results[loser]) and results[loser].image_info:
                inherited[winner] = merge_image_info(
                    inherited.get(winner, results[winner].image_info), results[loser].image_info
                )
            if loser == i:
                break  # a dropped passage no longer decides about the others
    kept = []
    for index, result in enumerate(results):
        if index in removed:
            continue
        if index in inherited and not is_image_hit(result):
            # The reference's image_vector_match: the image was found, its text kept in another passage.
            result = result.model_copy(update={"image_info": inherited[index], "metadata": dict(result.metadata)})
            result.metadata[IMAGE_VECTOR_MATCH] = "true"
        kept.append(result)
    return kept


IMAGE_VECTOR_MATCH = "image_vector_match"
