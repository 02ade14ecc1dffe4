"""From model scores to ranked results: thresholds with their fallbacks, the composite score, the FAQ boost.

The composite keeps the model in charge (0.6) while the retrieval score (0.3) breaks near-ties the model
cannot separate and a source weight (0.1) prefers the user's own documents over web snippets.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import StrEnum
from typing import NamedTuple

from ragline.reranking.base import RankResult
from ragline.reranking.config import RerankConfig
from ragline.reranking.passages import is_graph_hit
from ragline.types import ChunkType, SearchResult

BASE_SCORE_KEY = "base_score"
MODEL_SCORE_KEY = "model_score"
# The composite before any boost (FAQ here; wiki and memory boosts later in the chain change ``score``).
COMPOSITE_SCORE_KEY = "composite_score"
FAQ_BOOSTED_KEY = "faq_boosted"
FAQ_ORIGINAL_SCORE_KEY = "faq_original_score"
SCORE_DECIMALS = 4


class RerankOutcome(StrEnum):
    """How a rerank ended. The first four keep the retrieval results; the rest are the model's verdict."""

    NO_CANDIDATES = "no_candidates"
    NO_MODEL = "no_model"
    MODEL_UNAVAILABLE = "model_unavailable"
    MODEL_ERROR = "model_error"
    OK = "ok"
    THRESHOLD_DEGRADED = "threshold_degraded"
    FALLBACK_TOP1 = "fallback_top1"
    ALL_BELOW_THRESHOLD = "all_below_threshold"

    @property
    def keeps_retrieval_results(self) -> bool:
        """No model verdict: later stages read the search results as they were."""
        return self in _KEEPS_RETRIEVAL_RESULTS


_KEEPS_RETRIEVAL_RESULTS = frozenset(
    {
        RerankOutcome.NO_CANDIDATES,
        RerankOutcome.NO_MODEL,
        RerankOutcome.MODEL_UNAVAILABLE,
        RerankOutcome.MODEL_ERROR,
    }
)


class ThresholdDecision(NamedTuple):
    """The results that cleared the relevance threshold, how the threshold step ended, and the threshold it used."""

    passing: list[RankResult]
    outcome: RerankOutcome
    effective_threshold: float


def format_score(score: float) -> str:
    """A score as shown in logs and diagnostics, at :data:`SCORE_DECIMALS` decimals."""
    return f"{score:.{SCORE_DECIMALS}f}"


def best_score(scores: Sequence[RankResult]) -> RankResult | None:
    """The highest score; providers usually sort, but nothing guarantees it."""
    best: RankResult | None = None
    for score in scores:
        if best is None or score.score > best.score:
            best = score
    return best


def apply_threshold(
    scores: Sequence[RankResult], threshold: float, explicit_scope: bool, config: RerankConfig
) -> ThresholdDecision:
    """Keep scores ≥ ``threshold``.

    If none pass and the threshold is above the floor, retry once at max(threshold × factor, floor). If still none, keep
    the best one when it reaches the fallback minimum, or unconditionally when the user scoped the turn to documents or
    tags: a global threshold must not erase the whole scope the user chose. Otherwise nothing passes.
    """
    passing = [s for s in scores if s.score >= threshold]
    if passing:
        return ThresholdDecision(passing, RerankOutcome.OK, threshold)
    if threshold > config.threshold_floor:
        threshold = max(threshold * config.degrade_factor, config.threshold_floor)
        passing = [s for s in scores if s.score >= threshold]
        if passing:
            return ThresholdDecision(passing, RerankOutcome.THRESHOLD_DEGRADED, threshold)
    # Model scores can be negative (raw logits), so "unconditionally" is -inf rather than 0.
    fallback_min = -math.inf if explicit_scope else config.fallback_min_score
    top = best_score(scores)
    if top is not None and top.score >= fallback_min:
        return ThresholdDecision([top], RerankOutcome.FALLBACK_TOP1, threshold)
    return ThresholdDecision([], RerankOutcome.ALL_BELOW_THRESHOLD, threshold)


def source_weight(result: SearchResult, config: RerankConfig) -> float:
    """How much a result's source counts in the composite score: web pages weigh differently from chunks."""
    return config.web_source_weight if result.is_web else config.default_source_weight


def composite_score(result: SearchResult, model_score: float, config: RerankConfig) -> float:
    """clamp01(w_model·model + w_retrieval·base + w_source·source weight).

    A graph hit has no retrieval score (entity lookup, not similarity search): the model score stands in
    for it rather than a made-up constant.
    """
    base = model_score if is_graph_hit(result) else result.score
    weights = config.composite
    value = weights.model * model_score + weights.retrieval * base + weights.source * source_weight(result, config)
    return min(max(value, 0.0), 1.0)


def score_result(
    result: SearchResult, model_score: float, faq_boost: float | None, config: RerankConfig
) -> tuple[SearchResult, float]:
    """A copy of ``result`` scored by the composite (and the FAQ boost); returns it with its pre-boost score.

    Metadata records ``base_score``, ``model_score`` and ``composite_score``; a boosted FAQ entry also gets
    ``faq_boosted`` and ``faq_original_score``. The input is never modified: the search result list stays
    intact for stages that fall back to it.
    """
    scored = result.model_copy(deep=True)
    composite = composite_score(result, model_score, config)
    base = model_score if is_graph_hit(result) else result.score
    scored.metadata[BASE_SCORE_KEY] = format_score(base)
    scored.metadata[MODEL_SCORE_KEY] = format_score(model_score)
    scored.metadata[COMPOSITE_SCORE_KEY] = format_score(composite)
    scored.score = composite
    if faq_boost is not None and faq_boost > 1.0 and result.chunk_type == ChunkType.FAQ:
        # The seed's text says "no cap at 1.0" (capping made strong FAQ entries tie at exactly 1.0); the
        # newer reference caps with min(score × boost, 1.0) and breaks those ties by the pre-boost score
        # instead. We follow the newer reference: scores stay on the [0, 1] scale that thresholds and
        # clients expect, and the ranking among capped entries is still by relevance (see ``rank_key``).
        scored.metadata[FAQ_BOOSTED_KEY] = "true"
        scored.metadata[FAQ_ORIGINAL_SCORE_KEY] = format_score(composite)
        scored.score = min(composite * faq_boost, 1.0)
    return scored, composite


def rank_key(scored: tuple[SearchResult, float]) -> tuple[float, float]:
    """Sort key: score descending, ties by the pre-boost score descending."""
    result, pre_boost = scored
    return (-result.score, -pre_boost)


def pre_boost_score(result: SearchResult) -> float:
    """The score to compare with absolute thresholds (FAQ direct answer).

    The composite before any boost when the result was reranked, its current score otherwise.
    """
    raw = result.metadata.get(COMPOSITE_SCORE_KEY)
    if raw is not None:
        try:
            return float(raw)
        except ValueError:
            pass
    return result.score
