"""A full RAG turn over real HTTP: event order, references before text, citations, persistence."""

from __future__ import annotations

import re

from tests.support.documents import DRINKS as DOCS
from tests.support.scripted_model import Piece, Script
from tests.support.sse import answer_text


def test_rag_turn_streams_progress_references_answer_and_complete(ragline, scripted):
    kb = ragline.create_kb("drinks", DOCS)
    session = ragline.session([kb])
    scripted.queue(
        Script(
            [
                Piece(reasoning="The user asks about water temperature. "),
                Piece(content="Use water between 90 and 96 °C"),
                Piece(content=' <ref id="c1"/>'),
                Piece(content=" and never boiling water"),
                Piece(content='<ref id="c99"/>.'),
            ]
        )
    )
    frames = ragline.chat(session, "What water temperature should I use for coffee?")
    types = [f.type for f in frames]

    assert types[0] == "agent_query"
    assert types[-1] == "complete"
    assert [f.id for f in frames] == sorted(f.id for f in frames)
    tools = [(f.type, f.extra["tool_name"]) for f in frames if f.type in ("tool_call", "tool_result")]
    # Query understanding's window, then knowledge search's, each opened and closed once.
    assert tools == [
        ("tool_call", "query_understand"),
        ("tool_result", "query_understand"),
        ("tool_call", "knowledge_search"),
        ("tool_result", "knowledge_search"),
    ]
    understood = next(f for f in frames if f.type == "tool_result")
    assert understood.extra["rewrite_query"] == "What water temperature should I use for coffee?"
    assert understood.extra["intent"] == "kb_search"
    result = next(f for f in frames if f.type == "tool_result" and f.extra["tool_name"] == "knowledge_search")
    assert result.extra["count"] >= 1
    assert result.extra["candidate_count"] >= result.extra["count"]
    assert result.extra["search_source"] == "knowledge"
    references = next(f for f in frames if f.type == "references")
    first_answer = types.index("answer")
    assert types.index("tool_call") < types.index("tool_result") < types.index("references") < first_answer
    assert types.index("thinking") < first_answer
    assert types.count("complete") == 1
    assert sum(1 for f in frames if f.type == "answer" and f.done) == 1

    text = answer_text(frames)
    cited = re.findall(r'<kb doc="([^"]*)" chunk_id="([^"]*)" kb_id="([^"]*)" />', text)
    assert len(cited) == 1
    title, chunk_id, kb_id = cited[0]
    assert kb_id == kb
    reference_ids = [r["id"] for r in references.data["knowledge_references"]]
    assert chunk_id in reference_ids
    assert title == "Coffee brewing"
    assert "c99" not in text
    assert "<ref" not in text

    # The model saw aliases, never internal chunk ids, and the citation protocol.
    system = scripted.answers[-1].system
    assert '<chunk id="c1"' in system
    assert chunk_id not in system
    assert '<ref id="c1"/>' in system

    messages = ragline.messages(session)
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[0]["content"] == "What water temperature should I use for coffee?"
    assistant = messages[1]
    assert assistant["is_completed"] is True
    assert assistant["content"] == text
    assert [r["id"] for r in assistant["knowledge_references"]] == reference_ids
    assert assistant["request_id"] == messages[0]["request_id"] == frames[0].data["id"]


def test_questions_route_returns_ids_and_stream_url(ragline):
    kb = ragline.create_kb("drinks", DOCS)
    session = ragline.session([kb])
    ids = ragline.ask(session, "How hot should tea water be?")
    assert set(ids) == {"session_id", "request_id", "user_message_id", "assistant_message_id", "stream_url"}
    frames = ragline.events(session, ids["assistant_message_id"])
    assert frames[0].type == "agent_query"
    assert frames[0].data["assistant_message_id"] == ids["assistant_message_id"]
    assert frames[-1].type == "complete", frames[-1]
    assert answer_text(frames) == "The answer is 42."


def test_thinking_is_streamed_before_the_answer_and_closed(ragline, scripted):
    kb = ragline.create_kb("drinks", DOCS)
    session = ragline.session([kb])
    scripted.queue(Script([Piece(reasoning="Let me think. "), Piece(reasoning="Done."), Piece(content="Fine grind.")]))
    frames = ragline.chat(session, "What grind does espresso need?")
    thinking = [f for f in frames if f.type == "thinking"]
    assert "".join(f.content for f in thinking) == "Let me think. Done."
    assert thinking[-1].done
    assert answer_text(frames) == "Fine grind."


