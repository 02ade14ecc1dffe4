"""Step 7: a short text passage is widened with the chunks around it.

"The system supports several sign-in methods." tells the model little; the paragraphs before and after
usually say which. A text passage shorter than ``short_passage_chars`` takes its previous and next chunks
(``pre_chunk_id``/``next_chunk_id``, same document only), one side then the other, until about
``expand_target_chars`` of text are available. The hit itself is never cut: what exceeds the target is
trimmed from the far ends of the neighbours, at a word boundary where there is one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from ragline.merge.config import EXPAND_TARGET_CHARS, MIN_OVERLAP_CHARS, OVERLAP_WINDOW_CHARS, SHORT_PASSAGE_CHARS
from ragline.merge.coordinates import mark_rewritten
from ragline.merge.join import join_chunk_content
from ragline.merge.lookup import ChunkLookup, load_chunks
from ragline.merge.sequential import record_last_chunk_index
from ragline.store.models import Chunk
from ragline.types import ChunkType, SearchResult

_SPACE = re.compile(r"\s")
_HALF = 2


class Side(StrEnum):
    """Which neighbour of a chunk a short passage is widened with."""

    PREVIOUS = "previous"
    NEXT = "next"


def keep_tail(text: str, size: int) -> str:
    """The last ``size`` characters, without the partial word a cut would leave at the front."""
    if size >= len(text):
        return text
    if size <= 0:
        return ""
    tail = text[len(text) - size :]
    if text[len(text) - size - 1].isspace():
        return tail.lstrip()
    space = _SPACE.search(tail)
    return tail[space.start() :].lstrip() if space else tail


def keep_head(text: str, size: int) -> str:
    """The first ``size`` characters, without the partial word a cut would leave at the end."""
    if size >= len(text):
        return text
    if size <= 0:
        return ""
    head = text[:size]
    if text[size].isspace():
        return head.rstrip()
    cut = max((match.start() for match in _SPACE.finditer(head)), default=-1)
    return head[:cut].rstrip() if cut > 0 else head


def assemble(
    previous: str,
    base: str,
    following: str,
    *,
    target: int = EXPAND_TARGET_CHARS,
    min_overlap: int = MIN_OVERLAP_CHARS,
    window: int = OVERLAP_WINDOW_CHARS,
) -> str:
    """``previous`` + ``base`` + ``following`` within about ``target`` characters; ``base`` is kept whole.

    The budget left after ``base`` is shared between the end of ``previous`` and the start of
    ``following`` (the text nearest the hit); a share one side cannot use goes to the other.
    """
    budget = max(target - len(base), 0)
    keep_previous = min(len(previous), budget // _HALF)
    keep_following = min(len(following), budget - keep_previous)
    keep_previous = min(len(previous), budget - keep_following)
    content = base
    head = keep_tail(previous, keep_previous)
    if head:
        content = join_chunk_content(head, content, min_overlap=min_overlap, window=window)
    tail = keep_head(following, keep_following)
    if tail:
        content = join_chunk_content(content, tail, min_overlap=min_overlap, window=window)
    return content


@dataclass
class _Widening:
    """One short passage being widened: the neighbour text gathered so far on each side."""

    result: SearchResult
    cursors: dict[Side, str]
    # Chunks whose text the passage already holds (merged or resolved earlier): walked through, not re-added.
    carried: set[str]
    # Chunks reached by this widening: reaching one twice means the links loop.
    visited: set[str]
    previous: str = ""
    following: str = ""
    previous_chunks: list[Chunk] = field(default_factory=list)
    following_chunks: list[Chunk] = field(default_factory=list)
    turn: Side = Side.PREVIOUS
    pending: Side | None = None

    @classmethod
    def of(cls, result: SearchResult) -> _Widening:
        return cls(
            result=result,
            cursors={Side.PREVIOUS: result.pre_chunk_id, Side.NEXT: result.next_chunk_id},
            carried=set(result.sub_chunk_id),
            visited={result.id},
        )

    def available(self) -> int:
        return len(self.previous) + len(self.result.content) + len(self.following)

    def wants(self, target: int) -> str:
        """The next neighbour id to read (alternating sides), or "" when done."""
        self.pending = None
        if self.available() >= target:
            return ""
        other = Side.NEXT if self.turn == Side.PREVIOUS else Side.PREVIOUS
        for side in (self.turn, other):
            if self.cursors[side]:
                self.pending = side
                return self.cursors[side]
        return ""

    def take(self, neighbour: Chunk | None, min_overlap: int, window: int) -> None:
        side = self.pending
        if side is None:
            return
        self.turn = Side.NEXT if side == Side.PREVIOUS else Side.PREVIOUS
        if neighbour is None or not self._accepts(neighbour):
            self.cursors[side] = ""  # another document, a missing or disabled chunk, or a loop: stop here
            return
        self.visited.add(neighbour.id)
        if neighbour.id in self.carried:
            self.cursors[side] = neighbour.pre_chunk_id if side == Side.PREVIOUS else neighbour.next_chunk_id
        elif side == Side.PREVIOUS:
            self.previous = join_chunk_content(neighbour.content, self.previous, min_overlap=min_overlap, window=window)
            self.previous_chunks.append(neighbour)
            self.cursors[side] = neighbour.pre_chunk_id
        else:
            self.following = join_chunk_content(
                self.following, neighbour.content, min_overlap=min_overlap, window=window
            )
            self.following_chunks.append(neighbour)
            self.cursors[side] = neighbour.next_chunk_id

    def _accepts(self, neighbour: Chunk) -> bool:
        return (
            neighbour.id not in self.visited
            and neighbour.knowledge_id == self.result.knowledge_id
            and neighbour.chunk_type == ChunkType.TEXT
            and neighbour.enabled
            and bool(neighbour.content)
        )


def _needs_widening(result: SearchResult, short_chars: int) -> bool:
    return (
        result.chunk_type == ChunkType.TEXT
        and bool(result.knowledge_id)
        and bool(result.content)
        and len(result.content) < short_chars
        and bool(result.pre_chunk_id or result.next_chunk_id)
    )


def expand_short_passages(
    results: Sequence[SearchResult],
    lookup: ChunkLookup,
    *,
    short_chars: int = SHORT_PASSAGE_CHARS,
    target: int = EXPAND_TARGET_CHARS,
    min_overlap: int = MIN_OVERLAP_CHARS,
    window: int = OVERLAP_WINDOW_CHARS,
) -> int:
    """Widen every short text passage in place; returns how many gained neighbour text.

    Neighbours are read in rounds, one batched lookup per round for all passages, each chunk once.
    Widened passages list the neighbours whose text they carry in ``sub_chunk_id`` (document order) and
    are marked rewritten.
    """
    widenings = [_Widening.of(r) for r in results if _needs_widening(r, short_chars)]
    cache: dict[str, Chunk | None] = {}
    active = widenings
    while active:
        wanted = [w.wants(target) for w in active]
        missing = [chunk_id for chunk_id in dict.fromkeys(wanted) if chunk_id and chunk_id not in cache]
        found = load_chunks(lookup, missing)
        cache.update({chunk_id: found.get(chunk_id) for chunk_id in missing})
        for widening in active:
            if widening.pending is not None:
                widening.take(cache.get(widening.cursors[widening.pending]), min_overlap, window)
        active = [w for w in active if w.pending is not None]
    expanded = 0
    for widening in widenings:
        if not (widening.previous_chunks or widening.following_chunks):
            continue
        result = widening.result
        content = assemble(
            widening.previous,
            result.content,
            widening.following,
            target=target,
            min_overlap=min_overlap,
            window=window,
        )
        if content == result.content:
            continue
        result.content = content
        # Far neighbours whose text the budget cut away entirely are not cited as sources of the passage.
        edge = min_overlap
        used_previous = [c for c in reversed(widening.previous_chunks) if c.content[-edge:] in content]
        used_following = [c for c in widening.following_chunks if c.content[:edge] in content]
        for chunk in (*used_previous, *used_following):
            if chunk.id not in result.sub_chunk_id:
                result.sub_chunk_id.append(chunk.id)
        record_last_chunk_index(result, max((c.chunk_index for c in used_following), default=result.chunk_index))
        mark_rewritten(result)
        expanded += 1
    return expanded
