"""HybridSearch as the seed defines it: over-recall, keyword normalisation, weighted normalised RRF."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragline.retrieval.base import RetrieveEngine, RetrieveParams
from ragline.types import MatchType, SearchResult

if TYPE_CHECKING:  # config imports the stages' settings, which import retrieval helpers
    from ragline.config import RetrievalConfig


def pool_size(match_count: int, knowledge_base_count: int, config: RetrievalConfig) -> int:
    """``min(max(MatchCount * 5, 50) * len(KBs), 500)``; ``MatchCount <= 0`` means the default (50)."""
    count = match_count if match_count > 0 else config.default_match_count
    per_base = max(count * config.pool_multiplier, config.min_pool_size)
    return min(per_base * max(1, knowledge_base_count), config.max_pool_size)


def normalize_keyword_scores(hits: list[SearchResult]) -> list[SearchResult]:
    """Divide by the list's best score when it exceeds 1, so raw BM25 never saturates a [0, 1] scale."""
    if not hits:
        return hits
    best = max(h.score for h in hits)
    if best <= 1:
        return hits
    return [h.model_copy(update={"score": h.score / best}) for h in hits]


def _best_ranks(hits: list[SearchResult]) -> dict[str, int]:
    ranks: dict[str, int] = {}
    for rank, hit in enumerate(hits, start=1):
        ranks.setdefault(hit.id, rank)
    return ranks


def fuse(
    vector_hits: list[SearchResult], keyword_hits: list[SearchResult], config: RetrievalConfig
) -> list[SearchResult]:
    """Fuse two ranked lists; one list only: dedupe by id keeping the best score.

    Both lists: ``config.fusion`` chooses weighted score fusion (the default) or the seed's weighted RRF.
    """
    if not vector_hits or not keyword_hits:
        best: dict[str, SearchResult] = {}
        for hit in vector_hits or keyword_hits:
            if hit.id not in best or hit.score > best[hit.id].score:
                best[hit.id] = hit
        return sorted(best.values(), key=lambda h: (-h.score, h.id))
    if config.fusion == "score":
        return fuse_scores(vector_hits, keyword_hits, config)
    return fuse_rrf(vector_hits, keyword_hits, config)


def _best_scores(hits: list[SearchResult]) -> dict[str, float]:
    scores: dict[str, float] = {}
    for hit in hits:
        scores[hit.id] = max(hit.score, scores.get(hit.id, float("-inf")))
    return scores


def fuse_scores(
    vector_hits: list[SearchResult], keyword_hits: list[SearchResult], config: RetrievalConfig
) -> list[SearchResult]:
    """Weighted sum of each list's scores divided by that list's best: ``wv·s/max_v + wk·s/max_k``, over
    ``wv + wk`` so a hit that tops both lists scores 1.

    Ranks throw away how far ahead a hit is; on SciFact score fusion reached 0.734 nDCG@10 where the seed's
    weighted RRF reached 0.720 (bench/retrieval/scifact.py; same lists, same thresholds).
    """
    wv, wk = config.score_vector_weight, config.score_keyword_weight
    vector_scores, keyword_scores = _best_scores(vector_hits), _best_scores(keyword_hits)
    top_v = max(vector_scores.values()) or 1.0
    top_k = max(keyword_scores.values()) or 1.0
    by_id: dict[str, SearchResult] = {}
    for hit in [*vector_hits, *keyword_hits]:
        by_id.setdefault(hit.id, hit)
    fused: list[SearchResult] = []
    for chunk_id, hit in by_id.items():
        v, k = vector_scores.get(chunk_id), keyword_scores.get(chunk_id)
        score = (wv * (v / top_v if v is not None else 0.0) + wk * (k / top_k if k is not None else 0.0)) / (wv + wk)
        match_type = (
            MatchType.HYBRID
            if v is not None and k is not None
            else (MatchType.EMBEDDING if v is not None else MatchType.KEYWORD)
        )
        fused.append(
            hit.model_copy(update={"score": score, "match_type": match_type, "vector_score": v, "keyword_score": k})
        )
    return sorted(fused, key=lambda h: (-h.score, h.id))


def fuse_rrf(
    vector_hits: list[SearchResult], keyword_hits: list[SearchResult], config: RetrievalConfig
) -> list[SearchResult]:
    """The seed's fusion: weighted RRF normalised to [0, 1]:
    ``(wv/(k+rv) + wk/(k+rk)) / ((wv+wk)/(k+1))`` where ``r`` is the best 1-based rank in each list and a
    missing list contributes nothing; first place in both lists scores exactly 1.
    """

    k = config.rrf_k
    wv, wk = config.vector_weight, config.keyword_weight
    norm = (wv + wk) / (k + 1)
    vector_ranks, keyword_ranks = _best_ranks(vector_hits), _best_ranks(keyword_hits)
    by_id: dict[str, SearchResult] = {}
    vector_scores: dict[str, float] = {}
    keyword_scores: dict[str, float] = {}
    for hit in vector_hits:
        by_id.setdefault(hit.id, hit)
        vector_scores[hit.id] = max(hit.score, vector_scores.get(hit.id, float("-inf")))
    for hit in keyword_hits:
        by_id.setdefault(hit.id, hit)
        keyword_scores[hit.id] = max(hit.score, keyword_scores.get(hit.id, float("-inf")))
    fused: list[SearchResult] = []
    for chunk_id, hit in by_id.items():
        rv, rk = vector_ranks.get(chunk_id), keyword_ranks.get(chunk_id)
        score = ((wv / (k + rv)) if rv else 0.0) + ((wk / (k + rk)) if rk else 0.0)
        match_type = MatchType.HYBRID if rv and rk else (MatchType.EMBEDDING if rv else MatchType.KEYWORD)
        fused.append(
            hit.model_copy(
                update={
                    "score": score / norm,
                    "match_type": match_type,
                    "vector_score": vector_scores.get(chunk_id),
                    "keyword_score": keyword_scores.get(chunk_id),
                }
            )
        )
    return sorted(fused, key=lambda h: (-h.score, h.id))


def hybrid_search(engine: RetrieveEngine, params: RetrieveParams, config: RetrievalConfig) -> list[SearchResult]:
    """Search one engine group: both retrievers over-recall a pool, thresholds apply, fusion ranks."""
    match_count = params.match_count if params.match_count > 0 else config.default_match_count
    pool = pool_size(match_count, len(params.knowledge_base_ids), config)
    vector_hits: list[SearchResult] = []
    keyword_hits: list[SearchResult] = []
    if params.vector_enabled and params.query_embedding is not None:
        vector_hits = [
            h.model_copy(update={"vector_score": h.score, "match_type": MatchType.EMBEDDING})
            for h in engine.vector_search(params, pool)
            if h.score >= params.vector_threshold
        ]
    if params.keyword_enabled and params.query.strip():
        keyword_hits = [
            h.model_copy(update={"keyword_score": h.score, "match_type": MatchType.KEYWORD})
            for h in normalize_keyword_scores(engine.keyword_search(params, pool))
            if h.score >= params.keyword_threshold
        ]
    return fuse(vector_hits, keyword_hits, config)[:match_count]
