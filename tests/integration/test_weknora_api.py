"""WeKnora's API, as its documentation (docs/api/*.md at Tencent/WeKnora 412dcc41c) and its Go client
describe it: each documented route with the documented body, the reply read the way WeKnora's clients
read it (``tests/support/weknora.py``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from tests.conftest import Ragline
from tests.support.documents import DRINKS, make_pdf
from tests.support.polling import CLIENT_TIMEOUT, wait_until
from tests.support.runtimes import Api
from tests.support.scripted_model import Script
from tests.support.servers import ServerThread
from tests.support.weknora import check_record, check_search_result, stream
from tests.support.weknora_go import DuplicateURL, go_client

# What WeKnora's Go client sends for CreateKnowledgeBase: its whole KnowledgeBase struct, zero values
# and read-only fields included.
GO_CLIENT_KNOWLEDGE_BASE = {
    "id": "",
    "name": "weknora",
    "type": "document",
    "is_temporary": False,
    "is_pinned": False,
    "description": "weknora description",
    "tenant_id": 0,
    "chunking_config": {"chunk_size": 1000, "chunk_overlap": 200, "separators": ["."]},
    "image_processing_config": {"model_id": ""},
    "faq_config": None,
    "embedding_model_id": "",
    "summary_model_id": "",
    "vlm_config": {"enabled": False, "model_id": ""},
    "storage_provider_config": None,
    "storage_config": {
        "secret_id": "",
        "secret_key": "",
        "region": "",
        "bucket_name": "",
        "app_id": "",
        "path_prefix": "",
        "provider": "",
    },
    "extract_config": None,
    "auto_tag_config": None,
    "created_at": "0001-01-01T00:00:00Z",
    "updated_at": "0001-01-01T00:00:00Z",
    "knowledge_count": 0,
    "chunk_count": 0,
    "is_processing": False,
    "processing_count": 0,
}

# What WeKnora's Go client sends for KnowledgeQAStream (every field, zero values included).
GO_CLIENT_QUESTION = {
    "knowledge_base_ids": None,
    "knowledge_ids": None,
    "agent_enabled": False,
    "agent_id": "",
    "web_search_enabled": False,
    "summary_model_id": "",
    "disable_title": False,
}


def ok(reply: httpx.Response, status: int = 200) -> Any:
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert body["success"] is True, body
    return body["data"]


@pytest.fixture
def kb(api: Api) -> str:
    return api.create_kb("drinks", DRINKS)


@pytest.fixture
def session(api: Api, kb: str) -> str:
    return api.session([kb])


# Knowledge bases (knowledge-base.md) ------------------------------------------------------------------------
def test_create_knowledge_base_takes_the_go_clients_whole_object(api: Api) -> None:
    data = ok(api.client.post("/api/v1/knowledge-bases", json=GO_CLIENT_KNOWLEDGE_BASE), 201)
    check_record(data, "knowledge base")
    assert data["id"]  # a new id, never the one sent
    assert (data["name"], data["description"], data["type"]) == ("weknora", "weknora description", "document")
    assert data["tenant_id"] > 0
    assert data["knowledge_count"] == 0
    assert data["chunking_config"]["chunk_size"] > 0
    listed = ok(api.client.get("/api/v1/knowledge-bases"))
    assert [kb["id"] for kb in listed] == [data["id"]]
    got = ok(api.client.get(f"/api/v1/knowledge-bases/{data['id']}"))
    assert got["name"] == "weknora"
    assert got["tenant_id"] == data["tenant_id"]


def test_knowledge_base_extract_config_turns_graph_extraction_on(api: Api) -> None:
    body = {"name": "graph", "extract_config": {"enabled": True, "text": "", "tags": []}}
    data = ok(api.client.post("/api/v1/knowledge-bases", json=body), 201)
    assert data["graph_extraction_enabled"] is True
    # The settings sent come back as sent, and the record says what is in force.
    assert data["extract_config"] == {"enabled": True, "text": "", "tags": []}
    assert data["indexing_strategy"]["graph_enabled"] is True
    assert data["capabilities"]["graph"] is True


def test_knowledge_base_bad_values_name_the_field(api: Api) -> None:
    reply = api.client.post("/api/v1/knowledge-bases", json={"name": "x", "type": "spreadsheet"})
    assert reply.status_code == 422
    assert reply.json()["success"] is False
    assert reply.json()["error"]["field"] == "type"
    assert reply.json()["error"]["code"] == 1010


def test_counts_of_a_knowledge_base(api: Api, kb: str) -> None:
    data = ok(api.client.get(f"/api/v1/knowledge-bases/{kb}"))
    assert data["knowledge_count"] == data["document_count"] == 2
    documents = ok(api.client.get(f"/api/v1/knowledge-bases/{kb}/knowledge"))
    assert data["chunk_count"] == sum(d["chunk_count"] for d in documents) > 0


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_hybrid_search(api: Api, kb: str, method: str) -> None:
    body = {"query_text": "water temperature for coffee", "vector_threshold": 0.1, "match_count": 10}
    hits = ok(api.client.request(method, f"/api/v1/knowledge-bases/{kb}/hybrid-search", json=body))
    assert hits
    for index, hit in enumerate(hits):
        check_search_result(hit)
        assert hit["seq"] == index + 1
    assert hits[0]["knowledge_title"] == "Coffee brewing"
    keyword_only = ok(
        api.client.post(
            f"/api/v1/knowledge-bases/{kb}/hybrid-search",
            json={"query_text": "espresso grind", "disable_vector_match": True, "match_count": 3},
        )
    )
    assert keyword_only
    assert {hit["match_type"] for hit in keyword_only} == {1}  # WeKnora's MatchTypeKeywords
    assert len(keyword_only) <= 3


def test_hybrid_search_refuses_both_retrievers_off(api: Api, kb: str) -> None:
    body = {"query_text": "coffee", "disable_vector_match": True, "disable_keywords_match": True}
    reply = api.client.post(f"/api/v1/knowledge-bases/{kb}/hybrid-search", json=body)
    assert reply.status_code == 422
    assert reply.json()["error"]["field"] == "disable_vector_match"


# Knowledge (knowledge.md) -------------------------------------------------------------------------------------
def test_file_upload_as_documented(api: Api, kb: str) -> None:
    url = f"/api/v1/knowledge-bases/{kb}/knowledge/file"
    form = {"enable_multimodel": "true", "tag_id": "tag-00000001", "metadata": '{"source":"manual_upload"}'}
    files = {"file": ("comets.txt", b"Comets are icy bodies. A comet's tail points away from the Sun.", "text/plain")}
    data = ok(api.client.post(url, data=form, files=files))
    check_record(data, "knowledge")
    assert (data["type"], data["file_name"], data["knowledge_base_id"]) == ("file", "comets.txt", kb)
    # Parsed (keyword-searchable) at the reply; "processing" until its vectors are computed, as in WeKnora.
    assert data["parse_status"] in ("processing", "completed")
    wait_until(lambda: ok(api.client.get(f"/api/v1/knowledge/{data['id']}"))["parse_status"] == "completed")
    assert data["tag_id"] == "tag-00000001"
    assert data["file_hash"]
    # The same file again: 409 with the existing record, as WeKnora's Go client expects (ErrDuplicateFile).
    again = api.client.post(url, data=form, files=files)
    assert again.status_code == 409, again.text
    assert again.json()["code"] == "duplicate_file"
    assert again.json()["data"]["id"] == data["id"]
    # fileName keeps a folder upload's path; the document is named by its base name.
    other = {"file": ("x.txt", b"Halley's comet returns every 76 years.", "text/plain")}
    renamed = ok(api.client.post(url, data={"fileName": "astronomy/halley.txt"}, files=other))
    assert renamed["file_name"] == "halley.txt"


def test_file_upload_bad_metadata_names_the_field(api: Api, kb: str) -> None:
    files = {"file": ("a.txt", b"Alpha.", "text/plain")}
    reply = api.client.post(f"/api/v1/knowledge-bases/{kb}/knowledge/file", data={"metadata": "{not json"}, files=files)
    assert reply.status_code == 422
    assert reply.json()["error"]["field"] == "metadata"


COFFEE_PAGE = """<!doctype html><html><head><title>Cold brew guide</title></head><body>
<nav>Home | Shop | About</nav>
<article><h1>Cold brew guide</h1>
<p>Cold brew coffee steeps coarse grounds in cold water for twelve to eighteen hours, then is filtered.</p>
<p>The long steep gives a smooth, low-acid concentrate that keeps for a week in the fridge.</p>
</article><footer>Copyright</footer></body></html>"""


@pytest.fixture
def pages() -> Iterator[ServerThread]:
    """A small web server: a page, a redirect to it, two PDFs, an image and a missing page."""
    app = FastAPI()

    @app.get("/articles/cold-brew")
    async def article() -> HTMLResponse:
        return HTMLResponse(COFFEE_PAGE)

    @app.get("/old-link")
    async def moved() -> RedirectResponse:
        return RedirectResponse("/articles/cold-brew", status_code=301)

    @app.get("/files/espresso")
    async def pdf() -> Response:
        return Response(make_pdf(["Espresso is brewed at nine bars of pressure."]), media_type="application/pdf")

    @app.get("/files/lungo")
    async def other_pdf() -> Response:
        return Response(make_pdf(["A lungo runs twice the water through the puck."]), media_type="application/pdf")

    @app.get("/logo.png")
    async def image() -> Response:
        return Response(b"\x89PNG\r\n\x1a\n", media_type="image/png")

    server = ServerThread(app).start()
    yield server
    server.stop()


def test_knowledge_from_url_as_documented(ragline: Ragline, pages: ServerThread) -> None:
    """Embedded: the page server is on 127.0.0.1, which only an operator's allow-list lets through (the
    deployed stack's refusal is test_weknora_go_client's)."""
    api = ragline
    kb = ragline.create_kb("drinks", DRINKS)
    url = f"/api/v1/knowledge-bases/{kb}/knowledge/url"
    page = f"{pages.url}/articles/cold-brew"
    # 127.0.0.1 is a private address: refused, unless the operator allows it (the page server only, here).
    refused = api.client.post(url, json={"url": page})
    assert (refused.status_code, refused.json()["error"]["type"], refused.json()["error"]["field"]) == (
        422,
        "url_refused",
        "url",
    )
    ragline.container.config.web_fetch.allowed_endpoints = [("127.0.0.1", pages.port)]
    # What the Go client sends: url, and the omitempty fields it was given.
    created = ok(api.client.post(url, json={"url": f"{pages.url}/old-link", "channel": "api"}))
    check_record(created, "knowledge")
    assert (created["type"], created["source"], created["file_name"]) == ("url", page, "cold-brew.html")
    assert created["title"] == "Cold brew guide"
    assert created["knowledge_base_id"] == kb
    wait_until(lambda: ok(api.client.get(f"/api/v1/knowledge/{created['id']}"))["parse_status"] == "completed")
    hits = ok(
        api.client.post("/api/v1/knowledge-search", json={"query": "cold brew steep hours", "knowledge_base_id": kb})
    )
    assert hits[0]["knowledge_id"] == created["id"]
    assert "Copyright" not in " ".join(h["content"] for h in hits)  # the page's text, not its chrome
    # The same page again: WeKnora's 409 with the existing record.
    again = api.client.post(url, json={"url": page})
    assert again.status_code == 409, again.text
    assert again.json()["data"]["id"] == created["id"]
    # A document file: read by its media type, titled as asked.
    pdf = ok(api.client.post(url, json={"url": f"{pages.url}/files/espresso", "title": "Espresso notes"}))
    assert (pdf["file_type"], pdf["title"], pdf["file_name"]) == ("pdf", "Espresso notes", "espresso.pdf")
    for body, status, kind in (
        ({"url": f"{pages.url}/logo.png"}, 415, "unsupported_media_type"),
        ({"url": f"{pages.url}/missing"}, 422, "url_fetch_failed"),
        ({"url": "ftp://example.com/file.txt"}, 422, "url_refused"),
        ({"url": "http://169.254.169.254/latest/meta-data/"}, 422, "url_refused"),
        ({"url": "not a url"}, 422, None),
        ({}, 422, "missing_field"),
    ):
        reply = api.client.post(url, json=body)
        assert reply.status_code == status, (body, reply.text)
        assert reply.json()["error"]["field"] == "url", (body, reply.text)
        if kind is not None:
            assert reply.json()["error"]["type"] == kind, (body, reply.text)
    listed = ok(api.client.get(f"/api/v1/knowledge-bases/{kb}/knowledge", params={"page_size": 100}))
    assert {created["id"], pdf["id"]} <= {k["id"] for k in listed}
    # WeKnora's Go client: CreateKnowledgeFromURL, and ErrDuplicateURL carrying the existing record.
    with go_client(api.url, api_key=api.key) as go:
        with pytest.raises(DuplicateURL) as duplicate:
            go.create_knowledge_from_url(kb, page, title="Cold brew again")
        assert duplicate.value.existing["id"] == created["id"]
        renamed = go.create_knowledge_from_url(kb, f"{pages.url}/files/lungo", file_name="shots", file_type="pdf")
        assert renamed["file_name"] == "shots.pdf"


def test_manual_knowledge_as_documented(api: Api, kb: str) -> None:
    body = {
        "title": "Product guide",
        "content": "# Product guide\n\n## Quick start\n\nPress the red button to brew.",
        "status": "published",
        "tag_id": "tag-00000001",
    }
    data = ok(api.client.post(f"/api/v1/knowledge-bases/{kb}/knowledge/manual", json=body))
    assert (data["type"], data["title"], data["file_type"]) == ("manual", "Product guide", "md")
    got = ok(api.client.get(f"/api/v1/knowledge/{data['id']}"))
    assert got["title"] == "Product guide"
    hits = ok(api.client.post("/api/v1/knowledge-search", json={"query": "red button", "knowledge_ids": [data["id"]]}))
    assert {h["knowledge_id"] for h in hits} == {data["id"]}


def test_list_knowledge_pages_and_filters(api: Api, kb: str) -> None:
    url = f"/api/v1/knowledge-bases/{kb}/knowledge"
    api.client.post(f"{url}/manual", json={"title": "Tagged", "content": "Oolong is half oxidised.", "tag_id": "t1"})
    reply = api.client.get(url, params={"page": 1, "page_size": 1})
    assert reply.status_code == 200
    body = reply.json()
    assert (body["success"], body["page"], body["page_size"], body["total"]) == (True, 1, 1, 3)
    assert len(body["data"]) == 1
    second = api.client.get(url, params={"page": 2, "page_size": 2}).json()
    assert len(second["data"]) == 1
    assert {d["id"] for d in body["data"]}.isdisjoint(d["id"] for d in second["data"])
    tagged = api.client.get(url, params={"tag_id": "t1"}).json()
    assert [d["title"] for d in tagged["data"]] == ["Tagged"]
    assert tagged["total"] == 1
    untagged = api.client.get(url, params={"tag_id": "__untagged__"}).json()
    assert untagged["total"] == 2
    assert api.client.get(url, params={"keyword": "coffee"}).json()["total"] == 1
    # The manual page's vectors are computed in the background: it is "completed" once they are.
    wait_until(lambda: api.client.get(url, params={"parse_status": "completed"}).json()["total"] == 3)
    assert api.client.get(url, params={"file_type": "manual"}).json()["total"] == 3
    assert api.client.get(url, params={"page_size": 0}).status_code == 422


def test_knowledge_batch_keeps_the_order_asked(api: Api, kb: str) -> None:
    documents = ok(api.client.get(f"/api/v1/knowledge-bases/{kb}/knowledge"))
    ids = [d["id"] for d in reversed(documents)]
    batch = ok(api.client.get("/api/v1/knowledge/batch", params={"ids": [*ids, "no-such-id"]}))
    assert [d["id"] for d in batch] == ids
    assert api.client.get("/api/v1/knowledge/no-such-id").status_code == 404


# Chunks (chunk.md) ------------------------------------------------------------------------------------------
def test_chunks_of_a_knowledge_paged(api: Api, kb: str) -> None:
    document = ok(api.client.get(f"/api/v1/knowledge-bases/{kb}/knowledge", params={"keyword": "coffee"}))[0]
    body = api.client.get(f"/api/v1/chunks/{document['id']}", params={"page": 1, "page_size": 1}).json()
    assert (body["success"], body["page"], body["page_size"]) == (True, 1, 1)
    assert body["total"] >= 2
    [chunk] = body["data"]
    check_record(chunk, "chunk")
    assert (chunk["knowledge_id"], chunk["is_enabled"], chunk["status"]) == (document["id"], True, 2)
    by_id = ok(api.client.get(f"/api/v1/chunks/by-id/{chunk['id']}"))
    assert by_id["content"] == chunk["content"]
    assert api.client.get("/api/v1/chunks/no-such-knowledge").status_code == 404


# Sessions (session.md) ------------------------------------------------------------------------------------
def test_sessions_as_documented(api: Api) -> None:
    created = ok(api.client.post("/api/v1/sessions", json={"title": "My chat", "description": "About AI"}), 201)
    check_record(created, "session")
    assert created["title"] == "My chat"
    assert created["tenant_id"] > 0
    got = ok(api.client.get(f"/api/v1/sessions/{created['id']}"))
    assert (got["id"], got["tenant_id"]) == (created["id"], created["tenant_id"])
    for _ in range(2):
        api.client.post("/api/v1/sessions", json={"title": "Other"}).raise_for_status()
    page = api.client.get("/api/v1/sessions", params={"page": 1, "page_size": 2}).json()
    assert (page["total"], page["page"], page["page_size"], len(page["data"])) == (3, 1, 2, 2)
    mine = api.client.get("/api/v1/sessions", params={"keyword": "my"}).json()
    assert [s["id"] for s in mine["data"]] == [created["id"]]
    assert api.client.get("/api/v1/sessions/no-such-session").status_code == 404


def test_update_session_as_documented(api: Api) -> None:
    created = ok(api.client.post("/api/v1/sessions", json={"title": "My chat", "description": "About AI"}), 201)
    assert created["description"] == "About AI"
    url = f"/api/v1/sessions/{created['id']}"
    # The Go client sends its CreateSessionRequest: both fields, always.
    updated = ok(api.client.put(url, json={"title": "WeKnora talk", "description": "Architecture"}))
    check_record(updated, "session")
    assert (updated["title"], updated["description"]) == ("WeKnora talk", "Architecture")
    assert updated["updated_at"] >= created["updated_at"]
    # The frontend may send the title alone: the description stays.
    assert ok(api.client.put(url, json={"title": "Renamed"}))["description"] == "Architecture"
    # A client may send back the whole record it read; its read-only fields are ignored.
    record = {**ok(api.client.get(url)), "title": "From the record", "tenant_id": 999}
    again = ok(api.client.put(url, json=record))
    assert (again["title"], again["tenant_id"]) == ("From the record", created["tenant_id"])
    bad = api.client.put(url, json={"title": "x" * 201})
    assert (bad.status_code, bad.json()["error"]["field"]) == (422, "title")
    assert api.client.put("/api/v1/sessions/no-such-session", json={"title": "x"}).status_code == 404


def test_pinned_sessions_list_first(api: Api) -> None:
    sessions = [api.session([]) for _ in range(3)]
    before = [s["id"] for s in ok(api.client.get("/api/v1/sessions"))]
    assert sorted(before) == sorted(sessions)
    first = before[-1]  # the least recently active
    assert api.client.post(f"/api/v1/sessions/{first}/pin").json() == {"success": True, "is_pinned": True}
    got = ok(api.client.get(f"/api/v1/sessions/{first}"))
    assert (got["is_pinned"], bool(got["pinned_at"])) == (True, True)
    assert [s["id"] for s in ok(api.client.get("/api/v1/sessions"))] == [first, *before[:-1]]
    assert api.client.delete(f"/api/v1/sessions/{first}/pin").json() == {"success": True, "is_pinned": False}
    assert ok(api.client.get(f"/api/v1/sessions/{first}"))["is_pinned"] is False
    assert [s["id"] for s in ok(api.client.get("/api/v1/sessions"))] == before
    assert api.client.post("/api/v1/sessions/no-such-session/pin").status_code == 404
    # ragline's sessions are all web sessions: source=web lists them, an IM source none.
    assert len(ok(api.client.get("/api/v1/sessions", params={"source": "web"}))) == 3
    assert ok(api.client.get("/api/v1/sessions", params={"source": "feishu"})) == []


def test_delete_session_as_documented(api: Api, session: str) -> None:
    api.chat(session, "How hot should coffee water be?")
    kept = api.session([])
    reply = api.client.delete(f"/api/v1/sessions/{session}")
    assert reply.json() == {"success": True, "message": "Session deleted successfully"}
    assert api.client.get(f"/api/v1/sessions/{session}").status_code == 404
    assert api.client.get(f"/api/v1/messages/{session}/load").status_code == 404
    assert api.client.delete(f"/api/v1/sessions/{session}").status_code == 404
    assert [s["id"] for s in ok(api.client.get("/api/v1/sessions"))] == [kept]


def test_batch_delete_sessions_all_or_none(api: Api) -> None:
    a, b, c = (api.session([]) for _ in range(3))
    missing = api.client.request("DELETE", "/api/v1/sessions/batch", json={"ids": [a, "no-such-session"]})
    assert (missing.status_code, missing.json()["error"]["field"]) == (404, "ids")
    assert api.client.get(f"/api/v1/sessions/{a}").status_code == 200  # nothing deleted
    reply = api.client.request("DELETE", "/api/v1/sessions/batch", json={"ids": [a, b]})
    assert reply.json() == {"success": True, "message": "Sessions deleted successfully"}
    assert [s["id"] for s in ok(api.client.get("/api/v1/sessions"))] == [c]
    empty = api.client.request("DELETE", "/api/v1/sessions/batch", json={"ids": []})
    assert (empty.status_code, empty.json()["error"]["field"]) == (422, "ids")
    everything = api.client.request("DELETE", "/api/v1/sessions/batch", json={"delete_all": True})
    assert everything.json() == {"success": True, "message": "All sessions deleted successfully"}
    assert ok(api.client.get("/api/v1/sessions")) == []


def test_clear_session_messages_keeps_the_session(api: Api, session: str) -> None:
    api.chat(session, "How hot should coffee water be?")
    title = ok(api.client.get(f"/api/v1/sessions/{session}"))["title"]
    assert len(ok(api.client.get(f"/api/v1/messages/{session}/load"))) == 2
    reply = api.client.delete(f"/api/v1/sessions/{session}/messages")
    assert reply.json() == {"success": True, "message": "Session messages cleared successfully"}
    assert ok(api.client.get(f"/api/v1/messages/{session}/load")) == []
    assert ok(api.client.get(f"/api/v1/sessions/{session}"))["title"] == title
    # The session goes on: the next question is answered in it.
    assert api.chat(session, "How hot should coffee water be?")[-1].type == "complete"


def test_a_session_with_a_running_answer_is_not_deleted(api: Api, session: str, scripted: Any) -> None:
    # Long enough to outlast the four refusals on a loaded machine; stopped at the end.
    scripted.queue(Script.answer(*[f"w{i} " for i in range(400)], delay=0.05))
    running = api.ask(session, "How hot should coffee water be?")["assistant_message_id"]
    for method, url, body in (
        ("DELETE", f"/api/v1/sessions/{session}", None),
        ("DELETE", f"/api/v1/sessions/{session}/messages", None),
        ("DELETE", "/api/v1/sessions/batch", {"ids": [session]}),
        ("DELETE", "/api/v1/sessions/batch", {"delete_all": True}),
    ):
        reply = api.client.request(method, url, json=body)
        assert reply.status_code == 409, (url, reply.text)
        assert reply.json()["error"]["type"] == "message_running"
    api.client.post(f"/api/v1/sessions/{session}/stop", json={"message_id": running}).raise_for_status()
    assert api.client.delete(f"/api/v1/sessions/{session}").status_code == 200


def test_generate_title_as_documented(api: Api, scripted: Any) -> None:
    session = api.session([])
    # The Go client sends whole Message records; role and content are what a title is made from.
    messages = [
        {
            "id": "m1",
            "session_id": session,
            "request_id": "r1",
            "content": "How hot should the water be for pour-over coffee?",
            "role": "user",
            "knowledge_references": None,
            "is_completed": True,
            "created_at": "0001-01-01T00:00:00Z",
            "updated_at": "0001-01-01T00:00:00Z",
        },
        {"role": "assistant", "content": "Between 90 and 96 degrees."},
    ]
    reply = api.client.post(f"/api/v1/sessions/{session}/generate_title", json={"messages": messages})
    assert reply.status_code == 200, reply.text
    assert reply.json() == {"success": True, "data": "Scripted title"}  # the chat model's title
    asked = [r for r in scripted.received if not r.system][-1]
    assert "pour-over coffee" in " ".join(str(m["content"]) for m in asked.messages)  # of the first question
    assert ok(api.client.get(f"/api/v1/sessions/{session}"))["title"] == "Scripted title"
    no_question = api.client.post(
        f"/api/v1/sessions/{session}/generate_title", json={"messages": [{"role": "assistant", "content": "Hi"}]}
    )
    assert (no_question.status_code, no_question.json()["error"]["field"]) == (422, "messages")
    empty = api.client.post(f"/api/v1/sessions/{session}/generate_title", json={"messages": []})
    assert (empty.status_code, empty.json()["error"]["field"]) == (422, "messages")
    unknown = api.client.post("/api/v1/sessions/no-such/generate_title", json={"messages": messages})
    assert unknown.status_code == 404


# Chat (chat.md), continue-stream and stop (session.md), messages (message.md) ---------------------------------
def test_knowledge_chat_with_the_go_clients_body(api: Api, session: str, kb: str) -> None:
    body = {
        **GO_CLIENT_QUESTION,
        "query": "How hot should coffee water be?",
        "knowledge_base_ids": [kb],
        "agent_id": "builtin-quick-answer",
        "channel": "api",
    }
    frames = stream(api.client, "POST", f"/api/v1/knowledge-chat/{session}", json=body, require_message_event=True)
    types = [f.response_type for f in frames]
    assert types[0] == "agent_query"
    assert types[-1] == "complete"
    references = next(f for f in frames if f.response_type == "references").knowledge_references
    assert references
    assert {r["match_type"] for r in references} <= set(range(10))
    assert any("90 and 96" in r["content"] for r in references)
    assert "".join(f.content for f in frames if f.response_type == "answer")
    assert all(f.session_id == session for f in frames)


def test_agent_chat_runs_the_same_pipeline_and_says_agent_mode_is_off(api: Api, session: str, kb: str) -> None:
    body = {
        "query": "How long is green tea brewed?",
        "agent_enabled": True,
        "agent_id": "builtin-smart-reasoning",
        "mentioned_items": [{"id": kb, "name": "Drinks", "type": "kb", "kb_type": "document"}],
    }
    frames = stream(api.client, "POST", f"/api/v1/agent-chat/{session}", json=body, require_message_event=True)
    assert frames[0].response_type == "agent_query"
    assert frames[0].data is not None
    assert (frames[0].data["agent_mode"], frames[0].data["agent_enabled"]) == ("off", False)
    assert frames[-1].response_type == "complete"
    references = next(f for f in frames if f.response_type == "references").knowledge_references or []
    assert any("two to three minutes" in r["content"] for r in references)


def test_mentioned_items_widen_the_search_scope(api: Api, kb: str) -> None:
    empty_session = api.session([])
    body = {"query": "What grind does espresso need?", "mentioned_items": [{"id": kb, "type": "kb"}]}
    frames = stream(
        api.client, "POST", f"/api/v1/knowledge-chat/{empty_session}", json=body, require_message_event=True
    )
    references = next(f for f in frames if f.response_type == "references").knowledge_references or []
    assert any("fine grind" in r["content"] for r in references)


def test_disable_title_keeps_the_session_untitled(api: Api, kb: str) -> None:
    untitled = api.session([kb])
    frames = stream(
        api.client,
        "POST",
        f"/api/v1/knowledge-chat/{untitled}",
        json={"query": "How hot should coffee water be?", "disable_title": True},
        require_message_event=True,
    )
    assert "session_title" not in [f.response_type for f in frames]
    assert ok(api.client.get(f"/api/v1/sessions/{untitled}"))["title"] == ""
    titled = api.session([kb])
    frames = stream(
        api.client,
        "POST",
        f"/api/v1/knowledge-chat/{titled}",
        json={"query": "How hot should coffee water be?"},
        require_message_event=True,
    )
    assert "session_title" in [f.response_type for f in frames]


def test_unknown_summary_model_is_ignored(api: Api, session: str) -> None:
    frames = stream(
        api.client,
        "POST",
        f"/api/v1/knowledge-chat/{session}",
        json={"query": "How hot should coffee water be?", "summary_model_id": "8aea788c-bb30"},
        require_message_event=True,
    )
    assert frames[-1].response_type == "complete"


def test_bad_chat_values_still_name_the_field(api: Api, session: str) -> None:
    for body, field in (
        ({"query": "x", "disable_title": "sometimes"}, "disable_title"),
        ({"query": "x", "mentioned_items": [{"id": "kb", "type": "folder"}]}, "mentioned_items.0.type"),
        ({"query": "x", "images": "not-a-list"}, "images"),
        ({"query": "x", "mentioned_items": [{"id": "no-such-kb", "type": "kb"}]}, "knowledge_base_ids"),
    ):
        reply = api.client.post(f"/api/v1/knowledge-chat/{session}", json=body)
        assert 400 <= reply.status_code < 500, reply.text
        assert reply.json()["error"]["field"] == field, reply.text


def test_stream_resumes_with_continue_stream_and_stops(api: Api, session: str, scripted: Any) -> None:
    """WeKnora's way through a long answer: the chat stream drops after a few frames, the client finds the
    unfinished message with /messages/{sid}/load, resumes with continue-stream (frames counted only when
    written ``event:message``), then stops it. On AWS, API Gateway hands a knowledge-chat over whole, so the
    client that wants the answer live asks with the split form (202) and reads continue-stream from
    stream_reader's URL."""
    scripted.queue(Script.answer(*[f"part{i} " for i in range(40)], delay=0.05))
    if api.deployed:
        api.ask(session, "How hot should coffee water be?")
    else:
        first = stream(
            api.client,
            "POST",
            f"/api/v1/knowledge-chat/{session}",
            json={"query": "How hot should coffee water be?"},
            require_message_event=True,
            stop_after=2,
        )
        assert [f.response_type for f in first][:1] == ["agent_query"]
    messages = ok(api.client.get(f"/api/v1/messages/{session}/load", params={"limit": 20}))
    assert [m["role"] for m in messages] == ["user", "assistant"]
    pending = messages[-1]
    assert pending["is_completed"] is False
    # Resume: every frame from the start, with WeKnora's raw event: comparison.
    deadline = time.monotonic() + 60
    while not (scripted.answers and scripted.answers[-1].pieces_sent >= 3):
        assert time.monotonic() < deadline, "the answer did not start"
        time.sleep(0.02)
    resumed = stream(
        api.stream,
        "GET",
        f"/api/v1/sessions/continue-stream/{session}",
        params={"message_id": pending["id"]},
        require_message_event=True,
        stop_after=4,
    )
    assert len(resumed) == 4
    assert resumed[0].response_type == "agent_query"
    assert resumed[0].assistant_message_id == pending["id"]
    stop = api.client.post(f"/api/v1/sessions/{session}/stop", json={"message_id": pending["id"]})
    assert stop.status_code == 200, stop.text
    assert stop.json()["success"] is True
    assert stop.json()["message"] == "Generation stopped"
    rest = stream(
        api.stream,
        "GET",
        f"/api/v1/sessions/continue-stream/{session}",
        params={"message_id": pending["id"]},
        require_message_event=True,
    )
    assert rest[-1].response_type == "stop"
    again = api.client.post(f"/api/v1/sessions/{session}/stop", json={"message_id": pending["id"]})
    assert again.json()["data"]["status"] == "already_stopped"  # said as it is: stopped, not completed
    done = wait_until(
        lambda: (last := ok(api.client.get(f"/api/v1/messages/{session}/load"))[-1])["is_completed"] and last
    )
    assert done["content"] == "".join(f.content for f in rest if f.response_type == "answer")


