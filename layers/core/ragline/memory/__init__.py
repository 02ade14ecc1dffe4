"""Long-term memory.

Durable facts about a user, extracted after opted-in turns and recalled, without a model call, into later prompts.

The HTTP routes live in :mod:`ragline.server.routes.memories` and the adapters in :mod:`ragline.memory.sqlite` and
:mod:`ragline.memory.dynamodb`; they are imported by the wiring only.
"""

from ragline.memory.extract import CompletedTurn, MemoryExtractor, heuristic_facts, parse_facts
from ragline.memory.models import Memory, memory_enabled, new_memory
from ragline.memory.recall import DEFAULT_RECALL_TOP_K, MIN_RECALL_SCORE, format_memory_prompt, recall
from ragline.memory.store import DUPLICATE_SIMILARITY, MAX_MEMORIES_PER_USER, MemoryStore, ScoredMemories

__all__ = [
    "DEFAULT_RECALL_TOP_K",
    "DUPLICATE_SIMILARITY",
    "MAX_MEMORIES_PER_USER",
    "MIN_RECALL_SCORE",
    "CompletedTurn",
    "Memory",
    "MemoryExtractor",
    "MemoryStore",
    "ScoredMemories",
    "format_memory_prompt",
    "heuristic_facts",
    "memory_enabled",
    "new_memory",
    "parse_facts",
    "recall",
]
