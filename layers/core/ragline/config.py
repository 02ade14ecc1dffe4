"""Settings from the environment and configuration from ``config/`` (config.yaml + prompt templates).

Every tunable has the reference design's default here or in config.yaml; function bodies use names,
never literals.
"""

from __future__ import annotations

import os
import re
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from ragline.merge.config import MergeConfig
from ragline.reranking.config import RerankConfig
from ragline.retrieval.config import RetrievalConfig
from ragline.stream.config import StreamConfig
from ragline.types.chat_manage import PipelineRequest, SummaryConfig
from ragline.web.fetch import WebFetchConfig
from ragline.web.search import WebSearchConfig


class Settings(BaseSettings):
    """Process settings, read from ``RAGLINE_*`` environment variables."""

    model_config = SettingsConfigDict(env_prefix="RAGLINE_", extra="ignore")

    data_dir: Path = Path(".ragline")
    # A built WeKnora web app (its dist/ directory) served at / instead of ragline's own page (``--web-app``).
    web_app_dir: Path | None = None
    # Libraries the page uses, installed from npm by `make web-vendor` (highlight.js); default: the checkout's
    # build/web-vendor when it exists. Without them the page works, code unhighlighted.
    web_vendor_dir: Path | None = None
    config_dir: Path | None = None
    api_key: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    log_level: str = "INFO"
    # Overrides config.yaml's recovery.shutdown_grace_s (``RAGLINE_SHUTDOWN_GRACE_S``).
    shutdown_grace_s: float | None = Field(default=None, ge=0)

    chat_base_url: str | None = None
    chat_api_key: str | None = None
    chat_model: str | None = None
    # "bedrock": chat_model is a Bedrock model id, called through Converse with the process's AWS credentials.
    chat_provider: Literal["openai", "bedrock"] = "openai"
    chat_region: str | None = None
    chat_thinking_budget_tokens: int = 1024
    # The chat model reads images (a vision model): questions' images are sent to it.
    chat_vision: bool = False
    # "smollm2" for the packaged SmolLM2 GGUF, or a path to any GGUF file.
    llm: str | None = None
    # The local model's context window: the prompt is fitted to it, the lowest-ranked excerpts dropped first.
    llm_context_tokens: int = Field(default=2048, ge=512)

    embedding_base_url: str | None = None
    embedding_api_key: str | None = None
    embedding_model: str | None = None

    # Web search: one provider from the environment (more in config.yaml: web_search.providers).
    web_search_provider: Literal["searxng", "tavily", "brave"] | None = None
    web_search_base_url: str | None = None
    web_search_api_key: str | None = None

    # The knowledge graph: off by default; Neo4j when NEO4J_URI/USER/PASSWORD are set, else SQLite.
    graph_enabled: bool = False
    neo4j_uri: str | None = Field(default=None, validation_alias="NEO4J_URI")
    neo4j_user: str | None = Field(default=None, validation_alias="NEO4J_USER")
    neo4j_password: str | None = Field(default=None, validation_alias="NEO4J_PASSWORD")

    # A rerank model: a Jina/Cohere-style /rerank endpoint, or a local ONNX cross-encoder directory.
    rerank_base_url: str | None = None
    rerank_model: str | None = None
    rerank_api_key: str | None = None
    rerank_model_dir: str | None = None

    @property
    def db_path(self) -> Path:
        """The embedded SQLite database's path, in ``data_dir``."""
        return self.data_dir / "ragline.db"

    @property
    def events_db_path(self) -> Path:
        """The turns' event logs' SQLite database, in ``data_dir`` beside the other (see ``store.db``)."""
        return self.data_dir / "events.db"


def _request_default(model: type[BaseModel], name: str) -> Any:
    """A request field's default: the one source of the chat defaults config.yaml may change."""
    return model.model_fields[name].default


class SummarySettings(BaseModel):
    """How generation answers: its prompt, context template and model options."""

    prompt_id: str = "default_kb"
    context_template_id: str = "default"
    temperature: float = _request_default(SummaryConfig, "temperature")
    max_completion_tokens: int = _request_default(SummaryConfig, "max_completion_tokens")


