"""Empty search: no references, a fallback answer flagged as such, then complete."""

from __future__ import annotations

from tests.support.scripted_model import Script
from tests.support.sse import answer_text


def test_empty_knowledge_base_gets_the_model_fallback(ragline, scripted):
    kb = ragline.create_kb("empty")
    session = ragline.session([kb])
    scripted.queue(Script.answer("I could not find this ", "in the knowledge base."))
    frames = ragline.chat(session, "What is the capital of Mongolia?")
    types = [f.type for f in frames]
    assert "references" not in types
    result = next(f for f in frames if f.type == "tool_result" and f.extra["tool_name"] == "knowledge_search")
    assert result.extra["count"] == 0
    assert result.extra["candidate_count"] == 0
    answers = [f for f in frames if f.type == "answer"]
    assert answers
    assert all(f.extra.get("is_fallback") for f in answers)
    assert answer_text(frames) == "I could not find this in the knowledge base."
    assert types[-1] == "complete"
    # The fallback prompt carried the question.
    assert "What is the capital of Mongolia?" in scripted.answers[-1].messages[-1]["content"]


def test_fixed_fallback_strategy_sends_the_configured_text_once(ragline, scripted):
    kb = ragline.create_kb("empty")
    session = ragline.session([kb])
    frames = ragline.chat(session, "What is the capital of Mongolia?", fallback_strategy="fixed")
    answers = [f for f in frames if f.type == "answer"]
    assert len(answers) == 1
    assert answers[0].done
    assert answers[0].extra["is_fallback"] is True
    assert answers[0].content == "Sorry, I am unable to answer this question."
    assert frames[-1].type == "complete"
    assert not scripted.answers  # no answer from the model for the fixed strategy


def test_model_fallback_that_fails_sends_the_fixed_text(ragline, scripted):
    kb = ragline.create_kb("empty")
    session = ragline.session([kb])
    scripted.queue(Script(status=500), Script(status=500), Script(status=500))
    frames = ragline.chat(session, "What is the capital of Mongolia?")
    done = next(f for f in frames if f.type == "answer" and f.done)
    assert done.content == "Sorry, I am unable to answer this question."
    assert done.extra["is_fallback"] is True
    assert frames[-1].type == "complete"


def test_nothing_relevant_in_a_populated_knowledge_base_falls_back(ragline, scripted):
    kb = ragline.create_kb("drinks", {"Tea": "# Tea\n\nGreen tea is brewed at 70 to 80 degrees Celsius."})
    session = ragline.session([kb])
    frames = ragline.chat(session, "zzyzx qwxv", fallback_strategy="fixed")
    assert "references" not in [f.type for f in frames]
    assert next(f for f in frames if f.type == "answer").extra["is_fallback"] is True
