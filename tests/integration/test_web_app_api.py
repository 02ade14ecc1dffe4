"""What WeKnora's web app sends and reads beyond its auth, on both runtimes (``api``: embedded and deployed).

The knowledge base the app creates (its whole body: chunking, models, wiki and storage settings), the record it reads
to call one initialized, its settings dialog's second save (``/initialization/config``), the built-in quick-answer
agent and its suggested questions, a session made with ``agent_config``, the follow-up suggestions of an answer, the
system and tenant settings it reads on every page, and the features ragline has none of (empty lists, never 404).
Bodies are those of the app's source (Tencent/WeKnora 412dcc41c, ``frontend/src``).
"""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import pytest

from tests.support.documents import DRINKS
from tests.support.polling import wait_until
from tests.support.runtimes import Api

# What the app's knowledge-base editor sends on "create" with its defaults (KnowledgeBaseEditorModal.vue).
APP_KNOWLEDGE_BASE: dict[str, Any] = {
    "name": "Handbook",
    "description": "",
    "type": "document",
    "chunking_config": {
        "chunk_size": 120,
        "chunk_overlap": 30,
        "separators": ["\n\n", "\n", "。"],
        "enable_parent_child": True,
        "parent_chunk_size": 4096,
        "child_chunk_size": 384,
        "strategy": "auto",
        "token_limit": 0,
        "languages": [],
        "table_metadata_instructions": "",
    },
    "embedding_model_id": "",
    "summary_model_id": "",
    "vlm_config": {"enabled": False, "model_id": "", "description_language": "", "custom_instructions": ""},
    "asr_config": {"enabled": False, "model_id": "", "language": ""},
    "storage_provider_config": {"provider": "local"},
    "storage_config": {"provider": "local"},
    "question_generation_config": {"enabled": False, "question_count": 3, "custom_instructions": ""},
    "auto_tag_config": {"enabled": False, "model_id": "", "max_tags": 3, "skip_if_tagged": True},
    "wiki_config": {
        "synthesis_model_id": "",
        "max_pages_per_ingest": 0,
        "extraction_granularity": "standard",
        "content_instructions": "",
        "extraction_instructions": "",
    },
    "indexing_strategy": {
        "vector_enabled": True,
        "keyword_enabled": True,
        "wiki_enabled": True,
        "graph_enabled": False,
    },
    "extract_config": {
        "enabled": False,
        "text": "",
        "tags": [],
        "nodes": [],
        "relations": [],
        "custom_instructions": "",
    },
}
LONG_DOCUMENT = (
    "# Brewing\n\n"
    "Coffee wants water between ninety and ninety six degrees. Boiling water extracts bitter compounds. "
    "A fine grind suits espresso, which passes water through the coffee in about thirty seconds. "
    "A coarse grind suits the French press and its four minute steep. Green tea is brewed cooler, "
    "at seventy to eighty degrees, for two or three minutes.\n"
)


def ok(reply: httpx.Response, status: int = 200) -> Any:
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert body["success"] is True, body
    return body["data"]


def chat_model(api: Api) -> str:
    models = ok(api.client.get("/api/v1/models"))
    return next(m["id"] for m in models if m["type"] == "KnowledgeQA" and m["is_default"])


def create_app_kb(api: Api, **changes: Any) -> dict[str, Any]:
    body = {**APP_KNOWLEDGE_BASE, "summary_model_id": chat_model(api), **changes}
    return dict(ok(api.client.post("/api/v1/knowledge-bases", json=body), 201))