class ConversationConfig(BaseModel):
    """The chat defaults of config.yaml's ``conversation``; unset, they are :class:`PipelineRequest`'s."""

    max_rounds: int = _request_default(PipelineRequest, "max_rounds")
    embedding_top_k: int = _request_default(PipelineRequest, "embedding_top_k")
    vector_threshold: float = _request_default(PipelineRequest, "vector_threshold")
    keyword_threshold: float = _request_default(PipelineRequest, "keyword_threshold")
    rerank_threshold: float = _request_default(PipelineRequest, "rerank_threshold")
    rerank_top_k: int = _request_default(PipelineRequest, "rerank_top_k")
    fallback_strategy: str = _request_default(PipelineRequest, "fallback_strategy").value
    fallback_response: str = _request_default(PipelineRequest, "fallback_response")
    fallback_prompt_id: str = "default"
    # The answering model sees images (RAGLINE_CHAT_VISION=true sets it): a question's images go to it, with
    # query understanding's prompt; else, without a vision model (vlm_model_id), their OCR text is used.
    chat_model_supports_vision: bool = _request_default(PipelineRequest, "chat_model_supports_vision")
    vlm_model_id: str = _request_default(PipelineRequest, "vlm_model_id")
    enable_rewrite: bool = _request_default(PipelineRequest, "enable_rewrite")
    enable_query_expansion: bool = _request_default(PipelineRequest, "enable_query_expansion")
    # Query understanding's own chat model ("" = the answering model), rewrite template id and per-intent
    # system prompts; a question may set each of them too.
    understand_model_id: str = _request_default(PipelineRequest, "understand_model_id")
    rewrite_template_id: str = "default"
    intent_prompts: dict[str, str] = Field(default_factory=dict)
    faq_priority_enabled: bool = _request_default(PipelineRequest, "faq_priority_enabled")
    faq_direct_answer_threshold: float = _request_default(PipelineRequest, "faq_direct_answer_threshold")
    faq_score_boost: float = _request_default(PipelineRequest, "faq_score_boost")
    memory_enabled: bool = _request_default(PipelineRequest, "memory_enabled")
    language: str = _request_default(PipelineRequest, "language")
    summary: SummarySettings = Field(default_factory=SummarySettings)


class EnrichmentConfig(BaseModel):
    """What a generative chat model adds to a document after it is stored.

    The reference's question, summary and knowledge-base description templates. Off without such a model:
    nothing is asked of the extractive answerer.
    """

    enabled: bool = True
    # Questions asked per searchable chunk (the reference's default is 3); each is embedded as an extra
    # vector of its chunk and read by rerank's enriched passage. 0 generates none.
    questions_per_chunk: int = Field(default=3, ge=0, le=10)
    # A document with more searchable chunks gets questions for its first ones only: one model call per
    # chunk, and a 30,000-chunk upload should not become 30,000 calls.
    max_question_chunks: int = Field(default=500, ge=0)
    # Model calls that run side by side for one document.
    concurrency: int = Field(default=4, ge=1, le=32)
    # Documents enriched side by side (the embedded runtime's enrichment worker): the others wait their turn.
    documents_at_once: int = Field(default=1, ge=1, le=16)
    # A summary of the document (from its first characters) becomes its description when it has none.
    summary: bool = True
    summary_input_chars: int = Field(default=6000, ge=200)
    # The knowledge base's description is written from its documents' titles and summaries while it has none
    # of its own.
    knowledge_base_description: bool = True


class IngestionConfig(BaseModel):
    """How documents are cut into chunks and embedded."""

    chunk_size: int = 800
    chunk_min_size: int = 80
    parent_chunk_size: int = 4000
    # Texts per model call (sorted by length, padded to the longest of the call).
    embed_batch_size: int = 8
    # Chunks embedded between two progress reports (and cancellation checks) of the indexing work. Each window
    # ends with one model worker waiting for the other's last batch: in paired runs of the documents API, 512
    # indexed 8-13% faster than 128 (bench/ingestion.py); 256 keeps progress reports a few seconds apart.
    embed_window: int = 256
    # Chunks the embedded runtime's indexing thread embeds for one set of documents before the queue's others get
    # their turn: a document with more goes back to the end of the queue, so a small upload waits behind one slice
    # of a large one, not all of it.
    index_slice_chunks: int = Field(default=512, ge=1)
    # A document of more chunks is stored in parts of this many, one transaction each (the embedded runtime's
    # SQLite store): one transaction for a 20 MB upload's ~28,000 held the writer's lock 7 s under load, and
    # every chat turn's writes waited behind it. A document of at most this many is stored whole or not at all.
    store_part_chunks: int = Field(default=2000, ge=1)
    # A document cut into more chunks is refused (a 20 MB text at 800 characters is ~26,000).
    max_chunks_per_document: int = 30_000
    # Model calls of the local embedding models that run side by side, one thread each (0: one per core, at
    # most 4).
    embed_threads: int = 0
    # Word pieces MiniLM reads of a passage (its limit is 256; fewer is faster, see bench/ingestion.py).
    passage_max_tokens: int = 256
    # Full garbage collections wait while documents are accepted or indexed (ragline/ingest/collector.py):
    # each one stalls the API for 100-275 ms when a large document's chunks are alive.
    defer_full_gc: bool = True
    # Added to the nice value of the threads that accept, index and enrich documents, and of those they start
    # (Linux; ragline/ingest/priority.py): the streams' event loop and the threads answering searches and turns
    # come first when the cores are busy. 0: the same priority as the rest.
    background_nice: int = Field(default=10, ge=0, le=19)
    # Images are read where OCR is installed (ragline/ingest/images.py): image uploads and the pictures in PDF,
    # Word and PowerPoint files become searchable image chunks. Off: image uploads are refused (415) and
    # documents keep their text only. The AWS Lambda layer leaves the OCR library out (too large), so it is off
    # there whatever this says.
    ocr: bool = True
    enrichment: EnrichmentConfig = Field(default_factory=EnrichmentConfig)


