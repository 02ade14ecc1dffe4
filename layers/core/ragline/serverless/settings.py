"""Configuration of the AWS runtime, from the functions' environment (set by template.yaml)."""

from __future__ import annotations

from typing import Literal

from pydantic_settings import BaseSettings, SettingsConfigDict


class AwsSettings(BaseSettings):
    """Every resource name a function needs; ``template.yaml`` sets them from its resources."""

    model_config = SettingsConfigDict(env_prefix="RAGLINE_", extra="ignore")

    events_table: str = "ragline-events"
    sessions_table: str = "ragline-sessions"
    messages_table: str = "ragline-messages"
    state_table: str = "ragline-state"
    knowledge_table: str = "ragline-knowledge"
    tenants_table: str = "ragline-tenants"
    idempotency_table: str = "ragline-idempotency"
    # The messages table's sparse index of open turns (template.yaml), which the scheduled sweep queries.
    messages_open_index: str = "OpenTurns"
    state_bucket: str = "ragline-state"
    state_machine_arn: str = ""
    # STANDARD or EXPRESS: stop also calls StopExecution on STANDARD (EXPRESS has no StopExecution).
    workflow_type: str = "STANDARD"

    # Seconds an event log (and a turn's saved state) is kept; DynamoDB TTL removes it afterwards.
    event_ttl_seconds: int = 7 * 24 * 3600
    # stream_reader ends a response before the function timeout; the client resumes with Last-Event-ID.
    stream_max_seconds: float = 840.0
    # stream_reader asks the workflow whether a turn whose log has been idle this long still runs (and ends
    # it with an error when its execution ended without a terminal event).
    execution_check_s: float = 10.0
    # How long the attempt streaming an answer holds it without renewing (serverless/answer_owner.py): a
    # retry that finds the owner dead waits this long at most before taking the answer over.
    answer_lease_s: float = 10.0

    # The OpenSearch Service domain's endpoint; requests are SigV4-signed for "es" (``opensearch_service``, empty
    # or "es": OpenSearch Serverless is refused, see serverless/aws.py).
    opensearch_url: str = ""
    opensearch_index: str = "ragline-chunks"
    opensearch_service: str = ""
    # The k-NN engine of the index's vector field (OpenSearch Service: faiss; a node without the k-NN
    # plugin's native libraries: lucene).
    opensearch_knn_engine: str = "faiss"
    opensearch_timeout_s: float = 10.0
    # Neo4j for the knowledge graph (empty: no graph); the password is read from Secrets Manager (the secret
    # holds the password, or JSON {"username", "password"}).
    neo4j_uri: str = ""
    neo4j_user: str = "neo4j"
    neo4j_password_secret_arn: str = ""

    chat_provider: Literal["openai", "bedrock"] = "openai"
    chat_region: str = ""
    chat_base_url: str = ""
    chat_model: str = ""
    # The chat model reads images: a question's images are sent to it (template parameter ChatVision).
    chat_vision: bool = False
    # Name of an SSM SecureString parameter holding the chat API key; never the key itself.
    chat_api_key_parameter: str = ""
    embedding_base_url: str = ""
    embedding_model: str = ""
    embedding_api_key_parameter: str = ""
    # The Secrets Manager secret the web app's sign-in tokens are signed with (template.yaml's TokenSigningSecret),
    # given to the functions that verify tokens; empty: no accounts on this function (API keys only).
    token_secret_arn: str = ""

    # The indexing function (template.yaml's IndexDocumentFunction): uploads are indexed by an asynchronous
    # invocation of it. Empty: indexed before the reply (the 30-second limit of the HTTP API then applies).
    index_function: str = ""
    # Files sent through a presigned upload URL to the state bucket: at most this many bytes each.
    large_upload_max_bytes: int = 100 * 1024 * 1024
    upload_url_ttl_s: int = 3600

    # stream_reader's function URL: the stream_url ingest_turn returns points there.
    stream_base_url: str = ""

    # Set by tests and LocalStack users: one endpoint for every AWS client.
    aws_endpoint_url: str = ""
