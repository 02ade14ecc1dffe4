"""CHUNK_MERGE's steps: from ranked hits to the passages the model reads.

Each module is one step or one helper; ``ragline.pipeline.chunk_merge.PluginMerge`` runs them in order.
"""

from ragline.merge.config import MergeConfig
from ragline.merge.coordinates import coordinates_trusted, mark_rewritten
from ragline.merge.expand import assemble, expand_short_passages
from ragline.merge.faq import faq_content, render_faq, render_faq_answers
from ragline.merge.history import history_references, latest_references
from ragline.merge.images import merge_image_info
from ragline.merge.join import (
    JOIN_SEPARATOR,
    contains_chunk_content,
    content_overlap_ratio,
    is_content_contained,
    join_chunk_content,
    overlap_length,
    token_overlap_ratio,
)
from ragline.merge.lookup import ChunkLookup, load_chunks
from ragline.merge.overlaps import remove_partial_overlaps
from ragline.merge.parents import resolve_parents
from ragline.merge.select import select_input
from ragline.merge.sequential import merge_group, merge_sequential, union_of_slices

__all__ = [
    "JOIN_SEPARATOR",
    "ChunkLookup",
    "MergeConfig",
    "assemble",
    "contains_chunk_content",
    "content_overlap_ratio",
    "coordinates_trusted",
    "expand_short_passages",
    "faq_content",
    "history_references",
    "is_content_contained",
    "join_chunk_content",
    "latest_references",
    "load_chunks",
    "mark_rewritten",
    "merge_group",
    "merge_image_info",
    "merge_sequential",
    "overlap_length",
    "remove_partial_overlaps",
    "render_faq",
    "render_faq_answers",
    "resolve_parents",
    "select_input",
    "token_overlap_ratio",
    "union_of_slices",
]
