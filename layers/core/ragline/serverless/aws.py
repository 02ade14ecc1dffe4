"""Wiring of the AWS runtime: DynamoDB stores and log, S3 for large states, Step Functions, OpenSearch, models.

Each Lambda function builds one :class:`AwsRuntime` per container (cold start) and reuses it, from its own
environment (``AwsSettings``: the names template.yaml gives it) and its own boto3 clients. Secrets (API keys
in SSM, the Neo4j password and the token-signing secret in Secrets Manager) are read once per container, by the
functions that use them; ``stream_reader`` builds a reader (``reader=True``): no model, no graph, no search engine
(it reads the token-signing secret alone, to verify a signed-in user's token).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypedDict
from urllib.parse import urlsplit

import boto3
import numpy as np
import numpy.typing as npt
from botocore.config import Config as BotoConfig

from ragline.config import AppConfig, Settings, load_config
from ragline.container import Container, build_graph, build_models
from ragline.memory.dynamodb import DynamoMemoryStore
from ragline.models.registry import ModelRegistry
from ragline.retrieval.base import RetrieveEngine, RetrieveParams
from ragline.serverless.answer_owner import AnswerOwnership
from ragline.serverless.indexing import LambdaIndexScheduler
from ragline.serverless.launcher import StepFunctionsLauncher
from ragline.serverless.settings import AwsSettings
from ragline.serverless.state_store import StateStore
from ragline.serverless.step import StepDeps
from ragline.serverless.uploads import LargeUploads, UploadStore
from ragline.serverless.watch import ExecutionLiveness, WatchedLog
from ragline.store.base import KnowledgeStore
from ragline.store.dynamodb import (
    DynamoCitationHistory,
    DynamoKnowledgeStore,
    DynamoSessionStore,
    DynamoTagStore,
    DynamoTenantStore,
)
from ragline.store.models import Chunk, Document
from ragline.store.originals import S3OriginalStore
from ragline.store.users import DynamoUserStore
from ragline.stream.dynamodb import DynamoDBStreamManager
from ragline.tables.s3 import S3TableStore
from ragline.types import SearchResult

if TYPE_CHECKING:
    from fastapi import FastAPI


@dataclass
class AwsRuntime:
    """The AWS runtime of one function: the container, the state store, the log, the launcher and the settings."""

    container: Container
    state: StateStore
    log: DynamoDBStreamManager
    launcher: StepFunctionsLauncher
    aws: AwsSettings
    # The function's own clients (built once per container).
    session: boto3.Session | None = None
    sfn: Any = None
    # Documents go to the indexing function (None: indexed before the reply).
    scheduler: LambdaIndexScheduler | None = None
    uploads: LargeUploads | None = None

    def step_deps(self) -> StepDeps:
        """What a workflow step needs: the container, the state store, the log and the answers' owners."""
        ownership = AnswerOwnership(self.state.table, self.aws.event_ttl_seconds, self.aws.answer_lease_s)
        return StepDeps(container=self.container, state=self.state, log=self.log, ownership=ownership)

    def app(self) -> FastAPI:
        """The HTTP API on this runtime (turns start Step Functions executions)."""
        from ragline.server.app import create_app

        return create_app(self.container, self.launcher, stream_base_url=self.aws.stream_base_url, uploads=self.uploads)

    def stream_app(self) -> FastAPI:
        """stream_reader's routes alone: follow, resume and stop an answer (and ``/healthz``)."""
        from ragline.server.app import create_stream_app

        return create_stream_app(self.container, self.launcher)


# ---------------------------------------------------------------------------------------------- secrets
def _secret(ssm: Any, parameter: str) -> str | None:
    """An API key from an SSM SecureString parameter (never from plain configuration)."""
    if not parameter:
        return None
    value = ssm.get_parameter(Name=parameter, WithDecryption=True)["Parameter"]["Value"]
    return str(value)


@lru_cache(maxsize=8)
def _secret_value(secret_arn: str, endpoint: str | None) -> str:
    """A Secrets Manager secret, read once per container (a warm invocation pays nothing)."""
    client = boto3.Session().client("secretsmanager", endpoint_url=endpoint)
    return str(client.get_secret_value(SecretId=secret_arn)["SecretString"])


def token_secret(session: boto3.Session, secret_arn: str, endpoint: str | None) -> Callable[[], str]:
    """The token-signing secret's reader, which asks Secrets Manager once per container.

    It asks at the first token signed or verified: a container that serves only API keys never does.
    """
    lock = threading.Lock()
    value: list[str] = []

    def read() -> str:
        with lock:
            if not value:
                client = session.client("secretsmanager", endpoint_url=endpoint)
                value.append(str(client.get_secret_value(SecretId=secret_arn)["SecretString"]))
            return value[0]

    return read


