"""Bad input gets a clear 4xx naming the field, and nothing is stored half-way."""

from __future__ import annotations

import pytest


@pytest.fixture
def session(ragline):
    kb = ragline.create_kb("kb", {"Doc": "# Doc\n\nSome content about apples and pears."})
    return ragline.session([kb])


def _no_messages(ragline, session):
    assert ragline.messages(session) == []


@pytest.mark.parametrize(
    ("body", "status", "code", "field"),
    [
        ({}, 422, "missing_field", "query"),
        ({"query": ""}, 422, "invalid_field", "query"),
        ({"query": "   \n\t"}, 422, "invalid_field", "query"),
        ({"query": 42}, 422, "invalid_field", "query"),
        ({"query": "x" * 8001}, 422, "query_too_long", "query"),
        ({"query": "ok", "max_rounds": -1}, 422, "invalid_field", "max_rounds"),
        ({"query": "ok", "fallback_strategy": "guess"}, 422, "invalid_field", "fallback_strategy"),
        ({"query": "ok", "surprise": True}, 422, "unknown_field", "surprise"),
        ({"query": "ok", "understand_model_id": "no-such-model"}, 422, "invalid_field", "understand_model_id"),
        ({"query": "ok", "rewrite_template_id": "no-such-template"}, 422, "invalid_field", "rewrite_template_id"),
        (
            {"query": "ok", "intent_prompts": {"smalltalk": "Be brief."}},
            422,
            "invalid_field",
            "intent_prompts.smalltalk",
        ),
        ({"query": "ok", "knowledge_base_ids": ["no-such-kb"]}, 404, "not_found", "knowledge_base_ids"),
        ({"query": "ok", "knowledge_ids": ["no-such-doc"]}, 404, "not_found", "knowledge_ids"),
    ],
)
def test_bad_question_bodies(ragline, session, body, status, code, field):
    reply = ragline.client.post(f"/api/v1/sessions/{session}/questions", json=body)
    assert reply.status_code == status, reply.text
    error = reply.json()["error"]
    assert reply.json()["success"] is False
    assert error["type"] == code
    assert error["code"] == {404: 1003, 422: 1010}[status]
    assert error["field"] == field
    assert error["message"]
    _no_messages(ragline, session)


def test_exactly_8000_characters_is_accepted(ragline, session):
    reply = ragline.client.post(f"/api/v1/sessions/{session}/questions", json={"query": "apples " * 1142 + "x"})
    assert reply.status_code == 202, reply.text


@pytest.mark.parametrize("raw", ['{"query": "unterminated', "not json", '{"query": "a",}', "[" * 1000 + "]" * 1000])
def test_malformed_json(ragline, session, raw):
    reply = ragline.client.post(
        f"/api/v1/sessions/{session}/questions", content=raw, headers={"Content-Type": "application/json"}
    )
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["type"] == "invalid_json"
    assert reply.json()["error"]["field"] == "body"
    _no_messages(ragline, session)


def test_a_file_name_past_the_multipart_parsers_limits_is_refused_naming_the_file(ragline):
    kb = ragline.create_kb("names")
    reply = ragline.client.post(
        f"/api/v1/knowledge-bases/{kb}/knowledge/file", files={"file": ("a" * 5000 + ".md", b"# Note\n\nA note.")}
    )
    assert reply.status_code == 400, reply.text
    assert (reply.json()["error"]["type"], reply.json()["error"]["field"]) == ("invalid_multipart", "file")
    assert ragline.client.get(f"/api/v1/knowledge-bases/{kb}/knowledge").json()["data"] == []


def test_a_byte_order_mark_is_refused_in_names_and_dropped_from_file_names(ragline):
    named = ragline.client.post("/api/v1/knowledge-bases", json={"name": "\ufeffhandbook"})
    assert named.status_code == 422, named.text
    assert named.json()["error"]["field"] == "name"
    kb = ragline.create_kb("handbook")
    uploaded = ragline.client.post(
        f"/api/v1/knowledge-bases/{kb}/knowledge/file", files={"file": ("\ufeffnotes.md", b"# Notes\n\nSome notes.")}
    )
    assert uploaded.status_code in (200, 202), uploaded.text
    assert uploaded.json()["data"]["file_name"] == "notes.md"


