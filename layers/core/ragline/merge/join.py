"""Joining and comparing chunk bodies by their current text (the seed's ``searchutil`` helpers).

Chunks can be edited after ingestion, so two bodies are joined by what they say now, not by where the
parser once cut them: containment collapses, a real suffix/prefix overlap is removed once, and anything
else keeps both bodies. Keeping a little duplication is preferred to silently dropping edited text.
"""

from __future__ import annotations

from collections.abc import Set

from ragline.merge.config import MIN_OVERLAP_CHARS, OVERLAP_WINDOW_CHARS
from ragline.text.segmentation import tokenize_simple

# Two bodies with no overlap are separate paragraphs of the joined passage.
JOIN_SEPARATOR = "\n\n"


def contains_chunk_content(container: str, contained: str, *, min_chars: int = MIN_OVERLAP_CHARS) -> bool:
    """Whether ``contained`` is fully present in ``container``.

    A short body is only "contained" when it is the whole container: a few common words found inside a
    long passage must not make a retrieval hit disappear.
    """
    if not container or not contained:
        return False
    if container == contained:
        return True
    return len(contained) >= min_chars and contained in container


def overlap_length(
    head: str, tail: str, *, min_chars: int = MIN_OVERLAP_CHARS, window: int = OVERLAP_WINDOW_CHARS
) -> int:
    """Length of the longest end of ``head`` that is also the start of ``tail`` (0 when under ``min_chars``).

    Only the last ``window`` characters are searched, longest first.
    """
    longest = min(len(head), len(tail), window)
    for size in range(longest, min_chars - 1, -1):
        if head.endswith(tail[:size]):
            return size
    return 0


def join_chunk_content(
    head: str,
    tail: str,
    *,
    min_overlap: int = MIN_OVERLAP_CHARS,
    window: int = OVERLAP_WINDOW_CHARS,
    separator: str = JOIN_SEPARATOR,
) -> str:
    """``tail`` appended to ``head``: containment collapses, an overlap is kept once, else ``separator``."""
    if not head:
        return tail
    if not tail:
        return head
    if contains_chunk_content(head, tail, min_chars=min_overlap):
        return head
    if contains_chunk_content(tail, head, min_chars=min_overlap):
        return tail
    overlap = overlap_length(head, tail, min_chars=min_overlap, window=window)
    if overlap:
        return head + tail[overlap:]
    return head + separator + tail


def is_content_contained(normalized_short: str, normalized_long: str) -> bool:
    """Substring test on texts already passed through ``normalize_content`` (case and spacing ignored)."""
    if not normalized_short or not normalized_long or len(normalized_short) > len(normalized_long):
        return False
    return normalized_short in normalized_long


def token_overlap_ratio(first: Set[str], second: Set[str]) -> float:
    """|A ∩ B| / min(|A|, |B|): 1.0 when the smaller set lies wholly inside the larger one.

    The overlap coefficient rather than Jaccard, so a short text is not penalised for the length of the
    text it is compared with.
    """
    if not first or not second:
        return 0.0
    small, large = (first, second) if len(first) <= len(second) else (second, first)
    return len(small & large) / len(small)


def content_overlap_ratio(first: str, second: str) -> float:
    """:func:`token_overlap_ratio` of two raw texts, tokenised like search (``tokenize_simple``)."""
    return token_overlap_ratio(tokenize_simple(first), tokenize_simple(second))