def neo4j_credentials(secret: str, default_user: str) -> tuple[str, str]:
    """``(user, password)`` from the secret: the password alone, or JSON ``{"username", "password"}``."""
    text = secret.strip()
    if text.startswith("{"):
        parsed = json.loads(text)
        return str(parsed.get("username") or default_user), str(parsed["password"])
    return default_user, text


# -------------------------------------------------------------------------------------------- OpenSearch
# OpenSearch Serverless vector collections refuse what the engine does: documents written with their own ids
# (AOSS assigns them), _delete_by_query (how a document's chunks are removed) and refresh requests.
AOSS_UNSUPPORTED = (
    "OpenSearch Serverless is not supported: its vector collections refuse the custom document ids and the "
    "_delete_by_query the engine uses; use an OpenSearch Service domain"
)


class UnsupportedSearchService(ValueError):
    """The configured OpenSearch endpoint is of a kind the engine cannot use (OpenSearch Serverless)."""


def signing_service(url: str) -> str:
    """``es``, the SigV4 service of OpenSearch Service domains; an OpenSearch Serverless endpoint is refused."""
    host = urlsplit(url).hostname or ""
    if host.endswith(".aoss.amazonaws.com"):
        raise UnsupportedSearchService(f"{AOSS_UNSUPPORTED} ({host})")
    return "es"


def opensearch_client(aws: AwsSettings, session: boto3.Session) -> Any:
    """An OpenSearch client for ``aws.opensearch_url``, every request signed with the function's role."""
    from opensearchpy import OpenSearch, Urllib3AWSV4SignerAuth

    url = aws.opensearch_url
    service = signing_service(url)
    if aws.opensearch_service not in ("", service):
        raise UnsupportedSearchService(f"{AOSS_UNSUPPORTED} (RAGLINE_OPENSEARCH_SERVICE={aws.opensearch_service})")
    credentials = session.get_credentials()
    if credentials is None:
        raise RuntimeError("no AWS credentials to sign OpenSearch requests with")
    auth = Urllib3AWSV4SignerAuth(credentials, session.region_name or "us-east-1", service)
    return OpenSearch(
        hosts=[url],
        http_auth=auth,
        use_ssl=url.startswith("https"),
        verify_certs=url.startswith("https"),
        timeout=aws.opensearch_timeout_s,
        max_retries=2,
        retry_on_timeout=True,
    )


class LazyEngine:
    """The search engine, built on first use: a function that never searches never imports the client."""

    # What it is once built (the AWS runtime builds OpenSearch), said without building it.
    engine_name = "opensearch"

    def __init__(self, factory: Callable[[], RetrieveEngine]) -> None:
        """An engine built by ``factory`` on first use."""
        self._factory = factory
        self._engine: RetrieveEngine | None = None
        self._lock = threading.Lock()

    @property
    def engine(self) -> RetrieveEngine:
        """The engine, built once (thread-safe)."""
        if self._engine is None:
            with self._lock:
                if self._engine is None:
                    self._engine = self._factory()
        return self._engine

    def vector_search(self, params: RetrieveParams, top_k: int) -> list[SearchResult]:
        """The engine's vector search."""
        return self.engine.vector_search(params, top_k)

    def keyword_search(self, params: RetrieveParams, top_k: int) -> list[SearchResult]:
        """The engine's keyword search."""
        return self.engine.keyword_search(params, top_k)

    def index_chunks(
        self,
        knowledge_base_id: str,
        embedding_model: str,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32],
        *,
        document: Document | None = None,
    ) -> None:
        """The engine's indexing."""
        self.engine.index_chunks(knowledge_base_id, embedding_model, chunks, vectors, document=document)

    def index_questions(
        self,
        knowledge_base_id: str,
        embedding_model: str,
        chunk: Chunk,
        vectors: npt.NDArray[np.float32],
        *,
        document: Document | None = None,
    ) -> None:
        """Question vectors of a chunk, written by the engine built on first use."""
        self.engine.index_questions(knowledge_base_id, embedding_model, chunk, vectors, document=document)

    def __getattr__(self, name: str) -> Any:
        """Anything else the engine offers (deleting a document, ensuring the index), from the built engine."""
        # Anything else the engine offers (deleting a document, ensuring the index).
        return getattr(self.engine, name)


def _opensearch_engine(aws: AwsSettings, session: boto3.Session) -> RetrieveEngine:
    if not aws.opensearch_url:
        raise RuntimeError(
            "RAGLINE_OPENSEARCH_URL is not set: the AWS runtime searches OpenSearch (template.yaml provisions a "
            "domain unless the OpenSearchEndpoint parameter names one)"
        )
    from ragline.retrieval.opensearch import KnnMethod, OpenSearchEngine

    method = KnnMethod(engine=aws.opensearch_knn_engine)
    return OpenSearchEngine(opensearch_client(aws, session), aws.opensearch_index, method=method)