class RecoveryConfig(BaseModel):
    """Turns end whatever happens to the process running them (see ``ragline.runtime.recovery``)."""

    # SIGTERM/SIGINT: running turns may finish for this long; the rest end with error "interrupted".
    shutdown_grace_s: float = 10.0
    # The embedded runner's heartbeat, and how old one may be before a runner on another host counts as gone
    # (on this host a runner's process is checked directly).
    heartbeat_interval_s: float = 5.0
    runner_ttl_s: float = 30.0
    # How often the embedded server looks for turns whose runner is gone (also once at start).
    sweep_interval_s: float = 30.0
    # A turn whose runner is not recorded yet is being accepted: left alone for this long.
    unclaimed_grace_s: float = 60.0
    # A kept original without a document that is older than this was left by an upload whose process died
    # between keeping the file and storing the document (the embedded server removes it at start and every
    # ten minutes); younger ones may belong to an upload still being stored by another process.
    orphaned_original_age_s: float = 600.0


class LimitsConfig(BaseModel):
    """Size limits of requests: the query, an upload, an original returned inline."""

    max_query_chars: int = 8000
    # A route taking a file, a document's text, FAQ entries or a question with its images.
    max_upload_bytes: int = 20 * 1024 * 1024
    # Any other request body (a few JSON fields), chunked or not.
    max_body_bytes: int = 2 * 1024 * 1024
    # An original larger than this is handed over by a link to the object store where there is one (a
    # presigned S3 URL: a Lambda reply carries at most 6 MB), else served by the API.
    original_inline_max_bytes: int = 5 * 1024 * 1024


class AppConfig(BaseModel):
    """config.yaml: every section of the deployment's configuration, with the seed's defaults."""

    conversation: ConversationConfig = Field(default_factory=ConversationConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    rerank: RerankConfig = Field(default_factory=RerankConfig)
    merge: MergeConfig = Field(default_factory=MergeConfig)
    web_search: WebSearchConfig = Field(default_factory=WebSearchConfig)
    web_fetch: WebFetchConfig = Field(default_factory=WebFetchConfig)
    ingestion: IngestionConfig = Field(default_factory=IngestionConfig)
    stream: StreamConfig = Field(default_factory=StreamConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    recovery: RecoveryConfig = Field(default_factory=RecoveryConfig)


def find_config_dir(explicit: Path | None = None) -> Path:
    """``RAGLINE_CONFIG_DIR``, else ``config/`` next to the package (Lambda layer), else the repository's."""
    if explicit is not None:
        return explicit
    env = os.environ.get("RAGLINE_CONFIG_DIR")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    for candidate in (here / "config", *(parent / "config" for parent in here.parents)):
        if (candidate / "config.yaml").is_file():
            return candidate
    raise FileNotFoundError("config/config.yaml not found; set RAGLINE_CONFIG_DIR")


class PromptTemplates:
    """Templates by file and id: ``templates.get("system_prompt", "default_kb")``."""

    def __init__(self, directory: Path) -> None:
        """Every ``*.yaml`` file of ``directory``, its templates by id."""
        self._files: dict[str, dict[str, dict[str, Any]]] = {}
        for path in sorted(directory.glob("*.yaml")):
            loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            self._files[path.stem] = {entry["id"]: entry for entry in loaded.get("templates", [])}

    def files(self) -> list[str]:
        """The template files loaded, by name (without ``.yaml``)."""
        return sorted(self._files)

    def ids(self, file: str) -> list[str]:
        """The template ids of ``file``."""
        return sorted(self._files.get(file, {}))

    def entry(self, file: str, template_id: str) -> dict[str, Any]:
        """The template ``template_id`` of ``file`` as written; :class:`KeyError` naming both when it is missing."""
        try:
            return self._files[file][template_id]
        except KeyError:
            raise KeyError(f"prompt template {file}.yaml#{template_id} not found") from None

    def get(self, file: str, template_id: str, field: str = "content") -> str:
        """One ``field`` of a template (its ``content`` by default), as text."""
        return str(self.entry(file, template_id)[field])


@lru_cache(maxsize=8)
def load_config(config_dir: Path | None = None) -> tuple[AppConfig, PromptTemplates]:
    """config.yaml and the prompt templates of the configuration directory."""
    directory = find_config_dir(config_dir)
    raw = yaml.safe_load((directory / "config.yaml").read_text(encoding="utf-8")) or {}
    return AppConfig.model_validate(raw), PromptTemplates(directory / "prompt_templates")


_PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}|\{([a-z_]+)\}")


def render_placeholders(template: str, values: dict[str, str], now: datetime | None = None) -> str:
    """Fill ``{{name}}`` and ``{name}`` for known names; unknown placeholders are left as written.

    ``current_time`` and ``current_week`` are always available.
    """
    moment = now or datetime.now().astimezone()
    known = {
        "current_time": moment.strftime("%Y-%m-%d %H:%M:%S %Z").strip(),
        "current_week": moment.strftime("%A"),
        **values,
    }

    def replace(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return known[name] if name in known else match.group(0)

    return _PLACEHOLDER.sub(replace, template)