def test_continue_stream_errors_as_documented(api: Api, session: str) -> None:
    missing = api.client.get(f"/api/v1/sessions/continue-stream/{session}", params={"message_id": "nope"})
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == 1003


def test_load_messages_pages_backwards_with_before_time(api: Api, session: str) -> None:
    for question in ("How hot should coffee water be?", "How long is green tea brewed?", "What grind for espresso?"):
        api.chat(session, question)
    newest = ok(api.client.get(f"/api/v1/messages/{session}/load", params={"limit": 2}))
    assert [m["role"] for m in newest] == ["user", "assistant"]
    assert newest[0]["content"] == "What grind for espresso?"
    older = ok(
        api.client.get(f"/api/v1/messages/{session}/load", params={"limit": 3, "before_time": newest[0]["created_at"]})
    )
    # Three asked, a whole turn more returned: a page never splits a question from its answer.
    assert [m["content"] for m in older if m["role"] == "user"] == [
        "How hot should coffee water be?",
        "How long is green tea brewed?",
    ]
    assert len(older) == 4
    for message in older:
        check_record(message, "message")
        for reference in message["knowledge_references"]:
            check_search_result(reference)
    reply = api.client.get(f"/api/v1/messages/{session}/load", params={"before_time": "yesterday"})
    assert reply.status_code == 422
    assert reply.json()["error"]["field"] == "before_time"


