"""Editing a conversation over HTTP, on both runtimes (``ragline serve`` and the deployed AWS stack): fork,
rewind, feedback on an answer, regenerated turns kept as alternatives, the provisional title, sessions found
by what they say; and the read-only helpers the page uses (the models, suggested first questions).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.documents import DRINKS
from tests.support.polling import wait_until
from tests.support.runtimes import Api
from tests.support.scripted_model import Script


def ok(reply: httpx.Response, status: int = 200) -> Any:
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert body["success"] is True, body
    return body["data"]


def error(reply: httpx.Response, status: int, field: str) -> dict[str, Any]:
    assert reply.status_code == status, reply.text
    detail: dict[str, Any] = reply.json()["error"]
    assert detail["field"] == field, detail
    return detail


@pytest.fixture
def kb(api: Api) -> str:
    return api.create_kb("drinks", DRINKS)


def messages(api: Api, session: str) -> list[dict[str, Any]]:
    return list(ok(api.client.get(f"/api/v1/sessions/{session}/messages")))


def conversation(api: Api, kb: str, *questions: str) -> tuple[str, list[dict[str, Any]]]:
    """A session with one finished turn per question."""
    session = api.session([kb])
    for question in questions:
        frames = api.chat(session, question)
        assert frames[-1].type == "complete", frames[-1]
    return session, messages(api, session)


def test_fork_copies_the_history_up_to_a_message_into_a_new_session(api: Api, kb: str) -> None:
    session, before = conversation(api, kb, "How hot should coffee water be?", "And for green tea?")
    reply = api.client.post(f"/api/v1/sessions/{session}/fork", json={"message_id": before[1]["id"]})
    assert reply.status_code == 201, reply.text
    fork = reply.json()["data"]
    assert fork["id"] != session
    assert fork["knowledge_base_ids"] == [kb]
    copied = messages(api, fork["id"])
    assert [(m["role"], m["content"]) for m in copied] == [(m["role"], m["content"]) for m in before[:2]]
    assert [m["id"] for m in reply.json()["messages"]] == [m["id"] for m in copied]
    assert not {m["id"] for m in copied} & {m["id"] for m in before}
    assert messages(api, session) == before  # the original is unchanged
    # The fork is a session like any other: a question continues it with the copied history.
    assert api.chat(fork["id"], "What grind for espresso?")[-1].type == "complete"
    assert len(messages(api, fork["id"])) == 4
    assert fork["id"] in {s["id"] for s in ok(api.client.get("/api/v1/sessions"))}


def test_rewind_deletes_the_turns_after_a_message(api: Api, kb: str) -> None:
    session, before = conversation(api, kb, "How hot should coffee water be?", "And for green tea?", "Grind?")
    done = ok(api.client.post(f"/api/v1/sessions/{session}/rewind", json={"message_id": before[0]["id"]}))
    assert done["deleted_count"] == 4
    assert done["deleted_ids"] == [m["id"] for m in before[2:]]
    assert messages(api, session) == before[:2]
    # Nothing after the last turn: nothing to delete.
    assert ok(api.client.post(f"/api/v1/sessions/{session}/rewind", json={"message_id": before[1]["id"]})) == {
        "deleted_count": 0,
        "deleted_ids": [],
    }


def test_fork_and_rewind_bad_input_names_the_field(api: Api, kb: str) -> None:
    session, before = conversation(api, kb, "How hot should coffee water be?")
    for route in ("fork", "rewind"):
        url = f"/api/v1/sessions/{session}/{route}"
        error(api.client.post(url, json={}), 422, "message_id")
        error(api.client.post(url, json={"message_id": ""}), 422, "message_id")
        error(api.client.post(url, json={"message_id": before[0]["id"], "at": 3}), 422, "at")
        assert error(api.client.post(url, json={"message_id": "no-such-message"}), 404, "message_id")["type"] == (
            "not_found"
        )
        error(api.client.post(f"/api/v1/sessions/no-such-session/{route}", json={"message_id": "x"}), 404, "session_id")
    assert messages(api, session) == before


def test_a_running_answer_is_neither_forked_nor_rewound_away(api: Api, kb: str, scripted: Any) -> None:
    session, before = conversation(api, kb, "How hot should coffee water be?")
    scripted.queue(Script.answer(*[f"w{i} " for i in range(200)], delay=0.05))
    running = api.ask(session, "And for green tea?")["assistant_message_id"]
    wait_until(lambda: scripted.answers and scripted.answers[-1].pieces_sent >= 2)
    error(api.client.post(f"/api/v1/sessions/{session}/fork", json={"message_id": running}), 409, "message_id")
    error(
        api.client.post(f"/api/v1/sessions/{session}/rewind", json={"message_id": before[0]["id"]}), 409, "message_id"
    )
    assert running in {m["id"] for m in messages(api, session)}
    # Forking before it is fine.
    reply = api.client.post(f"/api/v1/sessions/{session}/fork", json={"message_id": before[1]["id"]})
    assert reply.status_code == 201, reply.text
    ok(api.client.post(f"/api/v1/sessions/{session}/stop", json={"message_id": running}))


def test_feedback_is_stored_on_the_answer(api: Api, kb: str) -> None:
    session, before = conversation(api, kb, "How hot should coffee water be?")
    user, answer = before
    url = f"/api/v1/sessions/{session}/messages/{answer['id']}/feedback"
    rated = ok(api.client.put(url, json={"rating": "down", "comment": "  It missed the grind.  "}))
    assert (rated["id"], rated["feedback"], rated["feedback_comment"]) == (answer["id"], "down", "It missed the grind.")
    assert messages(api, session)[1]["feedback"] == "down"
    assert messages(api, session)[1]["feedback_comment"] == "It missed the grind."
    assert ok(api.client.put(url, json={"rating": "up"}))["feedback_comment"] == ""
    cleared = ok(api.client.put(url, json={"rating": "none", "comment": "ignored without a rating"}))
    assert (cleared["feedback"], cleared["feedback_comment"]) == ("", "")
    # Bad input names the field; a question (not an answer) and unknown ids are refused.
    error(api.client.put(url, json={"rating": "sideways"}), 422, "rating")
    error(api.client.put(url, json={}), 422, "rating")
    error(api.client.put(url, json={"rating": "up", "comment": "x" * 2001}), 422, "comment")
    error(api.client.put(url, json={"rating": "up", "stars": 5}), 422, "stars")
    on_question = f"/api/v1/sessions/{session}/messages/{user['id']}/feedback"
    error(api.client.put(on_question, json={"rating": "up"}), 422, "message_id")
    error(
        api.client.put(f"/api/v1/sessions/{session}/messages/nope/feedback", json={"rating": "up"}), 404, "message_id"
    )
    assert messages(api, session)[1]["feedback"] == ""


def test_a_regenerated_answer_is_kept_beside_the_first_and_replaces_it_in_the_history(
    api: Api, kb: str, scripted: Any
) -> None:
    session, before = conversation(api, kb, "How hot should coffee water be?")
    first = before[1]
    frames = api.chat(session, "How hot should coffee water be?", alternative_of=first["id"])
    assert frames[-1].type == "complete"
    again = messages(api, session)
    assert len(again) == 4
    assert [m["alternative_of"] for m in again] == ["", "", first["id"], first["id"]]
    # An alternative of an alternative joins the same group (the first answer's).
    api.chat(session, "How hot should coffee water be, in Fahrenheit?", alternative_of=again[3]["id"])
    third = messages(api, session)
    assert [m["alternative_of"] for m in third[4:]] == [first["id"], first["id"]]
    # The next question's model call sees one round of history: the newest alternative alone.
    scripted.received.clear()
    api.chat(session, "And for tea?")
    texts = [" ".join(str(m.get("content", "")) for m in r.messages) for r in scripted.answers]
    answered = [t for t in texts if "And for tea?" in t]
    assert answered, [t[-200:] for t in texts]
    history = answered[-1]
    assert "in Fahrenheit" in history
    assert history.count("How hot should coffee water be") == 1
    error(
        api.client.post(f"/api/v1/sessions/{session}/questions", json={"query": "q", "alternative_of": "nope"}),
        404,
        "alternative_of",
    )
    question = f"/api/v1/sessions/{session}/questions"
    error(api.client.post(question, json={"query": "q", "alternative_of": before[0]["id"]}), 404, "alternative_of")
    error(api.client.post(question, json={"query": "q", "alternative_of": ""}), 422, "alternative_of")


def test_the_first_question_titles_the_session_at_once_until_the_generated_title(
    api: Api, kb: str, scripted: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scripted, "title", Script.answer("Coffee water temperature"))
    session = api.session([kb])
    scripted.queue(Script.answer(*[f"w{i} " for i in range(40)], delay=0.05))
    api.ask(session, "what water temperature should I use for brewing coffee at home?")
    provisional = ok(api.client.get(f"/api/v1/sessions/{session}"))
    assert provisional["title"] == "What water temperature should I use for brewing…"
    assert provisional["title_provisional"] is True
    listed = next(s for s in ok(api.client.get("/api/v1/sessions")) if s["id"] == session)
    assert listed["title"] == provisional["title"]
    final = wait_until(
        lambda: (s := ok(api.client.get(f"/api/v1/sessions/{session}")))["title_provisional"] is False and s,
        timeout=60,
    )
    assert final["title"] == "Coffee water temperature"


def test_sessions_are_found_by_what_their_messages_say(api: Api, kb: str) -> None:
    talked, _ = conversation(api, kb, "How fine should the grind be for espresso?")
    titled = ok(api.client.post("/api/v1/sessions", json={"knowledge_base_ids": [kb], "title": "Espresso notes"}), 201)
    other, _ = conversation(api, kb, "How hot should green tea water be?")
    found = ok(api.client.get("/api/v1/sessions", params={"keyword": "ESPRESSO"}))
    by_id = {s["id"]: s for s in found}
    assert set(by_id) == {talked, titled["id"]}
    assert "espresso" in by_id[talked]["matched_content"].casefold()
    assert by_id[titled["id"]]["matched_content"] is None
    assert other not in by_id
    error(api.client.get("/api/v1/sessions", params={"keyword": "x" * 201}), 422, "keyword")


def test_models_say_which_model_answers(api: Api) -> None:
    models = ok(api.client.get("/api/v1/models"))
    chat = [m for m in models if m["type"] == "KnowledgeQA"]
    default = [m for m in chat if m["is_default"]]
    assert len(default) == 1
    assert default[0]["kind"] in {"extractive", "gguf", "bedrock", "endpoint"}
    assert default[0]["name"]
    assert any(m["type"] == "Embedding" and m["is_default"] for m in models)
    assert all("api_key" not in str(m).lower() for m in models)


def test_suggested_questions_come_from_titles_and_headings(api: Api, kb: str) -> None:
    suggested = ok(api.client.get(f"/api/v1/knowledge-bases/{kb}/suggested-questions"))
    # Documents take turns: the first section of each, then the second; a heading that repeats the title
    # ("# Coffee brewing") is no question.
    assert [s["question"] for s in suggested] == [
        "What does “Coffee brewing” say about water?",
        "What does “Tea basics” say about tea?",
        "What does “Coffee brewing” say about grind?",
    ]
    assert [s["heading"] for s in suggested] == ["Water", "Tea", "Grind"]
    assert len(ok(api.client.get(f"/api/v1/knowledge-bases/{kb}/suggested-questions", params={"limit": 1}))) == 1
    error(api.client.get(f"/api/v1/knowledge-bases/{kb}/suggested-questions", params={"limit": 0}), 422, "limit")
    error(api.client.get("/api/v1/knowledge-bases/nope/suggested-questions"), 404, "kb_id")
    empty = ok(api.client.post("/api/v1/knowledge-bases", json={"name": "empty"}), 201)["id"]
    assert ok(api.client.get(f"/api/v1/knowledge-bases/{empty}/suggested-questions")) == []