def test_the_apps_knowledge_base_is_stored_and_read_back_initialized(api: Api) -> None:
    model = chat_model(api)
    created = create_app_kb(api)
    for kb in (created, ok(api.client.get(f"/api/v1/knowledge-bases/{created['id']}"))):
        # What the app's list reads to call a knowledge base initialized, and its upload page a storage engine.
        assert kb["summary_model_id"] == model
        assert kb["embedding_model_id"]
        assert kb["storage_provider_config"] == {"provider": "s3" if api.deployed else "local"}
        assert kb["indexing_strategy"] == {
            "vector_enabled": True,
            "keyword_enabled": True,
            "wiki_enabled": True,
            "graph_enabled": False,
        }
        assert kb["capabilities"] == {"vector": True, "keyword": True, "wiki": True, "graph": False, "faq": False}
        assert kb["wiki_enabled"] is True
        # Chunking as sent, and the app's other settings returned as sent.
        chunking = kb["chunking_config"]
        assert (chunking["chunk_size"], chunking["chunk_overlap"], chunking["strategy"]) == (120, 30, "auto")
        assert chunking["separators"] == ["\n\n", "\n", "。"]
        for key in ("wiki_config", "vlm_config", "asr_config", "auto_tag_config", "question_generation_config"):
            assert kb[key] == APP_KNOWLEDGE_BASE[key], key
    listed = ok(api.client.get("/api/v1/knowledge-bases"))
    assert [kb["summary_model_id"] for kb in listed] == [model]


def test_chunk_size_and_overlap_are_honoured_as_sent(api: Api) -> None:
    kb = create_app_kb(api)
    reply = api.client.post(
        f"/api/v1/knowledge-bases/{kb['id']}/knowledge/file",
        files={"file": ("brewing.md", LONG_DOCUMENT.encode(), "text/markdown")},
    )
    knowledge_id = ok(reply)["id"]
    # On AWS the file is read by index_document after the reply: its chunks exist once it is parsed.
    wait_until(
        lambda: ok(api.client.get(f"/api/v1/knowledge/{knowledge_id}"))["parse_status"] in ("completed", "failed"),
        timeout=300,
        interval=0.5,
    )
    chunks = ok(api.client.get(f"/api/v1/chunks/{knowledge_id}", params={"page_size": 100}))
    texts = sorted(
        ((c["start_at"], c["end_at"], c["content"]) for c in chunks if c["chunk_type"] == "text"),
        key=lambda c: c[0],
    )
    assert len(texts) >= 3, texts
    # Each chunk is cut at 120 characters, plus up to 30 it repeats of the chunk before it.
    assert all(end - start <= 120 + 30 for start, end, _ in texts), texts
    for (start, end, _), (next_start, _next_end, content) in itertools.pairwise(texts):
        assert start < next_start < end, (start, end, next_start)  # it overlaps the one before
        assert end - next_start <= 30
        assert LONG_DOCUMENT[next_start:].startswith(content)  # still an exact slice of the text


def test_a_chunk_overlap_not_smaller_than_the_chunk_names_the_field(api: Api) -> None:
    body = {**APP_KNOWLEDGE_BASE, "chunking_config": {"chunk_size": 100, "chunk_overlap": 100}}
    reply = api.client.post("/api/v1/knowledge-bases", json=body)
    assert reply.status_code == 422, reply.text
    assert reply.json()["error"]["field"].startswith("chunking_config")
    assert ok(api.client.get("/api/v1/knowledge-bases")) == []