# Knowledge search (knowledge-search.md) -------------------------------------------------------------------
def test_knowledge_search_bodies_as_documented(api: Api, kb: str) -> None:
    single = ok(api.client.post("/api/v1/knowledge-search", json={"query": "green tea", "knowledge_base_id": kb}))
    several = ok(api.client.post("/api/v1/knowledge-search", json={"query": "green tea", "knowledge_base_ids": [kb]}))
    assert [h["id"] for h in single] == [h["id"] for h in several]
    for hit in single:
        check_search_result(hit)
    tea = next(h["knowledge_id"] for h in single if h["knowledge_title"] == "Tea basics")
    by_file = ok(api.client.post("/api/v1/knowledge-search", json={"query": "brewed", "knowledge_ids": [tea]}))
    assert {h["knowledge_id"] for h in by_file} == {tea}
    nothing = api.client.post("/api/v1/knowledge-search", json={"query": "tea"})
    assert nothing.status_code == 422
    assert nothing.json()["error"]["field"] == "knowledge_base_ids"


# Auth, tenant and request id (README.md, client/client.go) ---------------------------------------------------
def test_bearer_key_and_request_id(api: Api) -> None:
    bare = httpx.Client(base_url=api.url, timeout=CLIENT_TIMEOUT)
    try:
        reply = bare.get(
            "/api/v1/knowledge-bases", headers={"Authorization": f"Bearer {api.key}", "X-Request-ID": "req-123"}
        )
        assert reply.status_code == 200, reply.text
        assert reply.headers["X-Request-ID"] == "req-123"
        generated = bare.get("/api/v1/knowledge-bases", headers={"Authorization": f"Bearer {api.key}"})
        assert len(generated.headers["X-Request-ID"]) >= 32
        assert bare.get("/api/v1/knowledge-bases", headers={"Authorization": "Bearer rl-wrong"}).status_code == 401
        assert bare.get("/api/v1/knowledge-bases", headers={"Authorization": api.key}).status_code == 401
        unauthorized = bare.get("/api/v1/knowledge-bases")
        assert unauthorized.json()["error"]["code"] == 1001
        assert unauthorized.headers["X-Request-ID"]
    finally:
        bare.close()


