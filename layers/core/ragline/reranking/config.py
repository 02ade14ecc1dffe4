"""Every tunable of CHUNK_RERANK with the reference design's default.

The lead hooks :class:`RerankConfig` into ``AppConfig``; nothing in this package reads a literal threshold,
weight or limit from a function body.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field


class CompositeWeights(BaseModel):
    """Weights of the composite score; they sum to 1 so the composite stays on the model's [0, 1] scale."""

    model: float = 0.6
    retrieval: float = 0.3
    source: float = 0.1


class MemoryAffinityConfig(BaseModel):
    """The per-caller document boost: a nudge between close candidates, never a reason to rank first."""

    # One citation is noise, two is a pattern.
    min_hits: int = 2
    # The boost tops out at ×(1 + max_boost).
    max_boost: float = 0.15
    # ln(1 + hits) / ln(log_base): the boost saturates at hits = log_base - 1 = 8.
    log_base: float = 9.0
    # At most this many documents come back from the citation history.
    max_doc_ids: int = 200
    # The SQLite history reads this many recent answers at most, so a long-lived tenant costs a bounded scan.
    max_messages: int = 1000
    # The DynamoDB history reads the messages of the tenant's newest sessions, at most this many sessions.
    max_sessions: int = 20


class RerankProvider(StrEnum):
    """Which adapter serves a configured rerank model."""

    REMOTE = "remote"
    BEDROCK = "bedrock"
    LOCAL = "local"


class RerankModelSpec(BaseModel):
    """One rerank model the registry can build; only the fields of its provider matter."""

    id: str
    provider: RerankProvider
    # remote: Jina/Cohere-style ``POST {base_url}/rerank`` (also llama.cpp server and vLLM).
    base_url: str = ""
    model: str = ""
    api_key: str | None = None
    # bedrock: a reranking model ARN (amazon.rerank-v1:0, cohere.rerank-v3-5:0) and its region.
    model_arn: str = ""
    region_name: str | None = None
    # local: a directory holding an ONNX cross-encoder and its tokenizer.json, provided by the user.
    model_dir: str = ""
    # Passages longer than this are cut from the end before scoring; 0 means the adapter's own limit.
    max_passage_chars: int = 0


class RerankConfig(BaseModel):
    """The seed's CHUNK_RERANK constants."""

    # Nothing passed the threshold: the best candidate is still kept when it scores at least this.
    fallback_min_score: float = 0.15
    # A threshold above the floor that rejects everything is retried once at max(t × factor, floor).
    threshold_floor: float = 0.3
    degrade_factor: float = 0.7
    # Candidates sent to the model: the best max(max_candidates, rerank_top_k) by retrieval score.
    max_candidates: int = 200
    # A model call that takes longer fails the call, and the stage keeps the retrieval results.
    timeout_s: float = 60.0
    composite: CompositeWeights = Field(default_factory=CompositeWeights)
    # Web snippets are weaker evidence than the user's own documents.
    web_source_weight: float = 0.95
    default_source_weight: float = 1.0
    mmr_lambda: float = 0.7
    # Wiki pages are pre-synthesised by an LLM and preferred over raw chunks of the same knowledge base.
    wiki_boost: float = 1.3
    memory_affinity: MemoryAffinityConfig = Field(default_factory=MemoryAffinityConfig)
    # With no rerank model the retrieval scores still go through MMR, so the context is not five copies of
    # one paragraph (the embedded default ships no cross-encoder).
    diversify_without_model: bool = True
    # Rerank models the registry can build, and the one used when a request names none ("" = first listed).
    models: list[RerankModelSpec] = Field(default_factory=list)
    default_model_id: str = ""
