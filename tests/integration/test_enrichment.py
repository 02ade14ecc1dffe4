"""Ingestion enrichment through the embedded server: an upload's passages get questions, the document a
summary, the knowledge base a description, all from the (scripted) chat model, after the reply; the document's
summary_status says where that is. Plus the keywords route."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.polling import wait_until
from tests.support.scripted_model import Script

LOOMS = "Jacquard's loom read punched cards to weave patterns into silk in 1804."
TIDES = "Tides rise and fall twice a day as the moon pulls the oceans."
QUESTIONS = {
    "loom": "Which machine first followed a stored program?",
    "tides": "How often does the sea go up and down?",
}


@pytest.fixture
def scripts(scripted: Any) -> Iterator[Any]:
    yield scripted
    scripted.questions = Script.answer("")
    scripted.summary = Script.answer("")
    scripted.kb_description = Script.answer("")
    scripted.keywords = Script.answer("")


def questions_for(prompt: str) -> Script:
    """Two questions for the passage in the prompt: its own, and one it shares with the other passage."""
    own = QUESTIONS["loom"] if "loom" in prompt else QUESTIONS["tides"]
    return Script.answer(f"1. {own}\n2. What does this passage explain?")


def document(ragline: Any, document_id: str) -> dict[str, Any]:
    reply = ragline.client.get(f"/api/v1/knowledge/{document_id}")
    assert reply.status_code == 200, reply.text
    return dict(reply.json()["data"])


def test_an_upload_gets_questions_a_summary_and_a_knowledge_base_description(ragline, scripts) -> None:
    scripts.questions = questions_for
    scripts.summary = Script.answer("Notes on looms and tides.")
    scripts.kb_description = Script.answer("Old machines and the sea.")
    kb = ragline.create_kb("enriched")
    added = ragline.client.post(
        f"/api/v1/knowledge-bases/{kb}/documents",
        json={"title": "Notes", "content": f"# Notes\n\n## Looms\n\n{LOOMS}\n\n## Tides\n\n{TIDES}"},
    )
    assert added.status_code == 202, added.text
    assert added.json()["data"]["summary_status"] == "pending"
    doc_id = added.json()["data"]["id"]

    done = wait_until(lambda: (d := document(ragline, doc_id))["summary_status"] == "completed" and d, timeout=60)
    assert done["description"] == "Notes on looms and tides."
    assert ragline.client.get(f"/api/v1/knowledge-bases/{kb}").json()["data"]["description"] == (
        "Old machines and the sea."
    )
    chunks = ragline.client.get(f"/api/v1/chunks/{doc_id}").json()["data"]
    generated = {c["content"]: [q["question"] for q in c["metadata"]["generated_questions"]] for c in chunks}
    assert generated == {
        LOOMS: [QUESTIONS["loom"], "What does this passage explain?"],
        TIDES: [QUESTIONS["tides"], "What does this passage explain?"],
    }

    # The question's words are not in the passage and a vector threshold this high keeps the passage's own
    # vector out: only the question's vector can find it.
    for passage, question in ((LOOMS, QUESTIONS["loom"]), (TIDES, QUESTIONS["tides"])):
        found = ragline.client.post(
            "/api/v1/knowledge-search", json={"query": question, "knowledge_base_ids": [kb], "vector_threshold": 0.9}
        )
        assert found.status_code == 200, found.text
        assert [r["content"] for r in found.json()["data"]] == [passage]


def test_a_document_keeps_its_own_description_and_a_failing_model_fails_the_enrichment(ragline, scripts) -> None:
    scripts.kb_description = Script.answer("Should not be written.")
    reply = ragline.client.post("/api/v1/knowledge-bases", json={"name": "described", "description": "Mine."})
    kb = reply.json()["data"]["id"]
    added = ragline.client.post(
        f"/api/v1/knowledge-bases/{kb}/documents",
        json={"title": "Looms", "content": LOOMS, "description": "Written by hand."},
    )
    doc_id = added.json()["data"]["id"]
    done = wait_until(lambda: (d := document(ragline, doc_id))["summary_status"] == "completed" and d, timeout=60)
    assert done["description"] == "Written by hand."
    assert ragline.client.get(f"/api/v1/knowledge-bases/{kb}").json()["data"]["description"] == "Mine."

    scripts.questions = Script(status=500)
    scripts.summary = Script(status=500)
    added = ragline.client.post(f"/api/v1/knowledge-bases/{kb}/documents", json={"title": "Tides", "content": TIDES})
    assert added.status_code == 202, added.text
    doc_id = added.json()["data"]["id"]
    failed = wait_until(lambda: (d := document(ragline, doc_id))["summary_status"] == "failed" and d, timeout=60)
    assert failed["status"] == "indexed"  # searchable all the same: only the enrichment failed


def test_keywords_come_from_the_model_or_from_the_question(ragline, scripts) -> None:
    scripts.keywords = Script.answer(
        "1. OpenSearch\n2. k-NN plugin\n- OpenSearch\n3. HNSW\n4. ef_search\n5. m\n6. extra"
    )
    reply = ragline.client.post("/api/v1/keywords", json={"query": "How do I tune the k-NN plugin of OpenSearch?"})
    assert reply.status_code == 200, reply.text
    assert reply.json()["data"] == {
        "keywords": ["OpenSearch", "k-NN plugin", "HNSW", "ef_search", "m"],
        "source": "model",
    }

    scripts.keywords = Script.answer("")
    reply = ragline.client.post("/api/v1/keywords", json={"query": "How do I tune the plugin of OpenSearch?"})
    assert reply.json()["data"] == {"keywords": ["OpenSearch", "plugin", "tune"], "source": "terms"}

    for body in ({"query": "   "}, {"query": ""}, {}):
        refused = ragline.client.post("/api/v1/keywords", json=body)
        assert refused.status_code == 422, refused.text
        assert "query" in refused.text