# ---------------------------------------------------------------------------------------------- runtime
def _model_settings(aws: AwsSettings, ssm: Any, endpoint: str | None) -> Settings:
    values: dict[str, Any] = {
        "chat_provider": aws.chat_provider,
        "chat_region": aws.chat_region or None,
        "chat_base_url": aws.chat_base_url or None,
        "chat_model": aws.chat_model or None,
        "chat_vision": aws.chat_vision,
        "chat_api_key": _secret(ssm, aws.chat_api_key_parameter),
        "embedding_base_url": aws.embedding_base_url or None,
        "embedding_model": aws.embedding_model or None,
        "embedding_api_key": _secret(ssm, aws.embedding_api_key_parameter),
    }
    if aws.neo4j_uri:
        user, password = aws.neo4j_user, ""
        if aws.neo4j_password_secret_arn:
            user, password = neo4j_credentials(_secret_value(aws.neo4j_password_secret_arn, endpoint), aws.neo4j_user)
        values.update(graph_enabled=True, neo4j_uri=aws.neo4j_uri, neo4j_user=user, neo4j_password=password)
    return Settings(**values)


def build_aws_runtime(
    aws: AwsSettings | None = None,
    *,
    settings: Settings | None = None,
    session: boto3.Session | None = None,
    knowledge: KnowledgeStore | None = None,
    engine: RetrieveEngine | None = None,
    models: ModelRegistry | None = None,
    start_guard: Callable[[Callable[..., str]], Callable[..., str]] | None = None,
    reader: bool = False,
) -> AwsRuntime:
    """The runtime of one function. ``reader`` (stream_reader) needs no model, graph, API key or engine.

    Unit tests inject the knowledge store, the engine and the model registry.
    """
    aws = aws or AwsSettings()
    session = session or boto3.Session()
    clients = _Clients.of(aws, session)
    config, templates = load_config()
    config = config.model_copy(
        update={"stream": config.stream.model_copy(update={"max_stream_seconds": aws.stream_max_seconds})}
    )
    if settings is None:
        settings = (
            Settings()
            if reader or models is not None
            else _model_settings(aws, session.client("ssm", endpoint_url=clients.endpoint), clients.endpoint)
        )
    if models is None:
        models = ModelRegistry() if reader else build_models(settings, config)
    if engine is None:
        engine = LazyEngine(lambda: _opensearch_engine(aws, session))
    state = StateStore(clients.dynamodb.Table(aws.state_table), clients.s3, aws.state_bucket, aws.event_ttl_seconds)
    log = _event_log(aws, clients, state, reader)
    container = Container.assemble(
        settings,
        config,
        templates,
        stream=log,
        engine=engine,
        models=models,
        # Neo4j when RAGLINE_NEO4J_URI is set (the password from Secrets Manager); else no graph.
        graph=None if reader else build_graph(settings, None),
        **_stores(aws, clients, config, knowledge),
    )
    if isinstance(log, WatchedLog):
        log.on_interrupted = container.turns.finalize
    scheduler, uploads = (None, None) if reader or not aws.index_function else _index_apart(container, aws, clients)
    launcher = StepFunctionsLauncher(
        clients.sfn, aws.state_machine_arn, state, aws.workflow_type, start_guard=start_guard
    )
    return AwsRuntime(
        container=container,
        state=state,
        log=log,
        launcher=launcher,
        aws=aws,
        session=session,
        sfn=clients.sfn,
        scheduler=scheduler,
        uploads=uploads,
    )


@dataclass(frozen=True)
class _Clients:
    """The AWS clients one function's runtime is built from (LocalStack's or moto's when an endpoint is set)."""

    session: boto3.Session
    endpoint: str | None
    dynamodb: Any
    s3: Any
    sfn: Any
    # Presigns with SigV4 (S3 refuses SigV2 URLs in newer regions), Content-Length among the signed headers.
    presigner: Any

    @classmethod
    def of(cls, aws: AwsSettings, session: boto3.Session) -> _Clients:
        endpoint = aws.aws_endpoint_url or None
        return cls(
            session=session,
            endpoint=endpoint,
            dynamodb=session.resource("dynamodb", endpoint_url=endpoint),
            s3=session.client("s3", endpoint_url=endpoint),
            sfn=session.client("stepfunctions", endpoint_url=endpoint),
            presigner=session.client("s3", endpoint_url=endpoint, config=BotoConfig(signature_version="s3v4")),
        )


