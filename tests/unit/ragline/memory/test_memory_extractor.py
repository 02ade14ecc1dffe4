"""Extraction: the heuristic without a generative model, the prompt with one, and storing the facts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ragline.config import PromptTemplates
from ragline.memory.extract import (
    EXTRACTION_OPTIONS,
    MAX_FACTS_PER_TURN,
    CompletedTurn,
    MemoryExtractor,
    heuristic_facts,
    parse_facts,
)
from ragline.models.base import ModelCallError
from ragline.types import ChatManage, PipelineRequest, PipelineState
from tests.unit.ragline.memory.fakes import BrokenEmbedder, ConceptEmbedder, generative_model, memory_request

TEMPLATES = PromptTemplates(Path(__file__).resolve().parents[4] / "config" / "prompt_templates")


@pytest.mark.parametrize(
    ("message", "facts"),
    [
        ("My name is Alice.", ["The user's name is Alice."]),
        ("Call me Al", ["The user wants to be called Al."]),
        (
            "I am a data engineer and I live in Berlin.",
            ["The user is a data engineer.", "The user lives in Berlin."],
        ),
        ("I'm from Lyon but I work in Paris", ["The user is from Lyon.", "The user works in Paris."]),
        ("I work at Acme, Inc. and I need help with the API", ["The user works at Acme, Inc."]),
        ("I live in Portland, Oregon", ["The user lives in Portland, Oregon."]),
        ("I use Python 3.11 at work.", ["The user uses Python 3.11 at work."]),
        ("I'd prefer answers in French, please", ["The user prefers answers in French."]),
        ("Remember: I prefer short answers!", ["The user prefers short answers."]),
        ("My favourite editor is Vim.", ["The user's favourite editor is Vim."]),
        ("I work on my thesis with my advisor", ["The user works on their thesis with their advisor."]),
        ("Hi! My name is Alice. Can you help me with OpenSearch?", ["The user's name is Alice."]),
        ("I’m based in Montréal", ["The user is based in Montréal."]),
    ],
)
def test_heuristic_rewrites_first_person_statements(message, facts):
    assert heuristic_facts(message) == facts


@pytest.mark.parametrize(
    ("message", "facts"),
    [
        ("我叫小明，我在腾讯工作。", ["The user's name is 小明.", "The user works at 腾讯."]),
        ("我的名字是李雷", ["The user's name is 李雷."]),
        ("我喜欢简洁的回答", ["The user likes 简洁的回答."]),
        ("我是一名数据工程师", ["The user is 一名数据工程师."]),
        ("我的邮箱是li@example.com", ["The user's 邮箱 is li@example.com."]),
        ("我住在上海。你知道上海吗？", ["The user lives in 上海."]),
    ],
)
def test_heuristic_reads_chinese_statements(message, facts):
    assert heuristic_facts(message) == facts


@pytest.mark.parametrize(
    "message",
    [
        "Where do I work?",
        "Am I a data engineer",
        "Do you know that my name is Alice",
        "I live in Berlin, what is the best district?",
        "我是谁？",
        "我在哪里工作",
        "我的名字是什么",
        "我叫什么名字吗",
    ],
)
def test_heuristic_never_reads_questions(message):
    assert heuristic_facts(message) == []


@pytest.mark.parametrize(
    "message",
    [
        "My password is hunter2",
        "my api key is sk-123",
        "我的密码是123456",
        "my question is about replicas",
        "我的问题是怎么配置",
        "我是想问一下索引",
        "I'm a bit confused about RRF",
        "I like your answer",
        "I love to know more",
        "I prefer this",
        "I don't live in Berlin",
        "If I work at Acme, what changes",
        "The weather is nice",
        "",
    ],
)
def test_heuristic_ignores_secrets_transient_and_other_statements(message):
    assert heuristic_facts(message) == []


def test_heuristic_caps_and_dedupes():
    message = ". ".join(f"I speak language{i}" for i in range(MAX_FACTS_PER_TURN + 3))
    assert len(heuristic_facts(message)) == MAX_FACTS_PER_TURN
    assert heuristic_facts("I live in Berlin. I live in Berlin!") == ["The user lives in Berlin."]


@pytest.mark.parametrize(
    ("raw", "facts"),
    [
        ('["The user works at Acme.", "The user prefers answers in French."]', None),
        (
            '<think>let me see</think>\n```json\n["The user works at Acme.", "The user prefers answers in French."]\n```',
            None,
        ),
        ('Here you go: ["The user works at Acme.", "The user prefers answers in French."] Hope it helps.', None),
        ('{"facts": ["The user works at Acme.", "The user prefers answers in French."]}', None),
        ('[{"fact": "The user works at Acme."}, {"content": "The user prefers answers in French."}, 3]', None),
        ("[]", []),
        ("Nothing lasting here.", []),
        ("[not json", []),
        ('{"answer": "The user works at Acme."}', []),
        ("[1, 2, null]", []),
        ('["  ", "The user\'s password is hunter2"]', []),
    ],
)
def test_parse_facts_is_tolerant(raw, facts):
    expected = ["The user works at Acme.", "The user prefers answers in French."] if facts is None else facts
    assert parse_facts(raw) == expected


def test_generative_model_gets_the_template_with_message_and_answer():
    model = generative_model('["The user works at Acme."]')
    extractor = MemoryExtractor(store=None, chat_model=model, templates=TEMPLATES)  # type: ignore[arg-type]
    facts = asyncio.run(extractor.extract_facts("Where is the office? I work at Acme.", "In Lyon."))
    assert facts == ["The user works at Acme."]
    [(messages, _)] = model.calls
    assert [m.role for m in messages] == ["user"]
    assert "Where is the office? I work at Acme." in messages[0].content
    assert "In Lyon." in messages[0].content
    assert "{{" not in messages[0].content
    assert model.options == [EXTRACTION_OPTIONS]


def test_generative_model_garbage_or_failure_gives_nothing():
    for model in (generative_model("I'm sorry, I can't do that."), generative_model(error=ModelCallError("down"))):
        extractor = MemoryExtractor(store=None, chat_model=model, templates=TEMPLATES)  # type: ignore[arg-type]
        assert asyncio.run(extractor.extract_facts("I work at Acme.")) == []


def test_without_templates_the_heuristic_is_used():
    model = generative_model('["never asked"]')
    extractor = MemoryExtractor(store=None, chat_model=model)  # type: ignore[arg-type]
    assert asyncio.run(extractor.extract_facts("I work at Acme.")) == ["The user works at Acme."]
    assert model.calls == []


def turn(message: str, enabled: bool = True, user: str = "alice") -> CompletedTurn:
    return CompletedTurn(
        tenant_id="t-1",
        user_id=user,
        user_message=message,
        answer="ok",
        session_id="sess-1",
        message_id="msg-1",
        memory_enabled=enabled,
    )


def test_remember_is_opt_in(sqlite_store):
    extractor = MemoryExtractor(sqlite_store, ConceptEmbedder())
    assert asyncio.run(extractor.remember(turn("I work at Acme.", enabled=False))) == []
    assert sqlite_store.list("t-1", "alice") == []


def test_remember_stores_facts_with_vectors_and_sources(sqlite_store):
    embedder = ConceptEmbedder()
    extractor = MemoryExtractor(sqlite_store, embedder)
    stored = asyncio.run(extractor.remember(turn("I work at Acme and I live in Berlin.")))
    assert [m.content for m in stored] == ["The user works at Acme.", "The user lives in Berlin."]
    # The vector is of the first-person form, which questions resemble.
    assert embedder.calls == ["I work at Acme.", "I live in Berlin."]
    listed = {m.content: m for m in sqlite_store.list("t-1", "alice")}
    memory = listed["The user works at Acme."]
    assert (memory.source_session_id, memory.source_message_id) == ("sess-1", "msg-1")
    assert memory.vector is not None
    assert memory.embedding_model == embedder.model_id


def test_restated_fact_is_one_memory(sqlite_store):
    extractor = MemoryExtractor(sqlite_store, ConceptEmbedder())
    first = asyncio.run(extractor.remember(turn("I work at Acme.")))
    again = asyncio.run(extractor.remember(turn("Hello. I work at Acme!")))
    assert [m.id for m in again] == [m.id for m in first]
    assert len(sqlite_store.list("t-1", "alice")) == 1


def test_embedding_failure_stores_without_vectors(sqlite_store):
    extractor = MemoryExtractor(sqlite_store, BrokenEmbedder())
    stored = asyncio.run(extractor.remember(turn("I work at Acme.")))
    assert [m.vector for m in stored] == [None]
    assert len(sqlite_store.list("t-1", "alice")) == 1


class FailingStore:
    def add(self, memory, vector=None):
        raise OSError("disk full")


def test_store_failure_never_raises():
    extractor = MemoryExtractor(FailingStore(), ConceptEmbedder())  # type: ignore[arg-type]
    assert asyncio.run(extractor.remember(turn("I work at Acme."))) == []


def test_remember_turn_reads_the_pipeline_state(sqlite_store):
    extractor = MemoryExtractor(sqlite_store)
    cm = ChatManage(memory_request(query="I live in Berlin."), PipelineState(chat_response="Noted."))
    [memory] = asyncio.run(extractor.remember_turn(cm))
    assert (memory.tenant_id, memory.user_id, memory.source_message_id) == ("t-1", "alice", "msg-user-1")
    assert memory.content == "The user lives in Berlin."
    plain = ChatManage(PipelineRequest(query="I live in Paris.", request_id="r", session_id="s", tenant_id="t-1"))
    assert asyncio.run(extractor.remember_turn(plain)) == []
