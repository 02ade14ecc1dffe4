"""Maximal Marginal Relevance: the top-k that are relevant and not copies of one another.

``mmr = λ·relevance − (1 − λ)·max Jaccard(candidate, already selected)``. Relevance is the candidate's
score; redundancy is the Jaccard overlap of TokenizeSimple token sets of the enriched passages. Shared by
the chat pipeline, the agent's search tool and the search API.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Set
from functools import lru_cache

import numpy as np

from ragline.reranking.config import RerankConfig
from ragline.reranking.passages import enriched_passage
from ragline.text.segmentation import tokenize_simple
from ragline.types import SearchResult

# The configuration's default (RerankConfig.mmr_lambda) is the one source.
DEFAULT_MMR_LAMBDA = RerankConfig().mmr_lambda


def jaccard(a: Set[str], b: Set[str]) -> float:
    """|A ∩ B| / |A ∪ B|; two empty sets share nothing."""
    intersection = len(a & b)
    union = len(a) + len(b) - intersection
    return intersection / union if union else 0.0


def _argmax(values: Sequence[float], indices: Sequence[int]) -> int:
    """The index of the largest value; ties go to the earliest (strict >)."""
    best = indices[0]
    best_value = values[best]
    for i in indices[1:]:
        if values[i] > best_value:
            best, best_value = i, values[i]
    return best


def select_mmr_tokens(scores: Sequence[float], token_sets: Sequence[Set[str]], k: int, lambda_: float) -> list[int]:
    """MMR over precomputed token sets; indices in selection order.

    An inverted index token → candidates means a pick only updates the candidates that share a token with
    it: a disjoint passage's redundancy stays 0 and is never recomputed. Each candidate caches its maximum
    Jaccard against the selection, so one round costs the pick's postings, not n × |selected| set
    intersections.
    """
    count = len(scores)
    if k <= 0 or count == 0:
        return []
    postings: dict[str, list[int]] = {}
    for index, tokens in enumerate(token_sets):
        for token in tokens:
            postings.setdefault(token, []).append(index)
    relevance = lambda_ * np.asarray(scores, dtype=np.float64)
    redundancy = np.zeros(count)
    taken = np.zeros(count, dtype=bool)
    selected: list[int] = []
    while len(selected) < min(k, count):
        # The same arithmetic as one candidate at a time, over every candidate at once (a top 100 from 200
        # candidates is 20,000 of them); argmax takes the earliest of equal values, as the seed's loop did.
        marginal = relevance - (1.0 - lambda_) * redundancy
        marginal[taken] = -np.inf
        chosen = int(np.argmax(marginal))
        selected.append(chosen)
        taken[chosen] = True
        if len(selected) == k or len(selected) == count:
            break
        intersections: dict[int, int] = {}
        for token in token_sets[chosen]:
            for other in postings[token]:
                if other != chosen:
                    intersections[other] = intersections.get(other, 0) + 1
        chosen_size = len(token_sets[chosen])
        for other, shared in intersections.items():
            similarity = shared / (len(token_sets[other]) + chosen_size - shared)
            if similarity > redundancy[other]:
                redundancy[other] = similarity
    return selected


@lru_cache(maxsize=4096)
def passage_tokens(passage: str) -> frozenset[str]:
    """A passage's token set, remembered.

    The same passages come back search after search, and tokenising 200 candidates took more of a knowledge search than
    ranking them.
    """
    return frozenset(tokenize_simple(passage))


def select_mmr(
    candidates: Sequence[SearchResult],
    k: int,
    lambda_: float = DEFAULT_MMR_LAMBDA,
    passage: Callable[[SearchResult], str] = enriched_passage,
) -> list[int]:
    """Up to ``k`` candidate indices in selection order.

    Candidates should be sorted by score (the composite, after any boost) so that ties go to the better
    ranked one. With ``k == 1`` only relevance counts, so no passage is cleaned or tokenised.
    """
    if k <= 0 or not candidates:
        return []
    scores = [c.score for c in candidates]
    if k == 1:
        # The first pick has no redundancy term.
        return [_argmax([lambda_ * s for s in scores], range(len(scores)))]
    token_sets = [passage_tokens(passage(c)) for c in candidates]
    return select_mmr_tokens(scores, token_sets, k, lambda_)