def test_an_offset_is_digits_as_last_event_id_is(ragline, session):
    asked = ragline.ask(session, "Apples?")
    url = f"/api/v1/sessions/{session}/messages/{asked['assistant_message_id']}/events"
    for reply, field in (
        (ragline.client.get(f"{url}?offset=+3"), "offset"),
        (ragline.client.get(f"{url}?offset=3.0"), "offset"),
        (ragline.client.get(url, headers={"Last-Event-ID": "+3"}), "Last-Event-ID"),
    ):
        assert reply.status_code == 422, reply.text
        assert reply.json()["error"]["field"] == field


def test_json_array_body_is_rejected(ragline, session):
    reply = ragline.client.post(f"/api/v1/sessions/{session}/questions", json=["query"])
    assert reply.status_code == 422
    _no_messages(ragline, session)


def test_unknown_session_and_message(ragline, session):
    assert ragline.client.post("/api/v1/sessions/nope/questions", json={"query": "hi"}).status_code == 404
    reply = ragline.client.get(f"/api/v1/sessions/{session}/messages/nope/events")
    assert reply.status_code == 404
    assert reply.json()["error"]["field"] == "message_id"
    assert ragline.client.post(f"/api/v1/sessions/{session}/stop", json={"message_id": "nope"}).status_code == 404
    reply = ragline.client.post(f"/api/v1/sessions/{session}/stop", json={})
    assert reply.status_code == 422
    assert reply.json()["error"]["field"] == "message_id"


def test_missing_or_wrong_api_key(ragline, session):
    for headers in ({"X-API-Key": ""}, {"X-API-Key": "rl-wrong"}):
        reply = ragline.client.post(f"/api/v1/sessions/{session}/questions", json={"query": "hi"}, headers=headers)
        assert reply.status_code == 401
        assert reply.json()["error"]["field"] == "X-API-Key"
    _no_messages(ragline, session)


def test_another_tenants_ids_answer_404(ragline, session):
    ids = ragline.ask(session, "apples?")
    kb_id = ragline.client.get("/api/v1/knowledge-bases").json()["data"][0]["id"]
    _, other = ragline.container.tenants.create("other")
    h = {"X-API-Key": other}
    message = ids["assistant_message_id"]
    assert ragline.client.get(f"/api/v1/sessions/{session}", headers=h).status_code == 404
    assert ragline.client.get(f"/api/v1/sessions/{session}/messages", headers=h).status_code == 404
    assert (
        ragline.client.post(f"/api/v1/sessions/{session}/questions", json={"query": "x"}, headers=h).status_code == 404
    )
    assert ragline.client.get(f"/api/v1/sessions/{session}/messages/{message}/events", headers=h).status_code == 404
    assert (
        ragline.client.get(
            f"/api/v1/sessions/continue-stream/{session}", params={"message_id": message}, headers=h
        ).status_code
        == 404
    )
    assert ragline.client.get(f"/api/v1/knowledge-bases/{kb_id}", headers=h).status_code == 404
    assert ragline.client.get(f"/api/v1/knowledge-bases/{kb_id}/documents", headers=h).status_code == 404
    upload = ragline.client.post(
        f"/api/v1/knowledge-bases/{kb_id}/documents", json={"title": "t", "content": "c"}, headers=h
    )
    assert upload.status_code == 404
    # A session of the other tenant cannot name this tenant's knowledge base either.
    reply = ragline.client.post("/api/v1/sessions", json={"knowledge_base_ids": [kb_id]}, headers=h)
    assert reply.status_code == 404
    assert ragline.client.get("/api/v1/knowledge-bases", headers=h).json()["data"] == []
    assert ragline.client.get("/api/v1/sessions", headers=h).json()["data"] == []


