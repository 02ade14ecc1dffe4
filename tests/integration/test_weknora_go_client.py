"""WeKnora's Go client against ragline, embedded and deployed: the walkthrough its package documents
(``client/example.go``: knowledge base, file, session, streamed questions, messages, chunks, clean-up) and
the calls around it a WeKnora integration makes (search, titles, resume, stop), each request as the Go client
sends it and each reply decoded as it decodes them (``tests/support/weknora_go.py``).

The Go module is not on the Go module proxy, so the replay stands in for a Go program built against it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import Ragline
from tests.support.polling import CLIENT_TIMEOUT, wait_until
from tests.support.scripted_model import Script
from tests.support.sse import joined_runs
from tests.support.weknora_go import STREAM_RESPONSE, APIError, GoClient, decode, go_client

COFFEE = (
    b"# Brewing coffee\n\nPour-over coffee is brewed with water between 90 and 96 degrees Celsius. "
    b"Boiling water scalds the grounds and makes the cup bitter.\n\nGrind the beans medium-fine.\n"
)
QUESTION = "How hot should the water be for pour-over coffee?"


def walkthrough(go: GoClient, scripted: Any, *, wait_s: float, reader: GoClient | None = None) -> None:
    """``example.go``'s steps with real data, then the rest of a client's day; ``go`` has its key set.

    ``reader``: on AWS, a second client on stream_reader's URL, where answers stream live (API Gateway
    buffers a reply, so a chat through it arrives whole, once the answer is done)."""
    # 1. A knowledge base: the whole KnowledgeBase struct, ids of models this deployment does not have.
    kb = go.create_knowledge_base(
        {
            "name": "Test Knowledge Base",
            "description": "This is a test knowledge base",
            "chunking_config": {
                "chunk_size": 500,
                "chunk_overlap": 50,
                "separators": ["\n\n", "\n", ". ", "? ", "! "],
            },
            "image_processing_config": {"model_id": "image_model_id"},
            "embedding_model_id": "embedding_model_id",
            "summary_model_id": "summary_model_id",
        }
    )
    assert kb["id"]
    assert kb["name"] == "Test Knowledge Base"
    assert kb["tenant_id"] > 0
    # From here on every request also says its tenant (WithTenantID), as the example does.
    go.tenant_id = kb["tenant_id"]
    assert [k["id"] for k in go.list_knowledge_bases()] == [kb["id"]]

    # 2. A file, with the example's metadata; parsed in the background, then completed.
    created = go.create_knowledge_from_file(kb["id"], "coffee.md", COFFEE, {"source": "local", "type": "document"})
    assert created["id"]
    assert created["knowledge_base_id"] == kb["id"]
    assert created["file_name"] == "coffee.md"
    done = wait_until(
        lambda: (k := go.get_knowledge(created["id"]))["parse_status"] in ("completed", "failed") and k,
        timeout=wait_s,
    )
    assert done["parse_status"] == "completed", done
    assert done["file_size"] == len(COFFEE)
    listed, total = go.list_knowledge(kb["id"], 1, 10)
    assert (total, [k["id"] for k in listed]) == (1, [created["id"]])
    assert [k["id"] for k in go.get_knowledge_batch([created["id"]])] == [created["id"]]

    # 4. A session with a title and a description.
    session = go.create_session("Test Session", "A test session for knowledge Q&A")
    assert (session["title"], session["description"]) == ("Test Session", "A test session for knowledge Q&A")
    assert session["tenant_id"] == kb["tenant_id"]
    assert go.get_session(session["id"])["id"] == session["id"]

    # 5. A streamed question over the knowledge base: the answer, its references, the end.
    scripted.queue(Script.answer("Between 90 and 96 ", "degrees Celsius."))
    frames: list[dict[str, Any]] = []
    go.knowledge_qa_stream(session["id"], QUESTION, lambda f: frames.append(f) and False, knowledge_base_ids=[kb["id"]])
    kinds = [f["response_type"] for f in frames]
    assert (kinds[0], kinds[-1]) == ("agent_query", "complete"), kinds
    answer = "".join(f["content"] for f in frames if f["response_type"] == "answer")
    assert "90 and 96" in answer
    references = [r for f in frames for r in f["knowledge_references"] or []]
    assert references
    assert {r["knowledge_id"] for r in references} == {created["id"]}
    assert all(isinstance(r["match_type"], int) for r in references)
    assert frames[0]["assistant_message_id"]
    assert frames[0]["session_id"] == session["id"]

    # 7. The session's messages, and nothing before the oldest.
    messages = go.get_recent_messages(session["id"], 10)
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert (messages[0]["content"], messages[1]["content"]) == (QUESTION, answer)
    assert messages[1]["is_completed"] is True
    assert {r["knowledge_id"] for r in messages[1]["knowledge_references"]} == {created["id"]}
    assert go.load_messages(session["id"], 10, before_time=messages[0]["created_at"]) == []

    # 8. The document's chunks, one of them edited.
    chunks, chunk_total = go.list_knowledge_chunks(created["id"], 1, 10)
    assert chunk_total >= 1
    assert chunks[0]["knowledge_id"] == created["id"]
    edited = go.update_chunk(created["id"], chunks[0]["id"], "Updated chunk content - " + chunks[0]["content"], True)
    assert edited["id"] == chunks[0]["id"]
    assert edited["content"].startswith("Updated chunk content - ")
    assert go.get_chunk_by_id_only(chunks[0]["id"])["content"] == edited["content"]

    # Search: the knowledge base's hybrid search and the cross-base knowledge search.
    hits = go.hybrid_search(kb["id"], "water temperature for coffee")
    assert hits
    assert hits[0]["knowledge_id"] == created["id"]
    found = go.search_knowledge("water temperature for coffee", [kb["id"]])
    assert found
    assert found[0]["knowledge_id"] == created["id"]

    # Sessions: renamed, titled from its messages, listed.
    renamed = go.update_session(session["id"], "Coffee", "About brewing")
    assert (renamed["title"], renamed["description"]) == ("Coffee", "About brewing")
    assert go.generate_title(session["id"], messages) == "Scripted title"
    page, count = go.get_sessions_by_tenant(1, 10)
    assert (count, [s["id"] for s in page]) == (1, [session["id"]])

    if reader is not None:
        # On AWS: the finished answer read again from stream_reader's URL (the answer's chunks already in the log
        # joined, where the chat may have had them one by one); stopping a finished answer changes nothing.
        again: list[dict[str, Any]] = []
        reader.continue_stream(session["id"], frames[0]["assistant_message_id"], lambda f: again.append(f) and False)
        assert _runs(again) == _runs(frames)
        go.stop_session(session["id"], frames[0]["assistant_message_id"])
    else:
        _drop_resume_and_stop(go, scripted, session["id"], kb["id"])

    # 10. Clean-up: the session, the document, the knowledge base.
    go.delete_session(session["id"])
    with pytest.raises(APIError) as gone:
        go.get_session(session["id"])
    assert gone.value.status == 404
    go.delete_knowledge(created["id"])
    with pytest.raises(APIError):
        go.get_knowledge(created["id"])
    go.delete_knowledge_base(kb["id"])
    assert go.list_knowledge_bases() == []


def _drop_resume_and_stop(go: GoClient, scripted: Any, session_id: str, kb_id: str) -> None:
    """A long answer: the client drops after two frames, finds it unfinished, resumes it with ContinueStream
    (frames counted only when written ``event:message``) and stops it."""
    scripted.queue(Script.answer(*[f"part{i} " for i in range(300)], delay=0.05))
    first: list[dict[str, Any]] = []
    go.knowledge_qa_stream(
        session_id,
        "And the grind?",
        lambda f: first.append(f) or len(first) >= 2,
        knowledge_base_ids=[kb_id],
        request_id=str(uuid.uuid4()),
    )
    running = first[0]["assistant_message_id"]
    pending = go.get_recent_messages(session_id, 10)[-1]
    assert (pending["id"], pending["is_completed"]) == (running, False)
    resumed: list[dict[str, Any]] = []
    go.continue_stream(session_id, running, lambda f: resumed.append(f) or len(resumed) >= 3)
    assert [f["response_type"] for f in resumed][:1] == ["agent_query"]
    go.stop_session(session_id, running)
    rest: list[dict[str, Any]] = []
    go.continue_stream(session_id, running, lambda f: rest.append(f) and False)
    assert rest[-1]["response_type"] == "stop", [f["response_type"] for f in rest]
    assert go.get_recent_messages(session_id, 10)[-1]["is_completed"] is True


@pytest.fixture
def embedded_go(ragline: Ragline) -> Iterator[GoClient]:
    with go_client(ragline.url, api_key=ragline.key) as go:
        yield go


def test_the_go_clients_walkthrough_embedded(embedded_go: GoClient, scripted: Any, fresh_scripts: None) -> None:
    walkthrough(embedded_go, scripted, wait_s=60)
    # Every request carried the key and, after the first, the tenant number.
    assert all(r.headers["X-API-Key"] for r in embedded_go.sent)
    assert all("X-Tenant-ID" in r.headers for r in embedded_go.sent[1:])


def test_the_go_client_with_a_bearer_token(ragline: Ragline) -> None:
    """``WithBearerToken`` with the API key, as WeKnora's web page sends it."""
    with go_client(ragline.url, bearer_token=ragline.key) as go:
        session = go.create_session("Bearer", "")
        assert go.get_session(session["id"])["title"] == "Bearer"
        go.batch_delete_sessions([session["id"]])
        assert go.get_sessions_by_tenant(1, 10) == ([], 0)