def test_the_settings_dialogs_two_saves_are_kept(api: Api) -> None:
    kb = create_app_kb(api)
    update = {
        "name": "Handbook 2",
        "description": "brewing",
        "config": {
            "wiki_config": {**APP_KNOWLEDGE_BASE["wiki_config"], "max_pages_per_ingest": 5},
            "auto_tag_config": {"enabled": True, "model_id": "", "max_tags": 2, "skip_if_tagged": True},
            "indexing_strategy": APP_KNOWLEDGE_BASE["indexing_strategy"],
        },
    }
    ok(api.client.put(f"/api/v1/knowledge-bases/{kb['id']}", json=update))
    config = {
        "llmModelId": "another-model",
        "embeddingModelId": kb["embedding_model_id"],
        "documentSplitting": {"chunkSize": 300, "chunkOverlap": 40, "separators": ["\n"], "strategy": "heading"},
        "multimodal": {"enabled": False},
        "storageProvider": "local",
    }
    saved = ok(api.client.put(f"/api/v1/initialization/config/{kb['id']}", json=config))
    assert saved == {
        "chat_model_id": "another-model",
        "embedding_model_id": kb["embedding_model_id"],
        "rerank_model_id": "",
        "multimodal_id": "",
    }
    got = ok(api.client.get(f"/api/v1/knowledge-bases/{kb['id']}"))
    assert (got["name"], got["description"], got["summary_model_id"]) == ("Handbook 2", "brewing", "another-model")
    assert (got["chunking_config"]["chunk_size"], got["chunking_config"]["chunk_overlap"]) == (300, 40)
    assert got["chunking_config"]["separators"] == ["\n"]
    assert got["wiki_config"]["max_pages_per_ingest"] == 5
    assert got["auto_tag_config"]["max_tags"] == 2
    bad = api.client.put(
        f"/api/v1/initialization/config/{kb['id']}", json={**config, "embeddingModelId": "no-such-model"}
    )
    assert bad.status_code == 422, bad.text
    assert bad.json()["error"]["field"] == "embeddingModelId"


def test_the_quick_answer_agent_its_questions_and_a_session_made_with_agent_config(api: Api) -> None:
    model = chat_model(api)
    kb_id = api.create_kb("drinks", DRINKS)
    reply = api.client.get("/api/v1/agents")
    agents = ok(reply)
    assert reply.json()["disabled_own_agent_ids"] == []
    assert [a["id"] for a in agents] == ["builtin-quick-answer"]
    assert agents[0]["config"]["agent_mode"] == "quick-answer"
    assert agents[0]["config"]["model_id"] == model  # one of /models' chat models: the app calls it ready
    questions = ok(
        api.client.get(
            "/api/v1/agents/builtin-quick-answer/suggested-questions",
            params={"knowledge_base_ids": kb_id, "limit": 3},
        )
    )["questions"]
    assert 0 < len(questions) <= 3
    assert all(q["knowledge_base_id"] == kb_id and q["source"] == "document" for q in questions)
    assert api.client.get("/api/v1/agents/someone-elses").status_code == 404

    agent_config = {"enabled": True, "max_iterations": 5, "temperature": 0.3, "knowledge_bases": [kb_id],
                    "knowledge_ids": [], "allowed_tools": ["knowledge_search"]}  # fmt: skip
    session = ok(api.client.post("/api/v1/sessions", json={"agent_config": agent_config}), 201)
    assert session["knowledge_base_ids"] == [kb_id]
    missing = api.client.post("/api/v1/sessions", json={"agent_config": {"knowledge_bases": ["nope"]}})
    assert missing.status_code == 404
    assert missing.json()["error"]["field"] == "agent_config.knowledge_bases"

    frames = api.chat(session["id"], "What water temperature should I use for coffee?")
    answer_id = next(f.data["assistant_message_id"] for f in frames if f.data.get("assistant_message_id"))
    path = f"/api/v1/sessions/{session['id']}/messages/{answer_id}/suggestions"
    for suggestions in (ok(api.client.get(path)), ok(api.client.post(path, json={"regenerate": False}))):
        assert suggestions["status"] == "suppressed"
        assert suggestions["suppression_reason"] == "disabled"
        assert suggestions["questions"] == []
        assert suggestions["assistant_message_id"] == answer_id
    assert api.client.post(path, json={"regenerate": True}).status_code == 400
    assert api.client.get(f"/api/v1/sessions/{session['id']}/messages/nope/suggestions").status_code == 404