def test_the_tenant_header_confirms_the_key_and_never_widens_it(api: Api, kb: str) -> None:
    own = ok(api.client.get(f"/api/v1/knowledge-bases/{kb}"))["tenant_id"]
    assert api.client.get("/api/v1/knowledge-bases", headers={"X-Tenant-ID": str(own)}).status_code == 200
    other_key = api.new_tenant("other")
    with httpx.Client(base_url=api.url, headers={"X-API-Key": other_key}, timeout=CLIENT_TIMEOUT) as other:
        # The other tenant names this tenant's number: refused, whatever the route.
        for method, url in (
            ("GET", "/api/v1/knowledge-bases"),
            ("GET", f"/api/v1/knowledge-bases/{kb}"),
            ("POST", "/api/v1/knowledge-search"),
        ):
            reply = other.request(
                method, url, headers={"X-Tenant-ID": str(own)}, json={"query": "tea", "knowledge_base_ids": [kb]}
            )
            assert reply.status_code == 403, (url, reply.text)
            assert reply.json()["error"] == {
                "code": 1002,
                "type": "forbidden",
                "message": "X-Tenant-ID does not match the API key's tenant",
                "field": "X-Tenant-ID",
            }
        # Its own number (or none) and it sees its own, empty, tenant.
        mine = other.get("/api/v1/sessions").json()
        assert mine["data"] == []
        number = ok(other.post("/api/v1/sessions", json={}), 201)["tenant_id"]
        assert number != own
        assert ok(other.get("/api/v1/knowledge-bases", headers={"X-Tenant-ID": str(number)})) == []


# Updates and deletions ---------------------------------------------------------------------------------
def _search(api: Api, kb: str, query: str) -> list[dict[str, Any]]:
    return list(ok(api.client.post("/api/v1/knowledge-search", json={"query": query, "knowledge_base_id": kb})))


def test_update_knowledge_base_as_documented(api: Api, kb: str) -> None:
    body = {
        "name": "drinks new",
        "description": "hot drinks",
        "config": {"chunking_config": {"chunk_size": 1000, "chunk_overlap": 200}, "image_processing_config": {}},
    }
    data = ok(api.client.put(f"/api/v1/knowledge-bases/{kb}", json=body))
    assert (data["id"], data["name"], data["description"]) == (kb, "drinks new", "hot drinks")
    assert data["knowledge_count"] == 2
    api.client.post("/api/v1/knowledge-bases", json={"name": "other"}).raise_for_status()
    taken = api.client.put(f"/api/v1/knowledge-bases/{kb}", json={"name": "other"})
    assert taken.status_code == 409
    assert taken.json()["error"]["field"] == "name"
    missing = api.client.put(f"/api/v1/knowledge-bases/{kb}", json={"description": "no name"})
    assert missing.status_code == 422
    assert missing.json()["error"]["field"] == "name"


def test_pin_knowledge_base_as_documented(api: Api, kb: str) -> None:
    later = ok(api.client.post("/api/v1/knowledge-bases", json={"name": "later"}), 201)
    assert [b["id"] for b in ok(api.client.get("/api/v1/knowledge-bases"))] == [kb, later["id"]]
    pinned = ok(api.client.put(f"/api/v1/knowledge-bases/{later['id']}/pin"))
    assert (pinned["id"], pinned["is_pinned"]) == (later["id"], True)
    assert pinned["pinned_at"]
    listed = ok(api.client.get("/api/v1/knowledge-bases"))
    assert [b["id"] for b in listed] == [later["id"], kb]  # pinned first
    assert [b["is_pinned"] for b in listed] == [True, False]
    assert ok(api.client.get(f"/api/v1/knowledge-bases/{later['id']}"))["is_pinned"] is True
    unpinned = ok(api.client.put(f"/api/v1/knowledge-bases/{later['id']}/pin"))  # a toggle, as WeKnora's
    assert (unpinned["is_pinned"], unpinned["pinned_at"]) == (False, None)
    assert [b["id"] for b in ok(api.client.get("/api/v1/knowledge-bases"))] == [kb, later["id"]]
    assert api.client.put("/api/v1/knowledge-bases/no-such-kb/pin").status_code == 404


