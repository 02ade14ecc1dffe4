"""HybridSearch as the seed defines it: over-recall, keyword normalisation, weighted normalised RRF."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from ragline.retrieval.base import RetrieveEngine, RetrieveParams, keyword_divisor
from ragline.retrieval.config import RetrievalConfig
from ragline.text.segmentation import has_han
from ragline.types import MatchType, SearchResult


def pool_size(match_count: int, knowledge_base_count: int, config: RetrievalConfig) -> int:
    """``min(max(MatchCount * 5, 50) * len(KBs), 500)``; ``MatchCount <= 0`` means the default (50)."""
    count = match_count if match_count > 0 else config.default_match_count
    per_base = max(count * config.pool_multiplier, config.min_pool_size)
    return min(per_base * max(1, knowledge_base_count), config.max_pool_size)


def normalize_keyword_scores(hits: list[SearchResult]) -> list[SearchResult]:
    """Divide by the list's best score, so the best keyword hit scores 1 whatever the engine's scale.

    The seed divides only when the best exceeds 1, but BM25 below 1 is no probability either: FTS5 clamps
    the IDF of a term found in more than half the rows to 1e-6, so in a knowledge base of one or two
    documents every raw score is ~1e-6 and the keyword threshold (0.3) dropped every hit — a document whose
    vectors are not computed yet was then found by nothing.
    """
    if not hits:
        return hits
    divisor = keyword_divisor(max(h.score for h in hits))
    if divisor == 1:
        return hits
    return [h.model_copy(update={"score": h.score / divisor}) for h in hits]


def _best_ranks(hits: list[SearchResult]) -> dict[str, int]:
    ranks: dict[str, int] = {}
    for rank, hit in enumerate(hits, start=1):
        ranks.setdefault(hit.id, rank)
    return ranks


def list_weights(config: RetrievalConfig, query: str, embedding_model: str) -> tuple[float, float]:
    """How much the vector list counts, against the keyword list, for this query.

    1 each, unless the embedding model does not read the query's language (``config.model_languages``), when the vector
    list counts ``config.unread_language_vector_weight`` — it orders what keyword search did not find, and never
    outvotes it. MiniLM on Chinese questions scored 0.083 nDCG@10 where keyword search scored 0.975, and fused 1:1 it
    cost the hybrid 0.03 (bench/retrieval/benchmark.py). An ensemble's vector list counts one vote per model it reads
    with (``config.model_votes``): MiniLM + bge-small-en at 2:1 scored SciFact 0.759, at 1:1 0.741.
    """
    if not config.adaptive:
        return 1.0, 1.0
    languages = config.model_languages.get(embedding_model)
    if languages is not None and query_language(query) not in languages:
        return config.unread_language_vector_weight, 1.0
    return config.model_votes.get(embedding_model, 1.0), 1.0


def query_language(query: str) -> str:
    """``zh`` for a query with Han characters, else ``en`` (the two languages the local models divide)."""
    return "zh" if has_han(query) else "en"


def fuse(
    vector_hits: list[SearchResult],
    keyword_hits: list[SearchResult],
    config: RetrievalConfig,
    *,
    query: str = "",
    embedding_model: str = "",
    vector_background: float | None = None,
) -> list[SearchResult]:
    """Fuse two ranked lists; one list only: dedupe by id keeping the best score.

    Both lists: ``config.fusion`` chooses weighted score fusion (the default) or the seed's weighted RRF;
    with ``config.adaptive`` the lists' weights also depend on the query (:func:`list_weights`).
    ``vector_background`` is the query's mean cosine with the knowledge base (see :func:`fuse_scores`).
    """
    if not vector_hits or not keyword_hits:
        best: dict[str, SearchResult] = {}
        for hit in vector_hits or keyword_hits:
            if hit.id not in best or hit.score > best[hit.id].score:
                best[hit.id] = hit
        return sorted(best.values(), key=lambda h: (-h.score, h.id))
    vector_factor, keyword_factor = list_weights(config, query, embedding_model)
    if config.fusion == "score":
        return fuse_scores(vector_hits, keyword_hits, config, vector_factor, keyword_factor, vector_background)
    return fuse_rrf(vector_hits, keyword_hits, config, vector_factor, keyword_factor)


def _best_scores(hits: list[SearchResult]) -> dict[str, float]:
    scores: dict[str, float] = {}
    for hit in hits:
        scores[hit.id] = max(hit.score, scores.get(hit.id, float("-inf")))
    return scores


def fuse_scores(
    vector_hits: list[SearchResult],
    keyword_hits: list[SearchResult],
    config: RetrievalConfig,
    vector_factor: float = 1.0,
    keyword_factor: float = 1.0,
    vector_background: float | None = None,
) -> list[SearchResult]:
    """Weighted sum of each list's scores on [0, 1].

    ``wv·v' + wk·k'`` over ``wv + wk``, so a hit that tops both lists scores 1.

    Ranks throw away how far ahead a hit is; on SciFact score fusion reached 0.734 nDCG@10 where the seed's
    weighted RRF reached 0.720 (bench/retrieval/scifact.py; same lists, same thresholds).

    ``score_normalization: background`` (the default): a keyword score over the list's best (BM25 0 is no
    match); a cosine measured from ``vector_background`` — the query's mean cosine with the knowledge base,
    what the model gives unrelated text — to the list's best. Divided by its best instead, a model whose
    cosines all lie near 0.8 (multilingual e5: its background on CMRC is 0.815, the best hit 0.905) gives
    every hit ~0.9 and its list votes nearly alike for all of them; MiniLM's background is ~0.1, so its
    list changes little. Without a background (an engine that cannot tell) the cosine is divided by its best.
    """
    wv, wk = config.score_vector_weight * vector_factor, config.score_keyword_weight * keyword_factor
    if wv + wk <= 0:
        wv = wk = 1.0
    vector_scores, keyword_scores = _best_scores(vector_hits), _best_scores(keyword_hits)
    normalization = config.score_normalization
    scale_v = _scaler(list(vector_scores.values()), normalization, vector_background)
    scale_k = _scaler(list(keyword_scores.values()), "max" if normalization == "background" else normalization)
    by_id: dict[str, SearchResult] = {}
    for hit in [*vector_hits, *keyword_hits]:
        by_id.setdefault(hit.id, hit)
    fused: list[SearchResult] = []
    for chunk_id, hit in by_id.items():
        v, k = vector_scores.get(chunk_id), keyword_scores.get(chunk_id)
        score = (wv * (scale_v(v) if v is not None else 0.0) + wk * (scale_k(k) if k is not None else 0.0)) / (wv + wk)
        match_type = (
            MatchType.HYBRID
            if v is not None and k is not None
            else (MatchType.EMBEDDING if v is not None else MatchType.KEYWORD)
        )
        fused.append(
            hit.model_copy(update={"score": score, "match_type": match_type, "vector_score": v, "keyword_score": k})
        )
    return sorted(fused, key=lambda h: (-h.score, h.id))


def _scaler(scores: list[float], normalization: str, background: float | None = None) -> Callable[[float], float]:
    """A list's scores onto [0, 1].

    Divided by the best (``max``), from the list's worst to its best (``minmax``), or from ``background`` to the best
    (``background``; scores below it count 0).
    """
    top = max(scores)
    if normalization == "background" and background is not None and top > background:
        span = top - background
        return lambda s: max(0.0, (s - background) / span)
    if normalization == "minmax" and len(scores) > 1:
        floor = min(scores)
        span = top - floor
        return (lambda s: (s - floor) / span) if span > 0 else (lambda s: 1.0)
    divisor = top or 1.0
    return lambda s: s / divisor


def fuse_rrf(
    vector_hits: list[SearchResult],
    keyword_hits: list[SearchResult],
    config: RetrievalConfig,
    vector_factor: float = 1.0,
    keyword_factor: float = 1.0,
) -> list[SearchResult]:
    """The seed's fusion.

    Weighted RRF normalised to [0, 1]: ``(wv/(k+rv) + wk/(k+rk)) / ((wv+wk)/(k+1))`` where ``r`` is the best 1-based
    rank in each list and a missing list contributes nothing; first place in both lists scores exactly 1.
    """
    k = config.rrf_k
    wv, wk = config.vector_weight * vector_factor, config.keyword_weight * keyword_factor
    if wv + wk <= 0:
        wv = wk = 1.0
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


# Keyword searches run here, beside the query embedding and vector search of the same request.
_KEYWORD_THREADS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="keyword-search")


def hybrid_search(
    engine: RetrieveEngine,
    params: RetrieveParams,
    config: RetrievalConfig,
    query_embedding: Callable[[], npt.NDArray[np.float32] | None] | None = None,
) -> list[SearchResult]:
    """Search one engine group: both retrievers over-recall a pool, thresholds apply, fusion ranks.

    With ``query_embedding`` (used instead of ``params.query_embedding``), the query vector is computed while
    the keyword search runs on another thread: the model and numpy release the GIL, so on two cores the
    embedding and the keyword search overlap instead of adding up.
    """
    match_count = params.match_count if params.match_count > 0 else config.default_match_count
    pool = pool_size(match_count, len(params.knowledge_base_ids), config)
    keyword_wanted = params.keyword_enabled and bool(params.query.strip())
    vector_wanted = params.vector_enabled and (query_embedding is not None or params.query_embedding is not None)
    pending: Future[list[SearchResult]] | None = None
    if keyword_wanted and vector_wanted and query_embedding is not None:
        pending = _KEYWORD_THREADS.submit(_keyword_hits, engine, params, pool)
    vector_hits: list[SearchResult] = []
    background: float | None = None
    if vector_wanted:
        if query_embedding is not None:
            params = replace(params, query_embedding=query_embedding())
        if params.query_embedding is not None:
            vector_hits = _vector_hits(engine, params, pool)
            background = _background(engine, params, config) if vector_hits else None
    keyword_hits: list[SearchResult] = []
    if pending is not None:
        keyword_hits = pending.result()
    elif keyword_wanted:
        keyword_hits = _keyword_hits(engine, params, pool)
    fused = fuse(
        vector_hits,
        keyword_hits,
        config,
        query=params.query,
        embedding_model=params.embedding_model,
        vector_background=background,
    )
    return fused[:match_count]


def _background(engine: RetrieveEngine, params: RetrieveParams, config: RetrievalConfig) -> float | None:
    """The query's mean cosine with the searched chunks, when an engine offers it.

    The query's mean cosine with the searched chunks, from an engine that offers it (``vector_background``; the embedded
    engine does), when score fusion measures cosines from it.
    """
    if config.fusion != "score" or config.score_normalization != "background":
        return None
    measure = getattr(engine, "vector_background", None)
    return measure(params) if measure is not None else None


def _vector_hits(engine: RetrieveEngine, params: RetrieveParams, pool: int) -> list[SearchResult]:
    return [
        h.model_copy(update={"vector_score": h.score, "match_type": MatchType.EMBEDDING})
        for h in engine.vector_search(params, pool)
        if h.score >= params.vector_threshold
    ]


def _keyword_hits(engine: RetrieveEngine, params: RetrieveParams, pool: int) -> list[SearchResult]:
    """The keyword hits normalised and above the threshold.

    The keyword hits normalised as :func:`normalize_keyword_scores` does, above the threshold (only those are copied:
    most of a pool is below it).
    """
    hits = engine.keyword_search(params, pool)
    if not hits:
        return []
    divisor = keyword_divisor(max(h.score for h in hits))
    return [
        h.model_copy(update={"score": score, "keyword_score": score, "match_type": MatchType.KEYWORD})
        for h in hits
        if (score := h.score / divisor) >= params.keyword_threshold
    ]
