"""Step 4: a matched text sub-chunk answers with its parent section's current text.

Small chunks match queries precisely; their parent (``parent_text``, never searched) gives the model the
surrounding section. The result keeps the sub-chunk's identity (id, index, score) and lists the matched
id in ``sub_chunk_id``. Its ``image_info`` stays the matched sub-chunk's own: an image-heavy parent must
not bring every sibling's figures into the answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragline.merge.config import MIN_OVERLAP_CHARS, OVERLAP_WINDOW_CHARS
from ragline.merge.coordinates import chunk_coordinates_trusted, mark_rewritten
from ragline.merge.join import join_chunk_content
from ragline.merge.lookup import ChunkLookup, load_chunks
from ragline.store.models import Chunk
from ragline.types import ChunkType, SearchResult


def _is_parent_of(parent: Chunk | None, child: SearchResult) -> bool:
    return (
        parent is not None
        and parent.chunk_type == ChunkType.PARENT_TEXT
        and parent.enabled
        and bool(parent.content)
        and parent.knowledge_id == child.knowledge_id
    )


def resolve_parents(
    results: Sequence[SearchResult],
    lookup: ChunkLookup,
    *,
    min_overlap: int = MIN_OVERLAP_CHARS,
    window: int = OVERLAP_WINDOW_CHARS,
) -> int:
    """Give each text result with a parent the parent's text, in place; returns how many were resolved.

    The child's own text is joined onto the parent's (a no-op when the parent contains it), so an edit made
    to the child after ingestion is not lost. When the text is exactly the parent's and the parent's
    coordinates hold, the result takes them; otherwise it is marked rewritten.
    """
    children = [r for r in results if r.chunk_type == ChunkType.TEXT and r.parent_chunk_id]
    parents = load_chunks(lookup, (child.parent_chunk_id for child in children))
    resolved = 0
    for child in children:
        parent = parents.get(child.parent_chunk_id)
        if parent is None or not _is_parent_of(parent, child):
            continue
        child.content = join_chunk_content(parent.content, child.content, min_overlap=min_overlap, window=window)
        if child.id not in child.sub_chunk_id:
            child.sub_chunk_id.append(child.id)
        if child.content == parent.content and chunk_coordinates_trusted(parent):
            child.start_at, child.end_at = parent.start_at, parent.end_at
        else:
            mark_rewritten(child)
        resolved += 1
    return resolved