def test_duplicate_knowledge_base_copies_settings_only(api: Api, kb: str) -> None:
    source = ok(api.client.put(f"/api/v1/knowledge-bases/{kb}", json={"name": "Drinks", "description": "hot drinks"}))
    reply = api.client.post(f"/api/v1/knowledge-bases/{kb}/duplicate")
    copy = ok(reply, 201)
    assert (copy["source_id"], copy["message"]) == (kb, "Knowledge base duplicate created")
    created = copy["knowledge_base"]
    check_record(created, "knowledge base")
    assert created["id"] == copy["target_id"] != kb
    assert (created["name"], created["description"]) == ("Drinks Copy", "hot drinks")
    assert created["embedding_model_id"] == source["embedding_model_id"]
    assert (created["knowledge_count"], created["is_pinned"]) == (0, False)
    again = ok(api.client.post(f"/api/v1/knowledge-bases/{kb}/duplicate"), 201)
    assert again["knowledge_base"]["name"] == "Drinks Copy 2"
    zh = ok(api.client.post(f"/api/v1/knowledge-bases/{kb}/duplicate", headers={"Accept-Language": "zh-CN"}), 201)
    assert zh["knowledge_base"]["name"] == "Drinks 副本"
    assert ok(api.client.get(f"/api/v1/knowledge-bases/{kb}"))["knowledge_count"] == 2  # the source keeps its own
    assert api.client.post("/api/v1/knowledge-bases/no-such-kb/duplicate").status_code == 404


def test_move_targets_are_the_other_bases_of_the_same_model(api: Api, kb: str) -> None:
    other = ok(api.client.post("/api/v1/knowledge-bases", json={"name": "other"}), 201)["id"]
    targets = ok(api.client.get(f"/api/v1/knowledge-bases/{kb}/move-targets"))
    assert [t["id"] for t in targets] == [other]
    check_record(targets[0], "knowledge base")
    assert [t["id"] for t in ok(api.client.get(f"/api/v1/knowledge-bases/{other}/move-targets"))] == [kb]


def test_update_knowledge_as_documented(api: Api, kb: str) -> None:
    tea = next(h["knowledge_id"] for h in _search(api, kb, "green tea") if h["knowledge_title"] == "Tea basics")
    reply = api.client.put(f"/api/v1/knowledge/{tea}", json={"title": "Oolong and green tea", "description": "Checked"})
    assert reply.status_code == 200, reply.text
    assert (reply.json()["success"], reply.json()["message"]) == (True, "Knowledge updated successfully")
    updated = reply.json()["data"]
    assert (updated["id"], updated["title"], updated["description"]) == (tea, "Oolong and green tea", "Checked")
    # Found by its new title at once (keyword search), and completed again once its vectors are recomputed.
    keyword = ok(
        api.client.post(
            f"/api/v1/knowledge-bases/{kb}/hybrid-search", json={"query_text": "oolong", "disable_vector_match": True}
        )
    )
    assert {h["knowledge_id"] for h in keyword} == {tea}
    assert keyword[0]["knowledge_title"] == "Oolong and green tea"
    wait_until(lambda: ok(api.client.get(f"/api/v1/knowledge/{tea}"))["parse_status"] == "completed", timeout=120)
    vector = ok(
        api.client.post(
            f"/api/v1/knowledge-bases/{kb}/hybrid-search",
            json={"query_text": "oolong and green tea brewing", "disable_keywords_match": True, "match_count": 1},
        )
    )
    assert vector[0]["knowledge_id"] == tea
    # Fields left out keep their value; "" clears the description.
    cleared = ok(api.client.put(f"/api/v1/knowledge/{tea}", json={"description": ""}))
    assert (cleared["title"], cleared["description"]) == ("Oolong and green tea", "")
    kept = ok(api.client.put(f"/api/v1/knowledge/{tea}", json={"custom_metadata": {"reviewed": True}}))
    assert kept["title"] == "Oolong and green tea"
    for body, field in (({"title": ""}, "title"), ({"title": "a\u202eb"}, "title"), ({"colour": "red"}, "colour")):
        bad = api.client.put(f"/api/v1/knowledge/{tea}", json=body)
        assert bad.status_code == 422, bad.text
        assert bad.json()["error"]["field"] == field
    assert api.client.put("/api/v1/knowledge/no-such-id", json={"title": "x"}).status_code == 404


def test_knowledge_tags_updated_in_a_batch(api: Api, kb: str) -> None:
    tag = ok(api.client.post(f"/api/v1/knowledge-bases/{kb}/tags", json={"name": "Hot"}))
    documents = {d["title"]: d["id"] for d in ok(api.client.get(f"/api/v1/knowledge-bases/{kb}/knowledge"))}
    coffee, tea = documents["Coffee brewing"], documents["Tea basics"]
    reply = api.client.put("/api/v1/knowledge/tags", json={"kb_id": kb, "updates": {coffee: tag["id"], tea: None}})
    assert reply.status_code == 200, reply.text
    assert reply.json() == {"success": True}
    assert ok(api.client.get(f"/api/v1/knowledge/{coffee}"))["tag_id"] == tag["id"]
    tagged = ok(api.client.get(f"/api/v1/knowledge-bases/{kb}/knowledge", params={"tag_id": tag["id"]}))
    assert [d["id"] for d in tagged] == [coffee]
    untagged = ok(api.client.get(f"/api/v1/knowledge-bases/{kb}/knowledge", params={"tag_id": "__untagged__"}))
    assert [d["id"] for d in untagged] == [tea]
    # By the tag's number too; null clears it.
    retagged = api.client.put("/api/v1/knowledge/tags", json={"updates": {tea: str(tag["seq_id"]), coffee: None}})
    assert retagged.json() == {"success": True}
    assert ok(api.client.get(f"/api/v1/knowledge/{tea}"))["tag_id"] == tag["id"]
    assert ok(api.client.get(f"/api/v1/knowledge/{coffee}"))["tag_id"] == ""
    # All or nothing: one unknown document refuses the batch.
    refused = api.client.put("/api/v1/knowledge/tags", json={"updates": {coffee: tag["id"], "no-such-id": None}})
    assert refused.status_code == 404, refused.text
    assert refused.json()["error"]["field"] == "updates"
    assert ok(api.client.get(f"/api/v1/knowledge/{coffee}"))["tag_id"] == ""
    other = ok(api.client.post("/api/v1/knowledge-bases", json={"name": "other"}), 201)["id"]
    wrong_base = api.client.put("/api/v1/knowledge/tags", json={"kb_id": other, "updates": {coffee: tag["id"]}})
    assert wrong_base.status_code == 404
    empty = api.client.put("/api/v1/knowledge/tags", json={"updates": {}})
    assert (empty.status_code, empty.json()["error"]["field"]) == (422, "updates")


def test_search_knowledge_across_knowledge_bases(api: Api, kb: str) -> None:
    other = ok(api.client.post("/api/v1/knowledge-bases", json={"name": "other"}), 201)["id"]
    files = {"file": ("tea-notes.txt", b"Oolong is partly oxidised tea.", "text/plain")}
    note = ok(api.client.post(f"/api/v1/knowledge-bases/{other}/knowledge/file", files=files))
    reply = api.client.get("/api/v1/knowledge/search", params={"keyword": "TEA"})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert (body["success"], body["has_more"]) == (True, False)
    assert [d["title"] for d in body["data"]] == ["tea-notes", "Tea basics"]  # newest first, every base
    for record in body["data"]:
        check_record(record, "knowledge")
    assert {d["knowledge_base_id"] for d in body["data"]} == {kb, other}
    by_type = api.client.get("/api/v1/knowledge/search", params={"keyword": "tea", "file_types": "txt,pdf"}).json()
    assert [d["id"] for d in by_type["data"]] == [note["id"]]
    first = api.client.get("/api/v1/knowledge/search", params={"offset": 0, "limit": 2}).json()
    assert (len(first["data"]), first["has_more"]) == (2, True)
    rest = api.client.get("/api/v1/knowledge/search", params={"offset": 2, "limit": 2}).json()
    assert (len(rest["data"]), rest["has_more"]) == (1, False)
    assert {d["id"] for d in first["data"] + rest["data"]} == {note["id"], *(d["id"] for d in body["data"])} | {
        d["id"] for d in ok(api.client.get(f"/api/v1/knowledge-bases/{kb}/knowledge"))
    }
    bad = api.client.get("/api/v1/knowledge/search", params={"limit": 0})
    assert (bad.status_code, bad.json()["error"]["field"]) == (422, "limit")


def test_delete_knowledge_removes_it_from_search(api: Api, kb: str) -> None:
    tea = next(h["knowledge_id"] for h in _search(api, kb, "green tea") if h["knowledge_title"] == "Tea basics")
    reply = api.client.delete(f"/api/v1/knowledge/{tea}")
    assert reply.status_code == 200, reply.text
    assert reply.json() == {"success": True, "message": "Deleted successfully"}
    assert tea not in {h["knowledge_id"] for h in _search(api, kb, "green tea brewed minutes")}
    assert api.client.get(f"/api/v1/knowledge/{tea}").status_code == 404
    assert api.client.get(f"/api/v1/chunks/{tea}").status_code == 404
    assert api.client.delete(f"/api/v1/knowledge/{tea}").status_code == 404
    assert ok(api.client.get(f"/api/v1/knowledge-bases/{kb}"))["knowledge_count"] == 1
    # The same content can be uploaded again (its hash went with it).
    again = api.client.post(
        f"/api/v1/knowledge-bases/{kb}/documents", json={"title": "Tea basics", "content": DRINKS["Tea basics"]}
    )
    assert again.status_code == 202, again.text  # stored anew (vectors in the background), not a duplicate