def _event_log(aws: AwsSettings, clients: _Clients, state: StateStore, reader: bool) -> DynamoDBStreamManager:
    """The turns' event log; a reader's notices a turn whose workflow ended without a terminal event, and ends it."""
    table = clients.dynamodb.Table(aws.events_table)
    if not reader:
        return DynamoDBStreamManager(table, aws.event_ttl_seconds)
    liveness = ExecutionLiveness(clients.sfn, state, aws.workflow_type)
    return WatchedLog(table, aws.event_ttl_seconds, liveness, check_after_s=aws.execution_check_s)


class _Stores(TypedDict):
    """The stores ``Container.assemble`` takes, by its parameter names (so mypy checks the call)."""

    tenants: DynamoTenantStore
    users: DynamoUserStore | None
    knowledge: KnowledgeStore
    tags: DynamoTagStore
    sessions: DynamoSessionStore
    citations: DynamoCitationHistory
    memories: DynamoMemoryStore
    tables: S3TableStore
    originals: S3OriginalStore


def _stores(aws: AwsSettings, clients: _Clients, config: AppConfig, knowledge: KnowledgeStore | None) -> _Stores:
    """The container's stores on DynamoDB and S3 (``knowledge``: a test's, else the knowledge table's)."""
    table = clients.dynamodb.Table
    sessions = DynamoSessionStore(
        table(aws.sessions_table), table(aws.messages_table), open_index=aws.messages_open_index
    )
    secret = token_secret(clients.session, aws.token_secret_arn, clients.endpoint) if aws.token_secret_arn else None
    return {
        "tenants": DynamoTenantStore(table(aws.tenants_table)),
        "users": DynamoUserStore(table(aws.tenants_table), secret) if secret is not None else None,
        "knowledge": knowledge or DynamoKnowledgeStore(table(aws.knowledge_table)),
        "tags": DynamoTagStore(table(aws.knowledge_table)),
        "sessions": sessions,
        "citations": DynamoCitationHistory(sessions, max_sessions=config.rerank.memory_affinity.max_sessions),
        "memories": DynamoMemoryStore(table(aws.knowledge_table)),
        # Tables for data analysis and the documents' originals live in the state bucket (kept: its expiry rules
        # name the prefixes of what is temporary).
        "tables": S3TableStore(clients.s3, aws.state_bucket, "tables/"),
        "originals": S3OriginalStore(clients.s3, aws.state_bucket, "originals/", presigner=clients.presigner),
    }


def _index_apart(
    container: Container, aws: AwsSettings, clients: _Clients
) -> tuple[LambdaIndexScheduler, LargeUploads]:
    """Uploads answer 202: their vectors (and graph) are computed by an asynchronous invocation of the indexer."""
    scheduler = LambdaIndexScheduler(
        clients.session.client("lambda", endpoint_url=clients.endpoint), aws.index_function
    )
    container.ingest.set_scheduler(scheduler)
    # API Gateway answers 503 after 30 s, and a large PDF takes longer to read: an uploaded file is kept in S3
    # and read by the indexing function (the upload answers 202 once the original is stored).
    container.ingest.extract_when_indexing()
    container.graph_after_indexing = True
    uploads = LargeUploads(
        UploadStore(clients.dynamodb.Table(aws.state_table), aws.event_ttl_seconds),
        clients.presigner,
        aws.state_bucket,
        scheduler,
        max_bytes=aws.large_upload_max_bytes,
        url_ttl_s=aws.upload_url_ttl_s,
    )
    return scheduler, uploads


def idempotent_start(
    aws: AwsSettings, session: boto3.Session | None = None
) -> Callable[[Callable[..., str]], Callable[..., str]]:
    """Powertools idempotency on DynamoDB, keyed on the turn's request id, around StartExecution."""
    from aws_lambda_powertools.utilities.idempotency import (
        DynamoDBPersistenceLayer,
        IdempotencyConfig,
        idempotent_function,
    )

    session = session or boto3.Session()
    persistence = DynamoDBPersistenceLayer(
        table_name=aws.idempotency_table,
        boto3_client=session.client("dynamodb", endpoint_url=aws.aws_endpoint_url or None),
    )
    config = IdempotencyConfig(event_key_jmespath="turn.[session_id, request_id]", expires_after_seconds=3600)

    def guard(start: Callable[..., str]) -> Callable[..., str]:
        wrapped: Callable[..., str] = idempotent_function(
            data_keyword_argument="execution_input", config=config, persistence_store=persistence
        )(start)
        return wrapped

    # The handler registers each invocation's context, so idempotency records expire with the invocation.
    guard.config = config  # type: ignore[attr-defined]
    return guard