def test_system_and_tenant_settings_say_what_runs_here(api: Api) -> None:
    info = ok(api.client.get("/api/v1/system/info"))
    assert info["vector_store_engine"] == ("opensearch" if api.deployed else "sqlite")
    assert info["keyword_index_engine"] == ("opensearch" if api.deployed else "sqlite-fts5")
    capabilities = ok(api.client.get("/api/v1/system/capabilities"))["capabilities"]
    assert capabilities["agents"]["supported"] is True
    assert capabilities["organizations"] == {"supported": False, "reason": "not_served_by_ragline"}
    parsers = api.client.get("/api/v1/system/parser-engines").json()
    assert [e["Name"] for e in parsers["data"]] == ["builtin"]
    assert {"md", "pdf", "docx", "csv"} <= set(parsers["data"][0]["FileTypes"])
    storage = ok(api.client.get("/api/v1/system/storage-engine-status"))
    own = "s3" if api.deployed else "local"
    assert [e["name"] for e in storage["engines"] if e["available"]] == [own]
    assert storage["allowed_providers"] == [own]
    assert ok(api.client.get("/api/v1/tenants/kv/storage-engine-config"))["default_provider"] == own
    retrieval = ok(api.client.get("/api/v1/tenants/kv/retrieval-config"))
    assert set(retrieval) == {
        "embedding_top_k",
        "vector_threshold",
        "keyword_threshold",
        "rerank_top_k",
        "rerank_threshold",
        "rerank_model_id",
    }
    unknown = api.client.get("/api/v1/tenants/kv/no-such-key")
    assert unknown.status_code == 400
    assert unknown.json()["error"]["field"] == "key"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/api/v1/organizations", {"organizations": [], "total": 0}),
        ("/api/v1/shared-knowledge-bases", []),
        ("/api/v1/shared-agents", []),
        ("/api/v1/user/favorites?type=kb", []),
        ("/api/v1/me/invitations/pending-count", {"pending_count": 0}),
        ("/api/v1/im-channels", []),
        ("/api/v1/embed-channels", []),
        ("/api/v1/mcp-services", []),
        ("/api/v1/web-search-providers", []),
        ("/api/v1/vector-stores", []),
        ("/api/v1/skills", []),
    ],
)
def test_features_ragline_lacks_answer_as_none_configured(api: Api, path: str, expected: Any) -> None:
    data = ok(api.client.get(path))
    if isinstance(expected, dict):
        assert {k: data[k] for k in expected} == expected
    else:
        assert data == expected
    # Still the tenant's: no key, no answer.
    assert httpx.get(api.url + path, timeout=30).status_code == 401


def test_a_knowledge_bases_folders_are_none_with_its_document_count(api: Api) -> None:
    kb_id = api.create_kb("drinks", DRINKS)
    tree = ok(api.client.get(f"/api/v1/knowledge-bases/{kb_id}/knowledge/folders"))
    assert tree == {"root_document_count": 2, "total_document_count": 2, "folders": []}
    other = api.new_tenant("other")
    reply = api.client.get(f"/api/v1/knowledge-bases/{kb_id}/knowledge/folders", headers={"X-API-Key": other})
    assert reply.status_code == 404


def test_a_question_through_the_quick_answer_agent_searches_every_knowledge_base(api: Api) -> None:
    kb_id = api.create_kb("drinks", DRINKS)
    session = ok(api.client.post("/api/v1/sessions", json={}), 201)
    assert session["knowledge_base_ids"] == []
    question = "What water temperature should I use for coffee?"
    frames = api.chat(session["id"], question, agent_id="builtin-quick-answer", knowledge_base_ids=[])
    references = [
        r for f in frames if f.data.get("response_type") == "references" for r in f.data["knowledge_references"]
    ]
    assert references, [f.data.get("response_type") for f in frames]
    assert {r["knowledge_base_id"] for r in references} == {kb_id}
    # Without the agent, a session without knowledge bases searches none.
    frames = api.chat(session["id"], question, knowledge_base_ids=[])
    assert not [f for f in frames if f.data.get("response_type") == "references"]
