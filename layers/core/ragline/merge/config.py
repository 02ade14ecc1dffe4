"""CHUNK_MERGE tunables, with the reference design's defaults.

The module constants are the defaults of :class:`MergeConfig` and of the helpers' keyword arguments, so a
helper called on its own behaves exactly as the stage does with an unconfigured ``MergeConfig``.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

# A text passage shorter than this gives the model too little to go on: it is widened with its neighbours.
SHORT_PASSAGE_CHARS = 350
# Widening stops at about this many characters, so one short hit cannot fill the context window.
EXPAND_TARGET_CHARS = 850
# A shared suffix/prefix shorter than this is coincidence (a table rule, "the"), not a chunk overlap.
MIN_OVERLAP_CHARS = 12
# Overlaps are searched within this many characters: parser overlaps are far shorter, and a bound keeps a
# huge edited chunk from turning a join into quadratic work.
OVERLAP_WINDOW_CHARS = 400
# A history reference is kept when this share of the smaller token set (query or passage) is shared.
HISTORY_MIN_OVERLAP = 0.3
# History references were retrieved for an earlier question: they rank below fresh hits of equal score.
HISTORY_SCORE_FACTOR = 0.6
HISTORY_MAX_REFERENCES = 3
# Two passages sharing this share of the smaller token set say the same thing ...
PARTIAL_OVERLAP_MIN_RATIO = 0.85
# ... unless one is more than this many times the other's size: then the smaller is a detail, not a copy.
PARTIAL_OVERLAP_MAX_SIZE_RATIO = 3.0


class MergeConfig(BaseModel):
    """Constants of the eight merge steps (seed: ``merge.go``, ``merge_history.go``, ``merge_expand.go``)."""

    short_passage_chars: int = Field(default=SHORT_PASSAGE_CHARS, ge=0)
    expand_target_chars: int = Field(default=EXPAND_TARGET_CHARS, ge=0)
    min_overlap_chars: int = Field(default=MIN_OVERLAP_CHARS, ge=1)
    overlap_window_chars: int = Field(default=OVERLAP_WINDOW_CHARS, ge=0)
    history_min_overlap: float = Field(default=HISTORY_MIN_OVERLAP, ge=0.0, le=1.0)
    history_score_factor: float = Field(default=HISTORY_SCORE_FACTOR, ge=0.0)
    history_max_references: int = Field(default=HISTORY_MAX_REFERENCES, ge=0)
    partial_overlap_min_ratio: float = Field(default=PARTIAL_OVERLAP_MIN_RATIO, ge=0.0, le=1.0)
    partial_overlap_max_size_ratio: float = Field(default=PARTIAL_OVERLAP_MAX_SIZE_RATIO, ge=1.0)
