"""What a question's request carries: configuration defaults, replaced field by field by the question's own
options (query understanding's model, rewrite template and intent prompts here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragline.config import Settings
from ragline.container import Container
from ragline.models.registry import ModelRegistry
from ragline.runtime.turns import QuestionBody
from tests.unit.ragline.ingest.test_ingest_steps import MINILM_MODEL, HashEmbedder


@pytest.fixture
def container(tmp_path: Path):
    models = ModelRegistry()
    models.add_embedder(MINILM_MODEL, lambda: HashEmbedder(MINILM_MODEL), default=True)
    built = Container.embedded(Settings(data_dir=tmp_path), models=models)
    yield built
    built.close()


def _request(container, body: QuestionBody):
    tenant, _ = container.tenants.create("t")
    session = container.sessions.create_session(tenant.id, [])
    return container.turns.build_request(session, body, "req-1", "u-1", "a-1")


def test_query_understanding_settings_come_from_the_configuration(container, monkeypatch):
    conversation = container.config.conversation  # loaded once per process: changed for this test only
    monkeypatch.setattr(conversation, "understand_model_id", "qu-small")
    monkeypatch.setattr(conversation, "rewrite_template_id", "terse")
    monkeypatch.setattr(conversation, "intent_prompts", {"greeting": "Say hello back.", "chitchat": "Keep it short."})
    request = _request(container, QuestionBody(query="hello"))
    assert request.understand_model_id == "qu-small"
    assert request.rewrite_template_id == "terse"
    assert request.intent_prompts == {"greeting": "Say hello back.", "chitchat": "Keep it short."}


def test_a_question_replaces_them_field_by_field(container, monkeypatch):
    prompts = {"greeting": "Say hello back.", "chitchat": "Keep it short."}
    monkeypatch.setattr(container.config.conversation, "intent_prompts", prompts)
    body = QuestionBody(
        query="hello", understand_model_id="qu-other", rewrite_template_id="default", intent_prompts={"greeting": "Hi."}
    )
    request = _request(container, body)
    assert request.understand_model_id == "qu-other"
    assert request.rewrite_template_id == "default"
    assert request.intent_prompts == {"greeting": "Hi.", "chitchat": "Keep it short."}


def test_by_default_the_stage_chooses(container):
    request = _request(container, QuestionBody(query="hello"))
    assert request.understand_model_id == ""  # the answering model
    assert request.rewrite_template_id == "default"
    assert request.intent_prompts == {}
