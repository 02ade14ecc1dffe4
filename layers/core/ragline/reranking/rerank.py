"""One rerank run: candidates → passages → model scores → thresholds → composite → FAQ boost → MMR.

A plain async function over a model and a result list, so the chat pipeline, the agent's search tool and
the search API share it. It never raises for a model failure and never modifies its input: a failed call
is the ``model_error`` outcome and the caller keeps its retrieval results.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from ragline.reranking.base import RankResult, RerankModel
from ragline.reranking.config import RerankConfig
from ragline.reranking.mmr import select_mmr
from ragline.reranking.passages import is_graph_hit, model_passage, select_candidates
from ragline.reranking.scoring import RerankOutcome, apply_threshold, best_score, rank_key, score_result
from ragline.types import SearchResult
from ragline.types.search import is_image_hit

logger = logging.getLogger(__name__)


class RerankOptions(BaseModel):
    """The request's side of a run."""

    threshold: float
    top_k: int
    # The user narrowed the turn to documents or tags: the best candidate survives any threshold.
    explicit_scope: bool = False
    # FAQ score multiplier; None or ≤ 1 means off.
    faq_boost: float | None = None
    # The search's vector threshold: an image a text model rejects is kept on its vector score above it.
    vector_threshold: float = 0.0


class RerankDiagnostics(BaseModel):
    """What happened, for logs, traces and API callers."""

    outcome: RerankOutcome
    model_id: str = ""
    threshold: float = 0.0
    effective_threshold: float = 0.0
    input_count: int = 0
    candidate_count: int = 0
    model_result_count: int = 0
    top_score: float | None = None
    result_count: int = 0
    error: str = ""
    # Image hits the model scored, and those kept on their vector score though it rejected them.
    images_scored: int = 0
    images_kept: int = 0


@dataclass
class RerankRun:
    """Ranked copies of the passing results (empty when the outcome keeps the retrieval results)."""

    diagnostics: RerankDiagnostics
    results: list[SearchResult] = field(default_factory=list)


def max_candidates(top_k: int, config: RerankConfig) -> int:
    """How many search results are sent to the rerank model: the configured cap, or ``top_k`` when larger."""
    return max(config.max_candidates, top_k)


def _valid_scores(scores: Sequence[RankResult], count: int) -> list[RankResult]:
    """In-range indices with finite scores, first score per index: nothing below re-checks them."""
    seen: set[int] = set()
    valid: list[RankResult] = []
    for score in scores:
        if 0 <= score.index < count and score.index not in seen and math.isfinite(score.score):
            seen.add(score.index)
            valid.append(score)
    return valid


# The reference's image rules for a text rerank model (internal/reranking/image.go).
IMAGE_TEXT_AS_TEXT = 200
IMAGE_VECTOR_FLOOR = 0.25
MAX_KEPT_IMAGES = 2
KEPT_BY = "kept_by"
IMAGE_VECTOR = "image_vector"


async def rerank_results(
    model: RerankModel,
    query: str,
    results: Sequence[SearchResult],
    options: RerankOptions,
    config: RerankConfig,
) -> RerankRun:
    """Score ``results`` against ``query`` with ``model`` and return the selected, ranked copies.

    A threshold that rejects everything is degraded by re-filtering the same scores: the seed called the
    model a second time with identical inputs, which can only return the same scores.
    """
    diagnostics = RerankDiagnostics(
        outcome=RerankOutcome.NO_CANDIDATES,
        model_id=model.model_id,
        threshold=options.threshold,
        effective_threshold=options.threshold,
        input_count=len(results),
    )
    candidates: list[SearchResult] = []
    passages: list[str] = []
    for candidate in select_candidates(results, max_candidates(options.top_k, config)):
        passage = model_passage(candidate, model.max_passage_chars)
        if passage.strip():
            candidates.append(candidate)
            passages.append(passage)
    diagnostics.candidate_count = len(candidates)
    if not candidates:
        return RerankRun(diagnostics)

    try:
        raw = await asyncio.wait_for(model.rerank(query, passages), timeout=config.timeout_s)
    except Exception as exc:  # any failure of the model degrades to the retrieval order
        diagnostics.outcome = RerankOutcome.MODEL_ERROR
        diagnostics.error = f"{type(exc).__name__}: {exc}"
        return RerankRun(diagnostics)

    scores = _valid_scores(raw, len(candidates))
    diagnostics.model_result_count = len(scores)
    top = best_score(scores)
    diagnostics.top_score = top.score if top is not None else None
    decision = apply_threshold(scores, options.threshold, options.explicit_scope, config)
    diagnostics.outcome = decision.outcome
    diagnostics.effective_threshold = decision.effective_threshold

    scored = [score_result(candidates[s.index], s.score, options.faq_boost, config) for s in decision.passing]
    scored.sort(key=rank_key)
    ranked = [result for result, _ in scored]
    picks = select_mmr(ranked, min(max(1, options.top_k), len(ranked)), config.mmr_lambda)
    selected = [ranked[p] for p in picks]
    passing = {s.index for s in decision.passing}
    kept = kept_images(candidates, scores, passing, options.vector_threshold)
    diagnostics.images_scored = sum(1 for c in candidates if is_image_hit(c))
    diagnostics.images_kept = len(kept)
    if kept and not selected:
        # No text passed, and images were kept on their vector score: they are the answer's context.
        diagnostics.outcome = RerankOutcome.OK
    selected.extend(kept)
    diagnostics.result_count = len(selected)
    return RerankRun(diagnostics, selected)


def kept_images(
    candidates: Sequence[SearchResult], scores: Sequence[RankResult], passing: set[int], vector_threshold: float
) -> list[SearchResult]:
    """Images a text model rejected but their vector found, best vector score first, at most two.

    The reference's text-only path: an image whose OCR text has at least :data:`IMAGE_TEXT_AS_TEXT` characters
    is judged as text; a shorter one (a diagram, a photo with a label) tells a text model too little, so when
    rejected it is kept on a vector score of at least ``max(vector_threshold, 0.25)``, marked
    ``kept_by = "image_vector"``.
    """
    rerank = {s.index: s.score for s in scores}
    floor = max(vector_threshold, IMAGE_VECTOR_FLOOR)
    rejected = [
        (index, candidate)
        for index, candidate in enumerate(candidates)
        if is_image_hit(candidate)
        and index not in passing
        and len(candidate.content.strip()) < IMAGE_TEXT_AS_TEXT
        and (candidate.vector_score or 0.0) >= floor
    ]
    rejected.sort(key=lambda pair: -(pair[1].vector_score or 0.0))
    kept = []
    for index, candidate in rejected[:MAX_KEPT_IMAGES]:
        copy = candidate.model_copy(deep=True)
        copy.metadata[KEPT_BY] = IMAGE_VECTOR
        copy.metadata["rerank_score"] = f"{rerank.get(index, 0.0):.4f}"
        kept.append(copy)
    return kept


def diversify(results: Sequence[SearchResult], top_k: int, config: RerankConfig) -> list[SearchResult]:
    """MMR over retrieval scores, for a turn without a rerank model; graph hits follow untouched.

    Graph hits score 0 by construction, so MMR would never pick them; they are appended so that the merge
    stage's "graph hits are always kept" rule still sees them.
    """
    candidates = select_candidates(results, max_candidates(top_k, config))
    ranked = sorted((r for r in candidates if not is_graph_hit(r)), key=lambda r: -r.score)
    picks = select_mmr(ranked, max(1, top_k), config.mmr_lambda)
    return [ranked[p] for p in picks] + [r for r in candidates if is_graph_hit(r)]