def test_batch_delete_is_all_or_nothing(api: Api, kb: str) -> None:
    ids = [d["id"] for d in ok(api.client.get(f"/api/v1/knowledge-bases/{kb}/knowledge"))]
    other_kb = api.create_kb("other", {"Juice": "Orange juice is pressed from oranges."})
    foreign = ok(api.client.get(f"/api/v1/knowledge-bases/{other_kb}/knowledge"))[0]["id"]
    refused = api.client.post("/api/v1/knowledge/batch-delete", json={"kb_id": kb, "ids": [*ids, foreign]})
    assert refused.status_code == 422
    assert refused.json()["error"]["field"] == "ids"
    assert len(ok(api.client.get(f"/api/v1/knowledge-bases/{kb}/knowledge"))) == 2
    reply = api.client.post("/api/v1/knowledge/batch-delete", json={"kb_id": kb, "ids": ids})
    assert reply.status_code == 200, reply.text
    assert reply.json()["data"]["deleted_count"] == 2
    assert reply.json()["data"]["task_id"]
    assert ok(api.client.get(f"/api/v1/knowledge-bases/{kb}/knowledge")) == []
    assert len(ok(api.client.get(f"/api/v1/knowledge-bases/{other_kb}/knowledge"))) == 1


def test_clear_then_delete_a_knowledge_base(api: Api, kb: str) -> None:
    cleared = api.client.delete(f"/api/v1/knowledge-bases/{kb}/knowledge")
    assert cleared.status_code == 200, cleared.text
    assert cleared.json()["data"] == {"deleted_count": 2}
    assert _search(api, kb, "coffee water temperature") == []
    assert api.client.delete(f"/api/v1/knowledge-bases/{kb}/knowledge").json()["message"] == (
        "Knowledge base is already empty"
    )
    deleted = api.client.delete(f"/api/v1/knowledge-bases/{kb}")
    assert deleted.json() == {"success": True, "message": "Knowledge base deleted successfully"}
    assert api.client.get(f"/api/v1/knowledge-bases/{kb}").status_code == 404
    assert ok(api.client.get("/api/v1/knowledge-bases")) == []
    assert api.client.delete(f"/api/v1/knowledge-bases/{kb}").status_code == 404


def test_delete_a_knowledge_base_with_its_documents(api: Api, kb: str) -> None:
    documents = ok(api.client.get(f"/api/v1/knowledge-bases/{kb}/knowledge"))
    assert api.client.delete(f"/api/v1/knowledge-bases/{kb}").status_code == 200
    for document in documents:
        assert api.client.get(f"/api/v1/knowledge/{document['id']}").status_code == 404
    recreated = api.create_kb("drinks", DRINKS)  # the name and the contents can come back
    assert ok(api.client.get(f"/api/v1/knowledge-bases/{recreated}"))["knowledge_count"] == 2


def test_delete_message_as_documented(api: Api, session: str) -> None:
    api.chat(session, "How hot should coffee water be?")
    user, assistant = ok(api.client.get(f"/api/v1/messages/{session}/load"))
    reply = api.client.delete(f"/api/v1/messages/{session}/{assistant['id']}")
    assert reply.json() == {"success": True, "message": "Message deleted successfully"}
    assert [m["id"] for m in ok(api.client.get(f"/api/v1/messages/{session}/load"))] == [user["id"]]
    assert api.client.delete(f"/api/v1/messages/{session}/{assistant['id']}").status_code == 404


def test_a_running_answer_is_not_deleted(api: Api, session: str, scripted: Any) -> None:
    scripted.queue(Script.answer(*[f"w{i} " for i in range(30)], delay=0.05))
    running = api.ask(session, "How hot should coffee water be?")["assistant_message_id"]
    reply = api.client.delete(f"/api/v1/messages/{session}/{running}")
    assert reply.status_code == 409, reply.text
    assert reply.json()["error"]["field"] == "message_id"
    api.client.post(f"/api/v1/sessions/{session}/stop", json={"message_id": running}).raise_for_status()
    assert api.client.delete(f"/api/v1/messages/{session}/{running}").status_code == 200


# Tags (tag.md) -------------------------------------------------------------------------------------------
def test_tags_as_documented(api: Api, kb: str) -> None:
    url = f"/api/v1/knowledge-bases/{kb}/tags"
    created = ok(api.client.post(url, json={"name": "Manuals", "color": "#faad14", "sort_order": 3}))
    check_record(created, "tag")
    assert (created["name"], created["color"], created["sort_order"]) == ("Manuals", "#faad14", 3)
    assert isinstance(created["seq_id"], int)
    assert api.client.post(url, json={"name": "Manuals"}).status_code == 409
    # A document given the tag's id carries it; by its number it is found too.
    upload = ok(
        api.client.post(
            f"/api/v1/knowledge-bases/{kb}/knowledge/manual",
            json={"title": "Kettle manual", "content": "Descale the kettle monthly.", "tag_id": str(created["seq_id"])},
        )
    )
    assert upload["tag_id"] == created["id"]
    page = ok(api.client.get(url, params={"page": 1, "page_size": 10}))
    assert (page["total"], page["page"], page["page_size"]) == (1, 1, 10)
    [listed] = page["data"]
    assert (listed["id"], listed["knowledge_count"]) == (created["id"], 1)
    assert listed["chunk_count"] >= 1
    listing = api.client.get(f"/api/v1/knowledge-bases/{kb}/knowledge", params={"tag_id": created["id"]}).json()
    assert [d["title"] for d in listing["data"]] == ["Kettle manual"]
    hits = ok(
        api.client.post(
            f"/api/v1/knowledge-bases/{kb}/hybrid-search", json={"query_text": "descale", "tag_ids": [created["id"]]}
        )
    )
    assert {h["knowledge_title"] for h in hits} == {"Kettle manual"}
    updated = ok(api.client.put(f"{url}/{created['id']}", json={"name": "Guides", "color": "#ff4d4f"}))
    assert (updated["name"], updated["color"], updated["sort_order"]) == ("Guides", "#ff4d4f", 3)
    # ragline's free tags (names) find it by its new name too.
    by_name = ok(
        api.client.post(
            "/api/v1/knowledge-search", json={"query": "descale", "knowledge_base_id": kb, "tags": ["Guides"]}
        )
    )
    assert {h["knowledge_title"] for h in by_name} == {"Kettle manual"}
    in_use = api.client.delete(f"{url}/{created['id']}")
    assert in_use.status_code == 409, in_use.text
    assert api.client.delete(f"{url}/{created['id']}", params={"force": "true"}).json() == {"success": True}
    assert ok(api.client.get(url))["total"] == 0
    assert ok(api.client.get(f"/api/v1/knowledge/{upload['id']}"))["tag_id"] == ""  # the document stays
    assert api.client.delete(f"{url}/{created['id']}").status_code == 404


def test_free_tags_are_listed_and_registered_when_updated(api: Api, kb: str) -> None:
    api.client.post(
        f"/api/v1/knowledge-bases/{kb}/documents",
        json={"title": "Leave EU", "content": "Employees in the EU get 25 days of paid leave.", "tags": ["eu"]},
    ).raise_for_status()
    url = f"/api/v1/knowledge-bases/{kb}/tags"
    [implicit] = ok(api.client.get(url))["data"]
    assert (implicit["id"], implicit["name"], implicit["knowledge_count"]) == ("eu", "eu", 1)
    assert implicit["created_at"]  # a valid time for WeKnora's Go client (time.Time)
    registered = ok(api.client.put(f"{url}/eu", json={"name": "Europe", "color": "#52c41a"}))
    # Registered under an id the server made (a client's string could be another tenant's tag id), which the
    # document carries from then on.
    assert (registered["name"], registered["knowledge_count"]) == ("Europe", 1)
    assert registered["id"] != "eu"
    assert [t["id"] for t in ok(api.client.get(url))["data"]] == [registered["id"]]
    hits = ok(
        api.client.post(
            "/api/v1/knowledge-search",
            json={"query": "paid leave", "knowledge_base_id": kb, "tag_ids": [registered["id"]]},
        )
    )
    assert {h["knowledge_title"] for h in hits} == {"Leave EU"}
    keyword = ok(api.client.get(url, params={"keyword": "euro"}))
    assert [t["name"] for t in keyword["data"]] == ["Europe"]


def _coffee_chunks(api: Api, kb: str) -> tuple[str, list[dict[str, Any]]]:
    document = ok(api.client.get(f"/api/v1/knowledge-bases/{kb}/knowledge", params={"keyword": "coffee"}))[0]
    return document["id"], api.client.get(f"/api/v1/chunks/{document['id']}", params={"page_size": 100}).json()["data"]


def test_update_chunk_as_documented(api: Api, kb: str) -> None:
    knowledge_id, chunks = _coffee_chunks(api, kb)
    target = next(c for c in chunks if "90 and 96" in c["content"])
    url = f"/api/v1/chunks/{knowledge_id}/{target['id']}"
    # What WeKnora's Go client sends (UpdateChunkRequest: every field, an embedding included).
    body = {
        "content": "Brew coffee with water at exactly 93 degrees Celsius (kettle tip).",
        "embedding": [0.1, 0.2],
        "chunk_index": target["chunk_index"],
        "is_enabled": True,
        "start_at": 0,
        "end_at": 10,
        "image_info": "",
    }
    data = ok(api.client.put(url, json=body))
    assert (data["id"], data["content"], data["is_enabled"]) == (target["id"], body["content"], True)
    hits = _search(api, kb, "kettle tip 93 degrees")
    assert hits[0]["id"] == target["id"]
    assert "93 degrees" in hits[0]["content"]
    # Disabled (only the flag: an empty content leaves the text), it is no longer found.
    disabled = ok(api.client.put(url, json={"content": "", "is_enabled": False}))
    assert (disabled["content"], disabled["is_enabled"]) == (body["content"], False)
    assert target["id"] not in {h["id"] for h in _search(api, kb, "kettle tip 93 degrees")}
    ok(api.client.put(url, json={"is_enabled": True}))
    assert target["id"] in {h["id"] for h in _search(api, kb, "kettle tip 93 degrees")}
    other = ok(api.client.get(f"/api/v1/knowledge-bases/{kb}/knowledge", params={"keyword": "tea"}))[0]["id"]
    assert api.client.put(f"/api/v1/chunks/{other}/{target['id']}", json={"is_enabled": False}).status_code == 404