def test_the_go_client_naming_another_tenant_is_refused(ragline: Ragline) -> None:
    with go_client(ragline.url, api_key=ragline.key) as go:
        own = go.create_session("Mine", "")["tenant_id"]
        go.tenant_id = own + 1
        with pytest.raises(APIError) as refused:
            go.get_sessions_by_tenant(1, 10)
        assert refused.value.status == 403


def test_the_go_clients_walkthrough_deployed(aws: Any, aws_search: Any, scripted: Any) -> None:
    """The same walkthrough against the AWS stack as deployed: API Gateway → ingest_turn for every call (the
    Go client's base URL), stream_reader's function URL for reading an answer again."""
    with (
        go_client(aws.stack.api_url, api_key=aws.key) as go,
        go_client(aws.stack.stream_url, api_key=aws.key) as reader,
    ):
        walkthrough(go, scripted, wait_s=180, reader=reader)


# WeKnora's web page (frontend/src/api/chat/*.ts, read, not copied): its chat body and headers -------------
def test_the_web_pages_agent_chat_body_and_headers(ragline: Ragline, scripted: Any) -> None:
    """The body the page's stream sends (every optional field it may add), with its headers: a Bearer key,
    the tenant's number, a request id and the page's language. ``tag_ids`` narrows the search; the agent's
    and attachments' fields are accepted and not acted on."""
    kb = ragline.create_kb("drinks", {})
    with go_client(ragline.url, api_key=ragline.key) as go:
        tag = go._do("POST", f"/api/v1/knowledge-bases/{kb}/tags", {"name": "Coffee"}).json()["data"]
        go.create_manual_knowledge(kb, "Coffee", COFFEE.decode())
        tagged = go._do(
            "POST",
            f"/api/v1/knowledge-bases/{kb}/knowledge/manual",
            {"title": "Tagged coffee", "content": "Pour-over coffee wants water at 93 degrees.", "tag_id": tag["id"]},
        ).json()["data"]
        tenant = go.get_knowledge(tagged["id"])["tenant_id"]
    session = ragline.session([])
    request_id = str(uuid.uuid4())
    headers = {
        "Authorization": f"Bearer {ragline.key}",
        "Accept-Language": "zh-CN",
        "X-Request-ID": request_id,
        "X-Tenant-ID": str(tenant),
    }
    body = {
        "query": QUESTION,
        "agent_enabled": True,
        "knowledge_base_ids": [kb],
        "agent_id": "builtin-smart-reasoning",
        "agent_source_tenant_id": tenant,
        "web_search_enabled": False,
        "summary_model_id": "model-of-another-deployment",
        "mcp_service_ids": ["mcp-1"],
        "skill_names": ["calculator"],
        "tag_ids": [tag["id"]],
        "mentioned_items": [{"id": kb, "name": "drinks", "type": "kb", "kb_type": "document"}],
        "attachment_ids": ["attachment-1"],
        "suggestion_attribution": {"suggestion_set_id": "s1", "question_id": "q1"},
        "channel": "web",
    }
    with (
        httpx.Client(base_url=ragline.url, timeout=CLIENT_TIMEOUT) as page,
        page.stream("POST", f"/api/v1/agent-chat/{session}", json=body, headers=headers) as reply,
    ):
        assert reply.status_code == 200, reply.read()
        assert reply.headers["X-Request-ID"] == request_id
        frames = [decode(f, STREAM_RESPONSE, "frame") for f in _page_frames(reply.iter_lines())]
    assert frames[0]["response_type"] == "agent_query"
    assert frames[0]["data"]["agent_mode"] == "off"
    assert frames[-1]["response_type"] == "complete"
    references = [r for f in frames for r in f["knowledge_references"] or []]
    # Only the tagged document answers: tag_ids narrowed the search.
    assert references
    assert {r["knowledge_id"] for r in references} == {tagged["id"]}


def _page_frames(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """What ``@microsoft/fetch-event-source`` hands the page's ``onmessage``: each event's ``data``, parsed."""
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                yield json.loads("\n".join(data))
            data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))


def test_knowledge_from_url_refuses_private_addresses_when_deployed(aws: Any) -> None:
    """ingest_turn fetches URLs under the same SSRF policy: the instance metadata address is refused."""
    with go_client(aws.stack.api_url, api_key=aws.key) as go:
        kb = go.create_knowledge_base({"name": "From URLs"})
        with pytest.raises(APIError) as refused:
            go.create_knowledge_from_url(kb["id"], "http://169.254.169.254/latest/meta-data/")
        assert refused.value.status == 422
        assert json.loads(refused.value.body)["error"]["type"] == "url_refused"


def _runs(frames: list[dict[str, Any]]) -> list[tuple[str, str, bool]]:
    return joined_runs((f["response_type"], f["content"], bool(f.get("done"))) for f in frames)
