"""When a passage's source coordinates can be believed.

``start_at``/``end_at`` locate a chunk in its source as the parser cut it. After an edit, a parent
expansion or a join they no longer describe the text, and merging by them would drop or duplicate words.
They are trusted only when nothing says otherwise: revision 0, not rewritten by this stage, and a length
that still equals the span.
"""

from __future__ import annotations

from collections.abc import Mapping

from ragline.store.models import Chunk
from ragline.types import SearchResult

# Set in ``SearchResult.metadata`` by every step that changes a passage's text away from its source slice.
REWRITTEN_KEY = "content_rewritten"
REWRITTEN = "true"
# A chunk edited after ingestion records a revision above 0 in its metadata.
REVISION_KEY = "revision"
ORIGINAL_REVISION = 0


def mark_rewritten(result: SearchResult) -> None:
    """Record that ``result``'s text no longer matches its source slice, so its offsets decide no merge."""
    result.metadata[REWRITTEN_KEY] = REWRITTEN


def is_rewritten(result: SearchResult) -> bool:
    """True when a step changed the passage's text away from its source slice."""
    return result.metadata.get(REWRITTEN_KEY) == REWRITTEN


def is_original_revision(metadata: Mapping[str, object]) -> bool:
    """Absent means never edited; a value that is not a number is not trusted."""
    value = metadata.get(REVISION_KEY, ORIGINAL_REVISION)
    try:
        return int(str(value)) == ORIGINAL_REVISION
    except ValueError:
        return False


def span_matches(content: str, start_at: int, end_at: int) -> bool:
    """The text is exactly as long as its span (Python lengths count code points, like Go runes)."""
    return 0 <= start_at < end_at and len(content) == end_at - start_at


def coordinates_trusted(result: SearchResult) -> bool:
    """A result's ``start_at``/``end_at`` may decide merges: the edit marker may sit in either metadata."""
    return (
        not is_rewritten(result)
        and is_original_revision(result.chunk_metadata)
        and is_original_revision(result.metadata)
        and span_matches(result.content, result.start_at, result.end_at)
    )


def chunk_coordinates_trusted(chunk: Chunk) -> bool:
    """A stored chunk's ``start_at``/``end_at`` may decide merges: never edited, and its text as long as its span."""
    return is_original_revision(chunk.metadata) and span_matches(chunk.content, chunk.start_at, chunk.end_at)