def test_document_upload_errors(ragline):
    kb = ragline.create_kb("docs")
    url = f"/api/v1/knowledge-bases/{kb}/documents"
    reply = ragline.client.post(url, json={"title": "t"})
    assert reply.status_code == 422
    assert reply.json()["error"] == {
        "code": 1010,
        "type": "missing_field",
        "message": "content is required",
        "field": "content",
    }
    # The same error vocabulary as the routes FastAPI validates itself.
    reply = ragline.client.post(url, json={"content": "c", "surprise": 1})
    assert reply.status_code == 422
    assert reply.json()["error"]["type"] == "unknown_field"
    assert reply.json()["error"]["field"] == "surprise"
    reply = ragline.client.post(url, json=["c"])
    assert reply.status_code == 422
    assert reply.json()["error"]["type"] == "invalid_body"
    reply = ragline.client.post(url, files={"title": (None, "no file")})
    assert reply.status_code == 422
    assert reply.json()["error"] == {
        "code": 1010,
        "type": "missing_field",
        "message": "file is required",
        "field": "file",
    }
    reply = ragline.client.post(url, json={"title": "t", "content": "   "})
    assert reply.status_code == 422
    reply = ragline.client.post(url, files={"file": ("x.exe", b"MZ\x00\x01", "application/octet-stream")})
    assert reply.status_code == 415
    assert reply.json()["error"]["field"] == "file"
    reply = ragline.client.post(url, content=b"{bad", headers={"Content-Type": "application/json"})
    assert reply.status_code == 400
    assert ragline.client.get(f"{url}").json()["data"] == []


def test_document_upload_by_file_and_duplicate(ragline):
    kb = ragline.create_kb("docs")
    url = f"/api/v1/knowledge-bases/{kb}/documents"
    body = b"# Pears\n\nPears ripen off the tree.\n\n## Storage\n\nKeep them cold."
    first = ragline.client.post(url, files={"file": ("pears.md", body, "text/markdown")})
    assert first.status_code == 202, first.text  # keyword-searchable now, vectors in the background
    assert first.json()["data"]["chunk_count"] >= 1
    assert first.json()["data"]["title"] == "Pears"
    again = ragline.client.post(url, files={"file": ("pears-copy.md", body, "text/markdown")})
    assert again.status_code == 200
    assert again.json()["data"]["duplicate"] is True
    assert again.json()["data"]["id"] == first.json()["data"]["id"]
    chunks = ragline.client.get(f"{url}/{first.json()['data']['id']}/chunks").json()["data"]
    assert any("Keep them cold." in c["content"] for c in chunks)
    assert ragline.client.post("/api/v1/knowledge-bases", json={"name": "docs"}).status_code == 409


def test_pdf_and_html_uploads_are_extracted(ragline):
    from tests.support.documents import HTML, make_pdf

    kb = ragline.create_kb("files")
    url = f"/api/v1/knowledge-bases/{kb}/documents"
    pdf = make_pdf(["Turbines spin at 3000 rpm in Europe", "Page two covers condensers"], "Plant manual")
    reply = ragline.client.post(url, files={"file": ("manual.pdf", pdf, "application/pdf")}, params={"wait": True})
    assert reply.status_code == 201, reply.text  # waited: indexed
    assert reply.json()["data"]["title"] == "Plant manual"
    chunks = ragline.client.get(f"{url}/{reply.json()['data']['id']}/chunks").json()["data"]
    assert {c["metadata"].get("page") for c in chunks} >= {1}
    html = ragline.client.post(url, files={"file": ("guide.html", HTML.encode(), "text/html")})
    assert html.status_code == 202, html.text
    assert html.json()["data"]["title"] == "Brewing guide"
    scanned = ragline.client.post(url, files={"file": ("scan.pdf", make_pdf([""]), "application/pdf")})
    assert scanned.status_code == 422
    assert "no text layer" in scanned.json()["error"]["message"]
