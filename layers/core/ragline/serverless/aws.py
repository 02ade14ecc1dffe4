"""Wiring of the AWS runtime: DynamoDB stores and log, S3 for large states, Step Functions, models.

Each Lambda function builds one :class:`AwsRuntime` per container (cold start) and reuses it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import boto3
from fastapi import FastAPI

from ragline.config import Settings, load_config
from ragline.container import Container, build_graph, build_models
from ragline.memory.dynamodb import DynamoMemoryStore
from ragline.models.registry import ModelRegistry
from ragline.retrieval.base import RetrieveEngine
from ragline.server.app import create_app
from ragline.serverless.launcher import StepFunctionsLauncher
from ragline.serverless.settings import AwsSettings
from ragline.serverless.state_store import StateStore
from ragline.serverless.step import StepDeps
from ragline.store.base import KnowledgeStore
from ragline.store.dynamodb import DynamoCitationHistory, DynamoKnowledgeStore, DynamoSessionStore, DynamoTenantStore
from ragline.stream.dynamodb import DynamoDBStreamManager
from ragline.tables.s3 import S3TableStore


@dataclass
class AwsRuntime:
    container: Container
    state: StateStore
    log: DynamoDBStreamManager
    launcher: StepFunctionsLauncher
    aws: AwsSettings

    def step_deps(self) -> StepDeps:
        return StepDeps(container=self.container, state=self.state, log=self.log)

    def app(self) -> FastAPI:
        return create_app(self.container, self.launcher, stream_base_url=self.aws.stream_base_url)


def _secret(ssm: Any, parameter: str) -> str | None:
    """An API key from an SSM SecureString parameter (never from plain configuration)."""
    if not parameter:
        return None
    value = ssm.get_parameter(Name=parameter, WithDecryption=True)["Parameter"]["Value"]
    return str(value)


def _opensearch_engine(aws: AwsSettings, session: boto3.Session) -> RetrieveEngine:
    from opensearchpy import OpenSearch, Urllib3AWSV4SignerAuth

    from ragline.retrieval.opensearch import OpenSearchEngine

    credentials = session.get_credentials()
    auth = Urllib3AWSV4SignerAuth(credentials, session.region_name or "us-east-1", "es")
    client = OpenSearch(hosts=[aws.opensearch_url], http_auth=auth, use_ssl=aws.opensearch_url.startswith("https"))
    return OpenSearchEngine(client, aws.opensearch_index)


def build_aws_runtime(
    aws: AwsSettings | None = None,
    *,
    settings: Settings | None = None,
    session: boto3.Session | None = None,
    knowledge: KnowledgeStore | None = None,
    engine: RetrieveEngine | None = None,
    models: ModelRegistry | None = None,
    start_guard: Callable[[Callable[..., str]], Callable[..., str]] | None = None,
) -> AwsRuntime:
    """Tests inject the knowledge store and engine (no OpenSearch here) and the model registry."""
    aws = aws or AwsSettings()
    session = session or boto3.Session()
    endpoint = aws.aws_endpoint_url or None
    dynamodb = session.resource("dynamodb", endpoint_url=endpoint)
    s3 = session.client("s3", endpoint_url=endpoint)
    sfn = session.client("stepfunctions", endpoint_url=endpoint)
    config, templates = load_config()
    config = config.model_copy(
        update={"stream": config.stream.model_copy(update={"max_stream_seconds": aws.stream_max_seconds})}
    )
    if models is None:
        ssm = session.client("ssm", endpoint_url=endpoint)
        settings = settings or Settings(
            chat_provider=aws.chat_provider,
            chat_region=aws.chat_region or None,
            chat_base_url=aws.chat_base_url or None,
            chat_model=aws.chat_model or None,
            chat_api_key=_secret(ssm, aws.chat_api_key_parameter),
            embedding_base_url=aws.embedding_base_url or None,
            embedding_model=aws.embedding_model or None,
            embedding_api_key=_secret(ssm, aws.embedding_api_key_parameter),
        )
        models = build_models(settings, config)
    settings = settings or Settings()
    if engine is None:
        if not aws.opensearch_url:
            raise RuntimeError("RAGLINE_OPENSEARCH_URL is not set: the AWS runtime searches OpenSearch")
        engine = _opensearch_engine(aws, session)
    log = DynamoDBStreamManager(dynamodb.Table(aws.events_table), aws.event_ttl_seconds)
    sessions = DynamoSessionStore(dynamodb.Table(aws.sessions_table), dynamodb.Table(aws.messages_table))
    container = Container.assemble(
        settings,
        config,
        templates,
        tenants=DynamoTenantStore(dynamodb.Table(aws.tenants_table)),
        knowledge=knowledge or DynamoKnowledgeStore(dynamodb.Table(aws.knowledge_table)),
        sessions=sessions,
        stream=log,
        engine=engine,
        models=models,
        citations=DynamoCitationHistory(sessions),
        memories=DynamoMemoryStore(dynamodb.Table(aws.knowledge_table)),
        # The graph in AWS is Neo4j (NEO4J_URI / NEO4J_USER / NEO4J_PASSWORD); without it, off.
        graph=build_graph(settings, None),
        # Tables for data analysis live in the state bucket; the analysis itself needs DuckDB, which the
        # Lambda layer leaves out (size): without it the stage is not registered.
        tables=S3TableStore(s3, aws.state_bucket, "tables/"),
    )
    state = StateStore(dynamodb.Table(aws.state_table), s3, aws.state_bucket, aws.event_ttl_seconds)
    launcher = StepFunctionsLauncher(sfn, aws.state_machine_arn, state, aws.workflow_type, start_guard=start_guard)
    return AwsRuntime(container=container, state=state, log=log, launcher=launcher, aws=aws)


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