def test_delete_chunks_as_documented(api: Api, kb: str) -> None:
    knowledge_id, chunks = _coffee_chunks(api, kb)
    target = next(c for c in chunks if "fine grind" in c["content"])
    reply = api.client.delete(f"/api/v1/chunks/{knowledge_id}/{target['id']}")
    assert reply.json() == {"success": True, "message": "Chunk deleted"}
    assert target["id"] not in {h["id"] for h in _search(api, kb, "espresso fine grind")}
    assert api.client.get(f"/api/v1/chunks/by-id/{target['id']}").status_code == 404
    everything = api.client.delete(f"/api/v1/chunks/{knowledge_id}")
    assert everything.json() == {"success": True, "message": "All chunks under knowledge deleted"}
    assert api.client.get(f"/api/v1/chunks/{knowledge_id}").json()["total"] == 0
    assert all(h["knowledge_id"] != knowledge_id for h in _search(api, kb, "coffee water boiling"))
    assert ok(api.client.get(f"/api/v1/knowledge/{knowledge_id}"))["id"] == knowledge_id  # the document stays


# Originals: download, preview, parse again (knowledge.md) ----------------------------------------------------
HANDBOOK = (
    "# Field handbook\n\n## Radios\n\nCharge the radios every night; a full charge lasts eleven hours.\n\n"
    "## Tents\n\nDry the tents before packing them, or the canvas rots within a week."
)


def _upload(api: Api, kb: str, name: str, data: bytes, media_type: str = "text/markdown") -> dict[str, Any]:
    document = ok(
        api.client.post(f"/api/v1/knowledge-bases/{kb}/knowledge/file", files={"file": (name, data, media_type)})
    )
    wait_until(
        lambda: ok(api.client.get(f"/api/v1/knowledge/{document['id']}"))["parse_status"] == "completed", timeout=120
    )
    # The record once parsed: on AWS the file is read after the reply, and its title comes from its heading then.
    return dict(ok(api.client.get(f"/api/v1/knowledge/{document['id']}")))


def test_download_and_preview_hand_back_the_file_as_received(api: Api, kb: str) -> None:
    data = HANDBOOK.encode("utf-8")
    document = _upload(api, kb, "野外手册.md", data)
    download = api.client.get(f"/api/v1/knowledge/{document['id']}/download")
    assert download.status_code == 200, download.text
    assert download.content == data
    assert download.headers["content-type"] == "application/octet-stream"
    disposition = download.headers["content-disposition"]
    assert disposition.startswith("attachment;")
    assert "filename*=UTF-8''%E9%87%8E%E5%A4%96%E6%89%8B%E5%86%8C.md" in disposition  # the exact name, for any client
    preview = api.client.get(f"/api/v1/knowledge/{document['id']}/preview")
    assert preview.status_code == 200, preview.text
    assert preview.content == data
    assert preview.headers["content-type"] == "text/markdown; charset=utf-8"
    assert preview.headers["content-disposition"].startswith("inline;")
    assert preview.headers["cache-control"] == "private, max-age=3600"
    # Written by hand: handed back as the Markdown it was, under its title.
    manual = ok(
        api.client.post(
            f"/api/v1/knowledge-bases/{kb}/knowledge/manual", json={"title": "Kettle", "content": "Descale monthly."}
        )
    )
    text = api.client.get(f"/api/v1/knowledge/{manual['id']}/download")
    assert (text.content, 'filename="Kettle.md"' in text.headers["content-disposition"]) == (b"Descale monthly.", True)
    # Deleted with its document.
    assert api.client.delete(f"/api/v1/knowledge/{document['id']}").status_code == 200
    gone = api.client.get(f"/api/v1/knowledge/{document['id']}/download")
    assert (gone.status_code, gone.json()["error"]["type"]) == (404, "not_found")
    faq = ok(api.client.post(f"/api/v1/knowledge-bases/{kb}/faq", json={"entries": [PASSWORD]}), 201)
    none_kept = api.client.get(f"/api/v1/knowledge/{faq['id']}/download")
    assert (none_kept.status_code, none_kept.json()["error"]["type"]) == (404, "no_original")


def test_reparse_rebuilds_the_chunks_from_the_original(api: Api, kb: str) -> None:
    document = _upload(api, kb, "handbook.md", HANDBOOK.encode("utf-8"))
    url = f"/api/v1/chunks/{document['id']}"
    chunks = api.client.get(url, params={"page_size": 100}).json()["data"]
    tents = next(c for c in chunks if "canvas" in c["content"])
    assert api.client.delete(f"{url}/{tents['id']}").status_code == 200
    assert not any("canvas" in h["content"] for h in _search(api, kb, "canvas rots"))
    reply = api.client.post(f"/api/v1/knowledge/{document['id']}/reparse")
    assert reply.status_code == 200, reply.text
    assert (reply.json()["success"], reply.json()["message"]) == (True, "Knowledge reparse task submitted")
    reparsed = reply.json()["data"]
    assert (reparsed["id"], reparsed["created_at"], reparsed["title"]) == (
        document["id"],
        document["created_at"],
        document["title"],
    )
    assert reparsed["parse_status"] in ("processing", "completed")
    # Found again by keyword at once, by meaning once its vectors are in.
    keyword = ok(
        api.client.post(
            f"/api/v1/knowledge-bases/{kb}/hybrid-search",
            json={"query_text": "canvas rots", "disable_vector_match": True},
        )
    )
    assert any("canvas" in h["content"] for h in keyword)
    wait_until(
        lambda: ok(api.client.get(f"/api/v1/knowledge/{document['id']}"))["parse_status"] == "completed", timeout=120
    )
    after = api.client.get(url, params={"page_size": 100}).json()["data"]
    assert len(after) == len(chunks)
    assert not {c["id"] for c in after} & {c["id"] for c in chunks}  # new chunks, none of the old left
    vector = ok(
        api.client.post(
            f"/api/v1/knowledge-bases/{kb}/hybrid-search",
            json={"query_text": "how to store tents so the fabric does not rot", "disable_keywords_match": True},
        )
    )
    assert vector[0]["knowledge_id"] == document["id"]
    assert "canvas" in vector[0]["content"]
    faq = ok(api.client.post(f"/api/v1/knowledge-bases/{kb}/faq", json={"entries": [SUPPORT]}), 201)
    refused = api.client.post(f"/api/v1/knowledge/{faq['id']}/reparse")
    assert (refused.status_code, refused.json()["error"]["field"]) == (409, "id")
    assert api.client.post("/api/v1/knowledge/no-such-id/reparse").status_code == 404


def test_batch_reparse_is_all_or_nothing(api: Api, kb: str) -> None:
    first = _upload(api, kb, "radios.md", b"# Radios\n\nCharge the radios every night.")
    second = _upload(api, kb, "tents.md", b"# Tents\n\nDry the tents before packing them.")
    url = "/api/v1/knowledge/batch-reparse"
    before = ok(api.client.get(f"/api/v1/knowledge/{first['id']}"))["updated_at"]
    refused = api.client.post(url, json={"kb_id": kb, "ids": [first["id"], "no-such-id"]})
    assert (refused.status_code, refused.json()["error"]["field"]) == (422, "ids")
    assert ok(api.client.get(f"/api/v1/knowledge/{first['id']}"))["updated_at"] == before  # none was touched
    reply = api.client.post(url, json={"kb_id": kb, "ids": [first["id"], second["id"]], "process_config": {}})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert (body["message"], body["data"]["reparse_count"]) == ("Batch reparse task submitted", 2)
    assert body["data"]["task_id"]
    for document in (first, second):
        wait_until(
            lambda d=document: ok(api.client.get(f"/api/v1/knowledge/{d['id']}"))["parse_status"] == "completed",
            timeout=120,
        )


def test_manual_knowledge_updated_as_documented(api: Api, kb: str) -> None:
    created = ok(
        api.client.post(
            f"/api/v1/knowledge-bases/{kb}/knowledge/manual",
            json={"title": "Product guide", "content": "# Product guide\n\nPress the red button to brew."},
        )
    )
    # Edited once indexed (while its vectors are computed, a new text is refused: 409 still_indexing).
    wait_until(
        lambda: ok(api.client.get(f"/api/v1/knowledge/{created['id']}"))["parse_status"] == "completed", timeout=120
    )
    body = {"title": "Product guide V2", "content": "# Product guide V2\n\nTurn the blue dial to brew."}
    reply = api.client.put(f"/api/v1/knowledge/manual/{created['id']}", json=body)
    assert reply.status_code == 200, reply.text
    updated = reply.json()["data"]
    assert (updated["id"], updated["type"], updated["title"]) == (created["id"], "manual", "Product guide V2")
    assert updated["parse_status"] in ("processing", "completed")
    hits = ok(
        api.client.post("/api/v1/knowledge-search", json={"query": "blue dial", "knowledge_ids": [created["id"]]})
    )
    assert any("blue dial" in h["content"] for h in hits)
    old = ok(
        api.client.post(
            f"/api/v1/knowledge-bases/{kb}/hybrid-search",
            json={"query_text": "red button", "disable_vector_match": True},
        )
    )
    assert created["id"] not in {h["knowledge_id"] for h in old}
    assert api.client.get(f"/api/v1/knowledge/{created['id']}/download").content == body["content"].encode()
    renamed = ok(api.client.put(f"/api/v1/knowledge/manual/{created['id']}", json={"title": "Brewer guide"}))
    assert renamed["title"] == "Brewer guide"
    coffee = next(
        d for d in ok(api.client.get(f"/api/v1/knowledge-bases/{kb}/knowledge")) if d["title"] == "Coffee brewing"
    )
    assert coffee["type"] == "manual"  # written by ragline's JSON route: by hand too
    files = {"file": ("notes.txt", b"Filed notes.", "text/plain")}
    uploaded = ok(api.client.post(f"/api/v1/knowledge-bases/{kb}/knowledge/file", files=files))
    not_manual = api.client.put(f"/api/v1/knowledge/manual/{uploaded['id']}", json={"content": "x"})
    assert (not_manual.status_code, not_manual.json()["error"]["type"]) == (409, "not_manual")
    empty = api.client.put(f"/api/v1/knowledge/manual/{created['id']}", json={"content": ""})
    assert (empty.status_code, empty.json()["error"]["field"]) == (422, "content")


