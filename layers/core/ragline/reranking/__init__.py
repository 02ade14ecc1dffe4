"""CHUNK_RERANK's library: passage cleaning, model ports, thresholds, composite score, MMR and boosts.

Adapters (``ragline.reranking.providers``) are imported only by the wiring that builds the registry.
"""

from ragline.reranking.base import RankResult, RerankModel
from ragline.reranking.boosts import affinity_factor, apply_memory_affinity, apply_wiki_boost
from ragline.reranking.citations import CitationHistory
from ragline.reranking.clean import clean_passage
from ragline.reranking.config import (
    CompositeWeights,
    MemoryAffinityConfig,
    RerankConfig,
    RerankModelSpec,
    RerankProvider,
)
from ragline.reranking.mmr import jaccard, select_mmr, select_mmr_tokens
from ragline.reranking.passages import enriched_passage, model_passage, select_candidates
from ragline.reranking.registry import RerankModelRegistry
from ragline.reranking.rerank import RerankDiagnostics, RerankOptions, RerankRun, diversify, rerank_results
from ragline.reranking.scoring import RerankOutcome, apply_threshold, composite_score, pre_boost_score

__all__ = [
    "CitationHistory",
    "CompositeWeights",
    "MemoryAffinityConfig",
    "RankResult",
    "RerankConfig",
    "RerankDiagnostics",
    "RerankModel",
    "RerankModelRegistry",
    "RerankModelSpec",
    "RerankOptions",
    "RerankOutcome",
    "RerankProvider",
    "RerankRun",
    "affinity_factor",
    "apply_memory_affinity",
    "apply_threshold",
    "apply_wiki_boost",
    "clean_passage",
    "composite_score",
    "diversify",
    "enriched_passage",
    "jaccard",
    "model_passage",
    "pre_boost_score",
    "rerank_results",
    "select_candidates",
    "select_mmr",
    "select_mmr_tokens",
]
