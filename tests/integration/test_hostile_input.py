"""Hostile input gets a 4xx in the JSON error format, naming the field, and stores nothing: control and bidi
characters, numbers past what the stores hold, empty bodies, path-traversing filenames; streams end at
their end (204 / 416) instead of pinging forever. Real HTTP against the embedded server."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.support.scripted_model import Script
from tests.support.sse import read_frames

DOCS = {"Doc": "# Doc\n\nSome content about apples and pears."}
NUL, RLO, LRI = "\x00", "\u202e", "\u2066"


@pytest.fixture
def kb(ragline):
    return ragline.create_kb("kb", DOCS)


@pytest.fixture
def session(ragline, kb):
    return ragline.session([kb])


def error_of(reply: httpx.Response, status: int) -> dict:
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert body["success"] is False
    return dict(body["error"])


# Control and bidi characters --------------------------------------------------------------------------------
@pytest.mark.parametrize("query", [f"apples{NUL}?", f"{RLO}apples", f"pears{LRI}x", "bell\x07"])
def test_a_query_with_nul_or_bidi_controls_is_refused_and_nothing_is_stored(ragline, kb, session, query):
    for route in (f"/api/v1/sessions/{session}/questions", f"/api/v1/knowledge-chat/{session}"):
        error = error_of(ragline.client.post(route, json={"query": query}), 422)
        assert error["field"] == "query"
        assert "must not contain" in error["message"]
    error = error_of(
        ragline.client.post("/api/v1/knowledge-search", json={"query": query, "knowledge_base_ids": [kb]}), 422
    )
    assert error["field"] == "query"
    hybrid = ragline.client.post(f"/api/v1/knowledge-bases/{kb}/hybrid-search", json={"query_text": query})
    assert error_of(hybrid, 422)["field"] == "query_text"
    assert ragline.messages(session) == []


def test_a_multi_line_question_is_still_accepted(ragline, session):
    ragline.ask(session, "apples?\n\tand pears?")


@pytest.mark.parametrize(
    ("route", "body", "field"),
    [
        ("/api/v1/knowledge-bases", {"name": f"evil{RLO}gpj.exe"}, "name"),
        ("/api/v1/knowledge-bases", {"name": f"nul{NUL}name"}, "name"),
        ("/api/v1/knowledge-bases", {"name": "ok", "description": f"x{NUL}"}, "description"),
        ("/api/v1/sessions", {"title": f"t{RLO}"}, "title"),
    ],
)
def test_names_with_nul_or_bidi_controls_are_refused(ragline, route, body, field):
    error = error_of(ragline.client.post(route, json=body), 422)
    assert error["field"] == field
    assert error["type"] == "invalid_field"


def test_document_titles_and_tags_with_controls_are_refused_as_json_and_as_multipart(ragline, kb):
    url = f"/api/v1/knowledge-bases/{kb}/documents"
    assert error_of(ragline.client.post(url, json={"title": f"a{NUL}", "content": "c"}), 422)["field"] == "title"
    assert error_of(ragline.client.post(url, json={"content": "c", "tags": [f"t{RLO}"]}), 422)["field"] == "tags.0"
    file = {"file": ("notes.md", b"# Notes\n\nPears ripen off the tree.", "text/markdown")}
    assert error_of(ragline.client.post(url, files=file, data={"title": f"x{RLO}"}), 422)["field"] == "title"
    assert error_of(ragline.client.post(url, files=file, data={"tags": f"ok,b{NUL}d"}), 422)["field"] == "tags"
    listed = ragline.client.get(url).json()["data"]
    assert [d["title"] for d in listed] == ["Doc"]


# FAQ questions are questions and tags are names: the same characters are refused there, on every route.
@pytest.mark.parametrize(
    ("route", "body", "field"),
    [
        ("faq/entry", {"standard_question": f"apples{NUL}?", "answers": ["a"]}, "standard_question"),
        (
            "faq/entry",
            {"standard_question": "ok?", "similar_questions": [f"{RLO}x"], "answers": ["a"]},
            "similar_questions.0",
        ),
        (
            "faq/entry",
            {"standard_question": "ok?", "negative_questions": [f"n{LRI}"], "answers": ["a"]},
            "negative_questions.0",
        ),
        ("faq/entry", {"standard_question": "ok?", "answers": ["a"], "tag_name": f"t{RLO}"}, "tag_name"),
        (
            "faq/entries",
            {"mode": "append", "entries": [{"standard_question": f"q{RLO}", "answers": ["a"]}]},
            "entries.0.standard_question",
        ),
        ("faq", {"entries": [{"standard_question": f"q{NUL}", "answers": ["a"]}]}, "entries"),
        ("faq/search", {"query_text": f"apples{NUL}"}, "query_text"),
        ("faq/search", {"query_text": f"{RLO}apples"}, "query_text"),
    ],
)
def test_faq_questions_tags_and_searches_with_controls_are_refused(ragline, kb, route, body, field):
    reply = ragline.client.post(f"/api/v1/knowledge-bases/{kb}/{route}", json=body)
    error = error_of(reply, 422)
    assert error["field"] == field, error
    assert "must not contain" in error["message"], error
    entries = ragline.client.get(f"/api/v1/knowledge-bases/{kb}/faq/entries").json()["data"]["data"]
    assert entries == []


def test_similar_questions_added_to_an_entry_are_checked_too(ragline, kb):
    url = f"/api/v1/knowledge-bases/{kb}/faq/entry"
    entry = ragline.client.post(url, json={"standard_question": "Do pears ripen?", "answers": ["Off the tree."]})
    assert entry.status_code == 200, entry.text
    added = ragline.client.post(
        f"/api/v1/knowledge-bases/{kb}/faq/entries/{entry.json()['data']['id']}/similar-questions",
        json={"similar_questions": [f"pears{RLO}?"]},
    )
    assert error_of(added, 422)["field"] == "similar_questions.0"


@pytest.mark.parametrize(
    ("sent", "stored"),
    [("../../etc/passwd.md", "passwd.md"), ("..\\..\\boot.ini.txt", "boot.ini.txt"), (f"x{RLO}dm.txt", "xdm.txt")],
)
def test_an_uploaded_file_keeps_only_a_safe_base_name(ragline, kb, sent, stored):
    url = f"/api/v1/knowledge-bases/{kb}/documents"
    content = f"# {stored}\n\nPears ripen off the tree ({sent!r}).".encode()
    reply = ragline.client.post(url, params={"wait": "true"}, files={"file": (sent, content, "text/plain")})
    assert reply.status_code == 201, reply.text
    assert reply.json()["data"]["file_name"] == stored


# Empty bodies name the field ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("route", "field"),
    [
        ("/api/v1/sessions/{session}/questions", "query"),
        ("/api/v1/knowledge-chat/{session}", "query"),
        ("/api/v1/sessions/{session}/stop", "message_id"),
        ("/api/v1/knowledge-bases", "name"),
        ("/api/v1/knowledge-bases/{kb}/documents", "content"),
        ("/api/v1/knowledge-bases/{kb}/faq", "entries"),
        ("/api/v1/knowledge-search", "query"),
    ],
)
def test_an_empty_body_gets_an_error_naming_the_field(ragline, kb, session, route, field):
    url = route.format(session=session, kb=kb)
    for headers in ({"Content-Type": "application/json"}, {}):
        error = error_of(ragline.client.post(url, content=b"", headers=headers), 422)
        assert error["field"] == field, error
        assert error["message"] == f"{field} is required"
    assert ragline.messages(session) == []


# Numbers past what the stores hold ----------------------------------------------------------------------------
@pytest.mark.parametrize("offset", [str(2**63), str(2**64), "-1", "99999999999999999999999999"])
def test_document_offsets_past_what_a_store_holds_are_refused(ragline, kb, offset):
    error = error_of(ragline.client.get(f"/api/v1/knowledge-bases/{kb}/documents", params={"offset": offset}), 422)
    assert error["field"] == "offset"


def test_the_largest_document_offset_answers_an_empty_page(ragline, kb):
    reply = ragline.client.get(f"/api/v1/knowledge-bases/{kb}/documents", params={"offset": str(2**63 - 1)})
    assert reply.status_code == 200, reply.text
    assert reply.json()["data"] == []


# Streams end at their end ------------------------------------------------------------------------------------
@pytest.fixture
def finished(ragline, session, scripted):
    scripted.queue(Script.answer("Pears ", "ripen."))
    ids = ragline.ask(session, "pears?")
    frames = ragline.events(session, ids["assistant_message_id"])
    assert frames[-1].type == "complete"
    return f"/api/v1/sessions/{session}/messages/{ids['assistant_message_id']}/events", frames


def _timed_get(ragline, url, **kwargs):
    started = time.monotonic()
    reply = ragline.client.get(url, timeout=10, **kwargs)
    return reply, time.monotonic() - started


def test_a_reader_at_the_terminal_event_gets_204_at_once(ragline, finished):
    url, frames = finished
    last = frames[-1].id
    for kwargs in ({"headers": {"Last-Event-ID": str(last)}}, {"params": {"offset": last + 1}}):
        reply, took = _timed_get(ragline, url, **kwargs)
        assert reply.status_code == 204
        assert reply.content == b""
        assert took < 5  # not the 15 s of a ping
    # One before the end: the terminal frame's replay, then the stream closes.
    replay = read_frames(ragline.client, "GET", url, headers={"Last-Event-ID": str(last - 1)})
    assert [f.type for f in replay] == ["complete"]


@pytest.mark.parametrize("position", ["offset_past", "offset_max", "id_max"])
def test_a_reader_past_the_end_of_a_finished_stream_gets_416(ragline, finished, position):
    url, frames = finished
    last = frames[-1].id
    kwargs, field = {
        "offset_past": ({"params": {"offset": last + 2}}, "offset"),
        "offset_max": ({"params": {"offset": 2**63 - 1}}, "offset"),
        "id_max": ({"headers": {"Last-Event-ID": str(2**63 - 2)}}, "Last-Event-ID"),
    }[position]
    reply, took = _timed_get(ragline, url, **kwargs)
    error = error_of(reply, 416)
    assert error["field"] == field
    assert took < 5


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"params": {"offset": 2**63}}, "offset"),
        ({"params": {"offset": -1}}, "offset"),
        ({"headers": {"Last-Event-ID": str(2**63)}}, "Last-Event-ID"),
        ({"headers": {"Last-Event-ID": str(2**63 - 1)}}, "Last-Event-ID"),
        ({"headers": {"Last-Event-ID": "12abc"}}, "Last-Event-ID"),
        ({"headers": {"Last-Event-ID": "-2"}}, "Last-Event-ID"),
    ],
)
def test_offsets_and_ids_that_name_no_event_are_refused(ragline, finished, kwargs, field):
    url, _ = finished
    error = error_of(ragline.client.get(url, **kwargs), 422)
    assert error["field"] == field


def test_the_weknora_resume_route_ends_the_same_way(ragline, session, finished):
    url, frames = finished
    message = url.split("/messages/")[1].split("/")[0]
    compat = f"/api/v1/sessions/continue-stream/{session}"
    reply, _ = _timed_get(
        ragline, compat, params={"message_id": message}, headers={"Last-Event-ID": str(frames[-1].id)}
    )
    assert reply.status_code == 204


# OpenAPI says all of it ----------------------------------------------------------------------------------------
def test_openapi_lists_the_error_replies_and_the_sse_content_type(ragline):
    spec = ragline.client.get("/openapi.json").json()
    operations = [(path, method, op) for path, item in spec["paths"].items() for method, op in item.items()]
    assert len(operations) > 20
    for path, method, op in operations:
        for status in ("401", "404", "422"):
            assert status in op["responses"], (method, path, status)
        schema = op["responses"]["422"]["content"]["application/json"]["schema"]
        assert schema["$ref"].endswith("/ErrorReply"), (method, path)
    events = spec["paths"]["/api/v1/sessions/{session_id}/messages/{message_id}/events"]["get"]["responses"]
    assert "text/event-stream" in events["200"]["content"]
    assert {"204", "416"} <= set(events)
    chat = spec["paths"]["/api/v1/knowledge-chat/{session_id}"]["post"]["responses"]
    assert "text/event-stream" in chat["200"]["content"]
    assert "503" in chat
    upload = spec["paths"]["/api/v1/knowledge-bases/{kb_id}/documents"]["post"]["responses"]
    assert {"413", "415"} <= set(upload)
