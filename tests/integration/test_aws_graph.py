"""Neo4j on AWS: the deployed stack's functions connect to make test's live Neo4j with the URI and user the
template gives them and the password they read from Secrets Manager (once per container), under their roles."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.support.polling import CLIENT_TIMEOUT, wait_until
from tests.support.scripted_model import Script
from tests.support.serverless import CHAT_KEY_PARAMETER, StackClient, deployed_stack, opensearch_target

SECRET = "ragtest/neo4j"


@pytest.fixture(scope="module")
def graph_stack(request, tmp_path_factory, scripted, neo4j_server):
    parameters = {
        "ChatBaseUrl": f"{scripted.url}/v1",
        "ChatModel": "scripted",
        "ChatApiKeyParameter": CHAT_KEY_PARAMETER,
        "Neo4jUri": neo4j_server.uri,
        "Neo4jUser": "not-the-user",  # the secret's JSON names the user
        "Neo4jPasswordSecretArn": f"secret:{SECRET}",
    }
    with deployed_stack(
        tmp_path_factory.mktemp("aws-graph"),
        parameters,
        opensearch=opensearch_target(request),
        ssm_parameters={CHAT_KEY_PARAMETER: "scripted-key"},
        secrets_values={SECRET: json.dumps({"username": neo4j_server.user, "password": neo4j_server.password})},
    ) as stack:
        stack.warm()
        yield stack


def test_the_indexing_function_extracts_the_graph_into_neo4j_and_pipeline_step_searches_it(
    graph_stack, neo4j_server, scripted, opensearch
):
    """The graph is extracted by the indexing function after the vectors (ingest_turn is frozen once it has
    replied), written to the live Neo4j with the password read from Secrets Manager, and searched there by
    pipeline_step."""
    from ragline.graph.neo4j import Neo4jGraphStore

    since = len(graph_stack.calls())
    _, key = graph_stack.create_tenant("graph")
    scripted.graph_extraction = Script.answer(
        '{"entities": [{"name": "Ada Lovelace", "type": "person", "description": "mathematician"},'
        ' {"name": "Analytical Engine", "type": "machine", "description": "a computer design"}],'
        ' "relations": [{"source": "Ada Lovelace", "target": "Analytical Engine", "relation": "wrote notes on"}]}'
    )
    with httpx.Client(base_url=graph_stack.api_url, headers={"X-API-Key": key}, timeout=CLIENT_TIMEOUT) as api:
        kb = api.post("/api/v1/knowledge-bases", json={"name": "history", "graph_extraction_enabled": True}).json()
        kb_id = kb["data"]["id"]
        text = "She published the first algorithm meant for a machine in 1843."
        added = api.post(
            f"/api/v1/knowledge-bases/{kb_id}/documents", json={"title": "Notes", "content": f"# Notes\n\n{text}"}
        )
        assert added.status_code == 202, added.text
        graph = Neo4jGraphStore(neo4j_server.uri, neo4j_server.user, neo4j_server.password)
        [hit] = wait_until(lambda: graph.search_nodes([kb_id], ["Ada Lovelace"], 5), timeout=180, interval=0.2)
        assert [(r.relation, r.name) for r in hit.related] == [("wrote notes on", "Analytical Engine")]
        scripted.entity_extraction = Script.answer('["Ada Lovelace"]')
        session = api.post("/api/v1/sessions", json={"knowledge_base_ids": [kb_id]}).json()["data"]["id"]
        ids = api.post(
            f"/api/v1/sessions/{session}/questions", json={"query": "Who was Ada Lovelace?", "vector_threshold": 0.95}
        ).json()["data"]
        arn = graph_stack.execution_of(ids["session_id"], ids["assistant_message_id"])
        assert graph_stack.wait_for_execution(arn)["status"] == "SUCCEEDED"
    with httpx.Client(base_url=graph_stack.stream_url, headers={"X-API-Key": key}, timeout=CLIENT_TIMEOUT) as stream:
        frames = StackClient(graph_stack, None, key, None, stream).frames(ids)  # type: ignore[arg-type]
    assert frames[-1].type == "complete", [f.type for f in frames]
    references = next(f for f in frames if f.type == "references").data["knowledge_references"]
    # match_type 6: found through the graph (the passage never names her; the vector threshold keeps the
    # chunk search from finding it).
    assert [(r["match_type"], r["content"]) for r in references] == [(6, text)]
    secret_arn = graph_stack.refs[f"secret:{SECRET}"]
    reads = [c for c in graph_stack.calls()[since:] if c.action == "secretsmanager:GetSecretValue"]
    assert {c.function for c in reads} >= {"PipelineStepFunction", "IndexDocumentFunction"}
    assert all(c.resource == secret_arn and c.allowed for c in reads)
    # Once per container: no sandbox read it twice, though each ran several steps.
    sandboxes = [c.sandbox for c in reads]
    assert len(sandboxes) == len(set(sandboxes))
    graph_stack.assert_no_denials(since)
