"""Every tunable of hybrid search (the seed's HybridSearch constants), with the reference design's defaults.

``ragline.config.AppConfig`` hooks :class:`RetrievalConfig` in as config.yaml's ``retrieval`` section.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class RetrievalConfig(BaseModel):
    """The seed's HybridSearch constants."""

    default_match_count: int = 50
    pool_multiplier: int = 5
    min_pool_size: int = 50
    max_pool_size: int = 500
    # "score": weighted sum of max-normalised scores (measured better on SciFact); "rrf": the seed's fusion.
    fusion: Literal["score", "rrf"] = "score"
    score_vector_weight: float = 0.5
    score_keyword_weight: float = 0.5
    # score fusion: cosines measured from the query's mean cosine with the knowledge base to the list's best,
    # keyword scores divided by their best ("background", see retrieval.hybrid.fuse_scores); both lists divided
    # by their best ("max", step 9's first pass); or spread from their worst to their best ("minmax").
    score_normalization: Literal["background", "max", "minmax"] = "background"
    rrf_k: int = 60
    vector_weight: float = 0.7
    keyword_weight: float = 0.3
    # Adaptive weights: a vector list from a model that does not read the query's language counts
    # unread_language_vector_weight against the keyword list's 1 (see retrieval.hybrid.list_weights).
    adaptive: bool = True
    # Embedding model → the query languages ("en", "zh") it reads; models not listed read every language.
    model_languages: dict[str, list[str]] = Field(
        default_factory=lambda: {
            "local:all-MiniLM-L6-v2-int8": ["en"],
            "local:bge-small-en-v1.5-q": ["en"],
            "local:e5-small-v2-q": ["en"],
            "local:minilm+bge-small-en": ["en"],
        }
    )
    # Embedding model → how many lists its vector list counts as against the keyword list (unlisted: 1). An
    # ensemble's vector list holds one vote per model it reads with (see retrieval.hybrid.list_weights).
    model_votes: dict[str, float] = Field(default_factory=lambda: {"local:minilm+bge-small-en": 2.0})
    unread_language_vector_weight: float = 0.0
    # A knowledge-base group that fails to answer within this time fails the search (all-or-nothing).
    group_timeout_s: float = 30.0
    group_concurrency: int = 4
