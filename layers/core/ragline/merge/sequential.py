"""Step 5: passages from the same document and chunk type that continue each other become one.

Within a group (knowledge id, chunk type), ordered by chunk index then id, each passage either extends
the passage before it or starts a new one:

- both with trusted coordinates: the offsets decide. Text between them that neither holds (a gap) keeps
  them apart; an overlap is kept once; a passage inside the other is absorbed. The result is still an
  exact slice of the source;
- otherwise the current text decides (offsets stop matching the source once a chunk is edited): only a
  passage contained in the other or the next chunk index is merged, with ``join_chunk_content``.

A merged passage keeps the first one's identity, the best score, every merged id in ``sub_chunk_id``
and the union of their images.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ragline.merge.config import MIN_OVERLAP_CHARS, OVERLAP_WINDOW_CHARS
from ragline.merge.coordinates import coordinates_trusted, mark_rewritten
from ragline.merge.images import merge_image_info
from ragline.merge.join import contains_chunk_content, join_chunk_content
from ragline.types import ChunkType, SearchResult
from ragline.types.search import sort_deterministically

# Document text in reading order. FAQ entries, web pages, graph facts, summaries and wiki pages are
# independent units: joining "consecutive" ones would splice unrelated answers together.
SEQUENTIAL_CHUNK_TYPES = frozenset({ChunkType.TEXT, ChunkType.IMAGE_OCR, ChunkType.IMAGE_CAPTION})
# The highest chunk index a passage covers once merged or widened (its own ``chunk_index`` stays the first).
INDEX_END_KEY = "chunk_index_end"


def last_chunk_index(result: SearchResult) -> int:
    """The highest chunk index the passage covers once merged or widened (its own index when neither)."""
    try:
        return max(result.chunk_index, int(result.metadata.get(INDEX_END_KEY, result.chunk_index)))
    except ValueError:
        return result.chunk_index


def record_last_chunk_index(result: SearchResult, index: int) -> None:
    """Note that ``result`` now reaches chunk ``index`` (never shrinks what it already covers)."""
    end = max(index, last_chunk_index(result))
    if end > result.chunk_index:
        result.metadata[INDEX_END_KEY] = str(end)


@dataclass
class SourceSlice:
    """A text and the ``[start_at, end_at)`` span of the source it is an exact copy of."""

    content: str
    start_at: int
    end_at: int


def union_of_slices(first: SourceSlice, second: SourceSlice) -> SourceSlice | None:
    """The source text covered by two exact slices of one document; None when text lies between them."""
    before, after = sorted((first, second), key=lambda s: (s.start_at, -s.end_at))
    if after.start_at > before.end_at:
        return None
    if after.end_at <= before.end_at:
        return before
    overlap = before.end_at - after.start_at
    return SourceSlice(before.content + after.content[overlap:], before.start_at, after.end_at)


def _slice_of(result: SearchResult) -> SourceSlice:
    return SourceSlice(result.content, result.start_at, result.end_at)


@dataclass
class _Run:
    passage: SearchResult
    last_index: int
    trusted: bool

    @classmethod
    def start(cls, passage: SearchResult) -> _Run:
        return cls(passage, last_chunk_index(passage), coordinates_trusted(passage))

    def absorb(self, member: SearchResult, min_overlap: int, window: int) -> bool:
        """Extend this run with ``member`` when the rules allow; False leaves both untouched."""
        if self.trusted and coordinates_trusted(member):
            union = union_of_slices(_slice_of(self.passage), _slice_of(member))
            if union is None:
                return False
            self.passage.content = union.content
            self.passage.start_at, self.passage.end_at = union.start_at, union.end_at
        else:
            contained = contains_chunk_content(
                self.passage.content, member.content, min_chars=min_overlap
            ) or contains_chunk_content(member.content, self.passage.content, min_chars=min_overlap)
            if not contained and member.chunk_index != self.last_index + 1:
                return False
            joined = join_chunk_content(self.passage.content, member.content, min_overlap=min_overlap, window=window)
            if joined != self.passage.content:
                self.passage.content = joined
                mark_rewritten(self.passage)
                self.trusted = False
        self._take_identity(member)
        return True

    def _take_identity(self, member: SearchResult) -> None:
        passage = self.passage
        passage.score = max(passage.score, member.score)
        for chunk_id in (member.id, *member.sub_chunk_id):
            if chunk_id != passage.id and chunk_id not in passage.sub_chunk_id:
                passage.sub_chunk_id.append(chunk_id)
        passage.image_info = merge_image_info(passage.image_info, member.image_info)
        member_last = last_chunk_index(member)
        if member_last > self.last_index:
            # The passage now ends where the member ends, so its next neighbour is the member's.
            self.last_index = member_last
            passage.next_chunk_id = member.next_chunk_id
            record_last_chunk_index(passage, member_last)


def merge_group(members: Iterable[SearchResult], *, min_overlap: int, window: int) -> list[SearchResult]:
    """One group's passages merged in chunk-index order (the first member of each run is edited)."""
    runs: list[_Run] = []
    for member in sorted(members, key=lambda r: (r.chunk_index, r.id)):
        if runs and runs[-1].absorb(member, min_overlap, window):
            continue
        runs.append(_Run.start(member))
    return [run.passage for run in runs]


def merge_sequential(
    results: Sequence[SearchResult],
    *,
    min_overlap: int = MIN_OVERLAP_CHARS,
    window: int = OVERLAP_WINDOW_CHARS,
) -> list[SearchResult]:
    """Every group merged, in the deterministic order FILTER_TOP_K uses (grouping loses rank order).

    Results without a knowledge id (web pages) or of a non-sequential type pass through unchanged.
    """
    groups: dict[tuple[str, str], list[SearchResult]] = {}
    merged: list[SearchResult] = []
    for result in results:
        if result.knowledge_id and result.chunk_type in SEQUENTIAL_CHUNK_TYPES:
            groups.setdefault((result.knowledge_id, result.chunk_type), []).append(result)
        else:
            merged.append(result)
    for members in groups.values():
        merged.extend(merge_group(members, min_overlap=min_overlap, window=window))
    return sort_deterministically(merged)