# FAQ (faq.md) ----------------------------------------------------------------------------------------------
PASSWORD = {
    "standard_question": "How do I reset my password?",
    "similar_questions": ["I forgot my password", "password recovery"],
    "negative_questions": ["How do I change my username?"],
    "answers": ["Click 'Forgot password' on the login page."],
}
SUPPORT = {
    "standard_question": "How do I contact support?",
    "similar_questions": ["support phone number", "online support"],
    "answers": ["Call 400-000-0000."],
}
REFUND = {"standard_question": "What is the refund policy?", "answers": ["Seven days, no questions asked."]}


def _faq(api: Api, kb: str) -> str:
    return f"/api/v1/knowledge-bases/{kb}/faq"


def _entries(api: Api, kb: str, **params: Any) -> dict[str, Any]:
    return dict(ok(api.client.get(f"{_faq(api, kb)}/entries", params=params)))


def test_faq_entry_created_listed_updated_and_deleted(api: Api, kb: str) -> None:
    url = _faq(api, kb)
    tag = ok(api.client.post(f"/api/v1/knowledge-bases/{kb}/tags", json={"name": "Account"}))
    created = ok(api.client.post(f"{url}/entry", json={**PASSWORD, "tag_id": tag["seq_id"], "is_enabled": True}))
    assert isinstance(created["id"], int)
    assert (created["standard_question"], created["tag_id"], created["tag_name"]) == (
        PASSWORD["standard_question"],
        tag["seq_id"],
        "Account",
    )
    assert (created["is_enabled"], created["is_recommended"], created["chunk_type"]) == (True, False, "faq")
    assert created["negative_questions"] == PASSWORD["negative_questions"]
    duplicate = api.client.post(f"{url}/entry", json={**SUPPORT, "similar_questions": ["I forgot my password"]})
    assert duplicate.status_code == 409, duplicate.text
    assert ok(api.client.get(f"{url}/entries/{created['id']}"))["chunk_id"] == created["chunk_id"]
    assert api.client.get(f"{url}/entries/12345").status_code == 404
    # Found in chat's search by a paraphrase of its questions.
    hits = _search(api, kb, "forgot my password")
    assert hits[0]["id"] == created["chunk_id"]
    updated = ok(
        api.client.put(
            f"{url}/entries/{created['id']}",
            json={**PASSWORD, "answers": ["Use the 'Forgot password' link."], "is_recommended": True},
        )
    )
    assert (updated["id"], updated["answers"], updated["is_recommended"]) == (
        created["id"],
        ["Use the 'Forgot password' link."],
        True,
    )
    assert updated["tag_id"] == tag["seq_id"]  # a tag not named stays
    grown = ok(
        api.client.post(
            f"{url}/entries/{created['id']}/similar-questions",
            json={"similar_questions": ["lost my password", "password recovery"]},
        )
    )
    assert grown["similar_questions"] == ["I forgot my password", "password recovery", "lost my password"]
    assert _search(api, kb, "lost my password")[0]["id"] == created["chunk_id"]
    ok(api.client.post(f"{url}/entry", json=SUPPORT))
    page = _entries(api, kb, page=1, page_size=1)
    assert (page["total"], page["page_size"], len(page["data"])) == (2, 1, 1)
    assert _entries(api, kb, tag_id=tag["seq_id"])["total"] == 1
    assert _entries(api, kb, keyword="phone", search_field="similar_questions")["total"] == 1
    assert _entries(api, kb, keyword="phone", search_field="answers")["total"] == 0
    deleted = api.client.request("DELETE", f"{url}/entries", json={"ids": [created["id"]]})
    assert deleted.json() == {"success": True}
    assert _entries(api, kb)["total"] == 1
    assert created["chunk_id"] not in {h["id"] for h in _search(api, kb, "forgot my password")}
    unknown = api.client.request("DELETE", f"{url}/entries", json={"ids": [1]})
    assert unknown.status_code == 404


def test_faq_batch_fields_and_tags(api: Api, kb: str) -> None:
    url = _faq(api, kb)
    first = ok(api.client.post(f"{url}/entry", json=PASSWORD))
    second = ok(api.client.post(f"{url}/entry", json=SUPPORT))
    tag = ok(api.client.post(f"/api/v1/knowledge-bases/{kb}/tags", json={"name": "Help"}))
    assert api.client.put(
        f"{url}/entries/tags", json={"updates": {str(first["id"]): tag["seq_id"], str(second["id"]): tag["seq_id"]}}
    ).json() == {"success": True}
    assert _entries(api, kb, tag_id=tag["seq_id"])["total"] == 2
    body = {
        "by_id": {str(first["id"]): {"is_recommended": True}},
        "by_tag": {str(tag["seq_id"]): {"is_enabled": False}},
        "exclude_ids": [first["id"]],
    }
    assert api.client.put(f"{url}/entries/fields", json=body).json() == {"success": True}
    by_id = {e["id"]: e for e in _entries(api, kb)["data"]}
    assert (by_id[first["id"]]["is_recommended"], by_id[first["id"]]["is_enabled"]) == (True, True)
    assert by_id[second["id"]]["is_enabled"] is False
    assert second["chunk_id"] not in {h["id"] for h in _search(api, kb, "support phone number")}
    api.client.put(f"{url}/entries/tags", json={"updates": {str(first["id"]): None}}).raise_for_status()
    assert _entries(api, kb, tag_id=tag["seq_id"])["total"] == 1
    assert api.client.put(f"{url}/entries/fields", json={}).status_code == 422


def test_faq_batch_upsert_and_its_progress(api: Api, kb: str) -> None:
    url = _faq(api, kb)
    dry = ok(
        api.client.post(f"{url}/entries", json={"mode": "append", "entries": [PASSWORD, SUPPORT], "dry_run": True})
    )
    progress = ok(api.client.get(f"/api/v1/faq/import/progress/{dry['task_id']}"))
    assert (progress["status"], progress["dry_run"], progress["success_count"]) == ("completed", True, 2)
    assert _entries(api, kb)["total"] == 0
    run = ok(api.client.post(f"{url}/entries", json={"mode": "append", "entries": [PASSWORD, SUPPORT, PASSWORD]}))
    progress = ok(api.client.get(f"/api/v1/faq/import/progress/{run['task_id']}"))
    assert (progress["success_count"], progress["skipped_count"], progress["total"]) == (2, 1, 3)
    assert _entries(api, kb)["total"] == 2
    again = ok(api.client.post(f"{url}/entries", json={"mode": "append", "entries": [SUPPORT, REFUND]}))
    assert ok(api.client.get(f"/api/v1/faq/import/progress/{again['task_id']}"))["skipped_count"] == 1
    assert _entries(api, kb)["total"] == 3
    replace = ok(api.client.post(f"{url}/entries", json={"mode": "replace", "entries": [REFUND]}))
    assert ok(api.client.get(f"/api/v1/faq/import/progress/{replace['task_id']}"))["success_count"] == 1
    assert [e["standard_question"] for e in _entries(api, kb)["data"]] == [REFUND["standard_question"]]
    assert api.client.get("/api/v1/faq/import/progress/not-a-task").status_code == 404
    bad = api.client.post(f"{url}/entries", json={"mode": "append", "entries": [{"standard_question": "x"}]})
    assert bad.status_code == 422
    assert bad.json()["error"]["field"] == "entries.0.answers"
    assert api.client.put(f"{url}/import/last-result/display", json={"display_status": "close"}).json() == {
        "success": True
    }


def test_faq_search_with_priority_tags(api: Api, kb: str) -> None:
    url = _faq(api, kb)
    account = ok(api.client.post(f"/api/v1/knowledge-bases/{kb}/tags", json={"name": "Account"}))
    billing = ok(api.client.post(f"/api/v1/knowledge-bases/{kb}/tags", json={"name": "Billing"}))
    password = ok(api.client.post(f"{url}/entry", json={**PASSWORD, "tag_id": account["seq_id"]}))
    refund = ok(api.client.post(f"{url}/entry", json={**REFUND, "tag_id": billing["seq_id"], "is_recommended": True}))
    hits = ok(api.client.post(f"{url}/search", json={"query_text": "I forgot my password", "match_count": 10}))
    assert hits[0]["id"] == password["id"]
    assert hits[0]["matched_question"] == "I forgot my password"
    assert hits[0]["score"] > 0
    assert hits[0]["match_type"] in ("vector", "keyword")
    billing_only = ok(
        api.client.post(
            f"{url}/search",
            json={"query_text": "password refund policy", "first_priority_tag_ids": [billing["seq_id"]]},
        )
    )
    assert [h["id"] for h in billing_only] == [refund["id"]]
    ordered = ok(
        api.client.post(
            f"{url}/search",
            json={
                "query_text": "password refund policy",
                "first_priority_tag_ids": [billing["seq_id"]],
                "second_priority_tag_ids": [account["seq_id"]],
            },
        )
    )
    assert [h["id"] for h in ordered] == [refund["id"], password["id"]]
    recommended = ok(
        api.client.post(f"{url}/search", json={"query_text": "password refund policy", "only_recommended": True})
    )
    assert [h["id"] for h in recommended] == [refund["id"]]


def test_faq_export_reads_back_into_an_import(api: Api, kb: str) -> None:
    url = _faq(api, kb)
    ok(api.client.post(f"{url}/entry", json=PASSWORD))
    ok(api.client.post(f"{url}/entry", json=SUPPORT))
    export = api.client.get(f"{url}/entries/export")
    assert export.status_code == 200
    assert export.headers["content-type"].startswith("text/csv")
    assert 'filename="faq_export.csv"' in export.headers["content-disposition"]
    assert export.content.startswith("\ufeff".encode())
    other = api.create_kb("copy")
    imported = api.client.post(
        f"/api/v1/knowledge-bases/{other}/faq", files={"file": ("faq.csv", export.content, "text/csv")}
    )
    assert imported.status_code == 201, imported.text
    copied = {e["standard_question"]: e for e in _entries(api, other)["data"]}
    assert copied[PASSWORD["standard_question"]]["similar_questions"] == PASSWORD["similar_questions"]
    assert copied[SUPPORT["standard_question"]]["answers"] == SUPPORT["answers"]