def test_model_error_ends_the_stream_with_an_error_event(ragline, scripted):
    kb = ragline.create_kb("drinks", DOCS)
    session = ragline.session([kb])
    scripted.queue(Script(status=500), Script(status=500), Script(status=500))
    frames = ragline.chat(session, "What grind does espresso need?")
    assert frames[-1].type == "error"
    assert frames[-1].extra["stage"] == "chat_completion_stream"
    assert frames[-1].extra["error_type"] == "model_call_failed"
    assert "complete" not in [f.type for f in frames]
    assistant = ragline.messages(session)[1]
    assert assistant["is_completed"] is True


def test_truncation_without_text_sends_the_fixed_notice(ragline, scripted):
    kb = ragline.create_kb("drinks", DOCS)
    session = ragline.session([kb])
    scripted.queue(Script([], finish_reason="length"))
    frames = ragline.chat(session, "What grind does espresso need?")
    done = next(f for f in frames if f.type == "answer" and f.done)
    assert done.extra["truncated"] is True
    assert "output limit" in done.content
    assert frames[-1].type == "complete"


def test_truncation_with_text_keeps_the_text_and_flags_it(ragline, scripted):
    kb = ragline.create_kb("drinks", DOCS)
    session = ragline.session([kb])
    scripted.queue(Script.answer("A fine ", "grind", finish_reason="length"))
    frames = ragline.chat(session, "What grind does espresso need?")
    done = next(f for f in frames if f.type == "answer" and f.done)
    assert done.extra["truncated"] is True
    assert answer_text(frames) == "A fine grind"


def test_a_repeated_request_id_is_one_turn(ragline):
    kb = ragline.create_kb("drinks", DOCS)
    session = ragline.session([kb])
    first = ragline.ask(session, "How hot should tea water be?", request_id="client-retry-1")
    again = ragline.ask(session, "How hot should tea water be?", request_id="client-retry-1")
    assert again == first
    frames = ragline.events(session, first["assistant_message_id"])
    assert [f.type for f in frames].count("agent_query") == 1
    assert len(ragline.messages(session)) == 2


def test_knowledge_search_returns_ranked_passages_with_scores(ragline):
    kb = ragline.create_kb("drinks", DOCS)
    reply = ragline.client.post(
        "/api/v1/knowledge-search", json={"query": "green tea temperature", "knowledge_base_ids": [kb], "top_k": 2}
    )
    assert reply.status_code == 200, reply.text
    items = reply.json()["data"]
    assert 1 <= len(items) <= 2
    assert items[0]["knowledge_title"] == "Tea basics"
    assert items[0]["scores"]["vector"] is not None
    assert [i["score"] for i in items] == sorted((i["score"] for i in items), reverse=True)
    keyword_only = ragline.client.post(
        "/api/v1/knowledge-search",
        json={"query": "green tea temperature", "knowledge_base_ids": [kb], "retrievers": "keyword"},
    ).json()["data"]
    assert all(i["scores"]["vector"] is None for i in keyword_only)
    missing = ragline.client.post("/api/v1/knowledge-search", json={"query": "x", "knowledge_base_ids": ["nope"]})
    assert missing.status_code == 404
    assert missing.json()["error"]["field"] == "knowledge_base_ids"


def test_the_first_turn_titles_the_session_before_complete(ragline, scripted, monkeypatch):
    kb = ragline.create_kb("drinks", DOCS)
    session = ragline.session([kb])
    # The scripted model is shared by the whole session: the title script goes back after this test.
    monkeypatch.setattr(scripted, "title", Script.answer('"Coffee water temperature."'))
    first = ragline.chat(session, "What water temperature should I use for coffee?")
    types = [f.type for f in first]
    title = next(f for f in first if f.type == "session_title")
    assert title.content == "Coffee water temperature"
    assert title.extra["session_id"] == session
    assert types.index("session_title") < types.index("complete") == len(types) - 1
    assert ragline.client.get(f"/api/v1/sessions/{session}").json()["data"]["title"] == "Coffee water temperature"
    second = ragline.chat(session, "And for tea?")
    assert "session_title" not in [f.type for f in second]


def test_clean_and_heuristic_titles():
    from ragline.pipeline.session_title import clean_title, heuristic_title

    assert clean_title('Title: "Brewing **coffee** at altitude."\nextra') == "Brewing coffee at altitude"
    assert clean_title("  \n标题：咖啡的水温。") == "咖啡的水温"
    # A title cut short says so: at a word, with an ellipsis (never mid-word, never silently).
    long = clean_title("word " * 40)
    assert len(long) <= 60
    assert long.endswith("word…")
    assert clean_title("Brewing coffee at altitude") == "Brewing coffee at altitude"
    assert heuristic_title("what water temperature should I use for brewing coffee at home?") == (
        "What water temperature should I use for brewing…"
    )
    assert heuristic_title("how hot should green tea water be?") == "How hot should green tea water be"
