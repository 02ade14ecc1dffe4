"""Tenant isolation over HTTP, for every route of the API.

Tenant A (the default tenant) owns a knowledge base, a document and its chunks, a session with a finished
turn and a running one, and a memory. Tenant B comes in two ways, and the whole suite runs for each: made with
``ragline tenant create`` (the CLI prints its key, sent as ``X-API-Key``), or a web-app user who registered and
signed in (their access token, sent as ``Authorization: Bearer``). For every route under /api/v1: no key, an unknown
key and a forged token naming A's tenant answer 401; B's credential on A's ids answers 404, as if they did not
exist, and changes nothing; A's key on the same request succeeds, so the ids are real. Routes without an id in
their path are checked for what they could leak (lists, names, ids in the body).

``test_every_api_route_is_covered`` fails when a route is added without a probe here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from fastapi.routing import APIRoute

from tests.conftest import Ragline, start_ragline
from tests.support.polling import CLIENT_TIMEOUT, wait_until
from tests.support.scripted_model import Script
from tests.support.sse import read_frames

DOCS = {"Guide": "# Guide\n\nThe reactor cools with heavy water. Heavy water slows neutrons down."}


@dataclass
class World:
    a: Ragline  # tenant A's client (the default tenant)
    b: httpx.Client  # tenant B's client
    anonymous: httpx.Client
    kb: str
    document: str
    chunk: str
    session: str
    user_message: str
    message: str  # A's finished assistant message
    memory: str
    b_kb: str
    b_session: str
    scripted: Any
    # A token in the right form naming A's tenant, signed with a guess at the deployment's secret.
    forged: str

    def owner(self, method: str, url: str, status: int, **kwargs: Any) -> httpx.Response:
        reply = self.a.client.request(method, url, **kwargs)
        assert reply.status_code == status, (method, url, reply.status_code, reply.text[:300])
        return reply

    def other(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """B's request, and the same without a key and with an unknown key."""
        extra = kwargs.pop("headers", {})
        for key in ({}, {"X-API-Key": "rl-not-a-key"}, {"Authorization": f"Bearer {self.forged}"}):
            unauthorized = self.anonymous.request(method, url, headers={**extra, **key}, **kwargs)
            assert unauthorized.status_code == 401, (method, url, key, unauthorized.text[:300])
            assert unauthorized.json()["error"]["type"] == "unauthorized"
        return self.b.request(method, url, headers=extra, **kwargs)

    def denied(self, method: str, url: str, **kwargs: Any) -> None:
        reply = self.other(method, url, **kwargs)
        assert reply.status_code == 404, (method, url, reply.status_code, reply.text[:300])
        assert reply.json()["error"]["type"] == "not_found"


def _tenant_from_cli(data_dir: Path, name: str) -> str:
    env = {**os.environ, "RAGLINE_DATA_DIR": str(data_dir), "RAGLINE_LOG_LEVEL": "ERROR"}
    cli = Path(sys.executable).with_name("ragline")
    done = subprocess.run(
        [str(cli), "tenant", "create", name], env=env, capture_output=True, text=True, timeout=120, check=True
    )
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith(f"tenant {name} ("), done.stdout
    return lines[-1].strip()


def _signed_in(url: str, email: str) -> str:
    """A web-app user who registered (a tenant of their own) and signed in: their access token."""
    with httpx.Client(base_url=url, timeout=CLIENT_TIMEOUT) as client:
        body = {"username": "bea", "email": email, "password": "Passw0rd2024"}
        assert client.post("/api/v1/auth/register", json=body).status_code == 201
        login = client.post("/api/v1/auth/login", json={"email": email, "password": body["password"]})
        assert login.status_code == 200, login.text
        return str(login.json()["token"])


def _forged_token(tenant_id: str) -> str:
    now = int(time.time())
    claims = {"iss": "ragline", "sub": "intruder", "tid": tenant_id, "typ": "access", "ver": 0, "jti": "forged"}
    return jwt.encode({**claims, "iat": now, "exp": now + 3600}, "a guess at the secret, long enough", "HS256")


@pytest.fixture(scope="module", params=["api-key", "jwt"])
def world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, shared_models: Any, scripted: Any
) -> Iterator[World]:
    """A's records, and B with an API key (``api-key``) or a signed-in user's token (``jwt``)."""
    data_dir = tmp_path_factory.mktemp("isolation") / "data"
    server, a = start_ragline(data_dir, shared_models)
    if request.param == "api-key":
        b_headers = {"X-API-Key": _tenant_from_cli(data_dir, "tenant-b")}
    else:
        b_headers = {"Authorization": f"Bearer {_signed_in(a.url, 'bea@example.com')}"}
    b = httpx.Client(base_url=a.url, headers=b_headers, timeout=CLIENT_TIMEOUT)
    anonymous = httpx.Client(base_url=a.url, timeout=CLIENT_TIMEOUT)
    try:
        kb = a.create_kb("guide", DOCS)
        document = a.client.get(f"/api/v1/knowledge-bases/{kb}/documents").json()["data"][0]["id"]
        chunk = a.client.get(f"/api/v1/knowledge-bases/{kb}/documents/{document}/chunks").json()["data"][0]["id"]
        session = a.session([kb])
        read_frames(a.client, "POST", f"/api/v1/knowledge-chat/{session}", json={"query": "How does it cool?"})
        user_message, message = (m["id"] for m in a.messages(session))

        from ragline.memory.models import new_memory

        tenant_a = a.container.tenants.for_key(a.key)
        memory = a.container.memories.add(new_memory(tenant_a.id, "", "The user runs a reactor.")).id
        b_kb = b.post("/api/v1/knowledge-bases", json={"name": "b-kb"}).json()["data"]["id"]
        b_session = b.post("/api/v1/sessions", json={"knowledge_base_ids": [b_kb]}).json()["data"]["id"]
        forged = _forged_token(tenant_a.id)
        yield World(
            a,
            b,
            anonymous,
            kb,
            document,
            chunk,
            session,
            user_message,
            message,
            memory,
            b_kb,
            b_session,
            scripted,
            forged,
        )
    finally:
        b.close()
        anonymous.close()
        a.client.close()
        server.stop()
        a.container.close()


# One probe per route ------------------------------------------------------------------------------------------
def _create_knowledge_base(w: World) -> None:
    # Names are per tenant: B may use A's name, and learns nothing of A's knowledge base from it.
    reply = w.other("POST", "/api/v1/knowledge-bases", json={"name": "guide"})
    assert reply.status_code == 201, reply.text
    assert reply.json()["data"]["id"] != w.kb
    assert reply.json()["data"]["document_count"] == 0
    w.owner("POST", "/api/v1/knowledge-bases", 409, json={"name": "guide"})


def _list_knowledge_bases(w: World) -> None:
    reply = w.other("GET", "/api/v1/knowledge-bases")
    assert reply.status_code == 200
    assert w.kb not in {kb["id"] for kb in reply.json()["data"]}
    assert w.kb in {kb["id"] for kb in w.owner("GET", "/api/v1/knowledge-bases", 200).json()["data"]}


def _get_knowledge_base(w: World) -> None:
    w.denied("GET", f"/api/v1/knowledge-bases/{w.kb}")
    w.owner("GET", f"/api/v1/knowledge-bases/{w.kb}", 200)


def _settled_documents(w: World, url: str) -> list[dict[str, Any]]:
    """A's documents once no enrichment of theirs is still running: its progress is no change B made."""

    def settled() -> list[dict[str, Any]] | None:
        documents: list[dict[str, Any]] = w.a.client.get(url).json()["data"]
        return None if any(d["summary_status"] in ("pending", "processing") for d in documents) else documents

    return wait_until(settled, timeout=600)


def _upload_document(w: World) -> None:
    url = f"/api/v1/knowledge-bases/{w.kb}/documents"
    before = _settled_documents(w, url)
    w.denied("POST", url, json={"title": "Intrusion", "content": "Written by tenant B."})
    w.denied("POST", url, files={"file": ("intrusion.md", b"# Intrusion\n\nWritten by tenant B.", "text/markdown")})
    assert w.a.client.get(url).json()["data"] == before
    # 202: stored and keyword-searchable, vectors computed in the background.
    w.owner("POST", url, 202, json={"title": "Owner's note", "content": "Heavy water is deuterium oxide."})


def _import_faq(w: World) -> None:
    url = f"/api/v1/knowledge-bases/{w.kb}/faq"
    entry = {"standard_question": "What cools the reactor?", "answers": ["Heavy water."]}
    w.denied("POST", url, json={"entries": [entry]})
    w.owner("POST", url, 201, json={"entries": [entry]})


def _list_documents(w: World) -> None:
    w.denied("GET", f"/api/v1/knowledge-bases/{w.kb}/documents")
    w.owner("GET", f"/api/v1/knowledge-bases/{w.kb}/documents", 200)


def _set_embedding_model(w: World) -> None:
    w.denied("PUT", f"/api/v1/knowledge-bases/{w.kb}/embedding-model", json={"embedding_model": "minilm"})
    reply = w.owner("PUT", f"/api/v1/knowledge-bases/{w.kb}/embedding-model", 200, json={"embedding_model": "minilm"})
    assert reply.json()["data"]["embedding_model"] == "local:all-MiniLM-L6-v2-int8"


def _get_document(w: World) -> None:
    w.denied("GET", f"/api/v1/knowledge-bases/{w.kb}/documents/{w.document}")
    w.denied("GET", f"/api/v1/knowledge-bases/{w.b_kb}/documents/{w.document}")  # A's document, B's kb
    reply = w.owner("GET", f"/api/v1/knowledge-bases/{w.kb}/documents/{w.document}", 200)
    assert reply.json()["data"]["id"] == w.document


def _list_chunks(w: World) -> None:
    w.denied("GET", f"/api/v1/knowledge-bases/{w.kb}/documents/{w.document}/chunks")
    w.denied("GET", f"/api/v1/knowledge-bases/{w.b_kb}/documents/{w.document}/chunks")  # A's document, B's kb
    w.owner("GET", f"/api/v1/knowledge-bases/{w.kb}/documents/{w.document}/chunks", 200)


def _get_chunk(w: World) -> None:
    w.denied("GET", f"/api/v1/chunks/by-id/{w.chunk}")
    assert w.owner("GET", f"/api/v1/chunks/by-id/{w.chunk}", 200).json()["data"]["knowledge_base_id"] == w.kb


def _list_knowledge_chunks(w: World) -> None:
    w.denied("GET", f"/api/v1/chunks/{w.document}")
    assert w.chunk in {c["id"] for c in w.owner("GET", f"/api/v1/chunks/{w.document}", 200).json()["data"]}


def _hybrid_search(method: str) -> Callable[[World], None]:
    def probe(w: World) -> None:
        url = f"/api/v1/knowledge-bases/{w.kb}/hybrid-search"
        w.denied(method, url, json={"query_text": "heavy water"})
        # B's own knowledge base cannot reach A's through knowledge_base_ids.
        w.denied(
            method,
            f"/api/v1/knowledge-bases/{w.b_kb}/hybrid-search",
            json={"query_text": "heavy water", "knowledge_base_ids": [w.kb]},
        )
        assert w.owner(method, url, 200, json={"query_text": "heavy water"}).json()["data"]

    return probe


def _list_knowledge(w: World) -> None:
    w.denied("GET", f"/api/v1/knowledge-bases/{w.kb}/knowledge")
    assert w.document in {
        d["id"] for d in w.owner("GET", f"/api/v1/knowledge-bases/{w.kb}/knowledge", 200).json()["data"]
    }


def _get_knowledge(w: World) -> None:
    w.denied("GET", f"/api/v1/knowledge/{w.document}")
    w.owner("GET", f"/api/v1/knowledge/{w.document}", 200)


def _search_knowledge(w: World) -> None:
    # Across knowledge bases by title: B finds none of A's documents, whatever it asks for.
    reply = w.other("GET", "/api/v1/knowledge/search", params={"keyword": "guide"})
    assert reply.status_code == 200, reply.text
    assert reply.json()["data"] == []
    owner = w.owner("GET", "/api/v1/knowledge/search", 200, params={"keyword": "guide"})
    assert w.document in [d["id"] for d in owner.json()["data"]]


def _update_knowledge(w: World) -> None:
    w.denied("PUT", f"/api/v1/knowledge/{w.document}", json={"title": "Hijacked"})
    assert w.owner("GET", f"/api/v1/knowledge/{w.document}", 200).json()["data"]["title"] == "Guide"
    w.owner("PUT", f"/api/v1/knowledge/{w.document}", 200, json={"description": "How the reactor cools"})


def _update_knowledge_tags(w: World) -> None:
    # The ids are in the body: another tenant's documents are not found, and none is changed.
    reply = w.other("PUT", "/api/v1/knowledge/tags", json={"updates": {w.document: "stolen"}})
    assert reply.status_code == 404, reply.text
    reply = w.other("PUT", "/api/v1/knowledge/tags", json={"updates": {w.document: None}, "kb_id": w.kb})
    assert reply.status_code == 404, reply.text
    assert w.owner("GET", f"/api/v1/knowledge/{w.document}", 200).json()["data"]["tags"] == []
    w.owner("PUT", "/api/v1/knowledge/tags", 200, json={"updates": {w.document: None}})


def _pin_knowledge_base(w: World) -> None:
    w.denied("PUT", f"/api/v1/knowledge-bases/{w.kb}/pin")
    assert w.owner("GET", f"/api/v1/knowledge-bases/{w.kb}", 200).json()["data"]["is_pinned"] is False
    assert w.owner("PUT", f"/api/v1/knowledge-bases/{w.kb}/pin", 200).json()["data"]["is_pinned"] is True
    assert w.owner("PUT", f"/api/v1/knowledge-bases/{w.kb}/pin", 200).json()["data"]["is_pinned"] is False


def _duplicate_knowledge_base(w: World) -> None:
    w.denied("POST", f"/api/v1/knowledge-bases/{w.kb}/duplicate")
    names = [kb["name"] for kb in w.b.get("/api/v1/knowledge-bases").json()["data"]]
    assert not any(name.startswith("guide ") for name in names)
    copy = w.owner("POST", f"/api/v1/knowledge-bases/{w.kb}/duplicate", 201).json()["data"]
    w.owner("DELETE", f"/api/v1/knowledge-bases/{copy['target_id']}", 200)


def _move_targets(w: World) -> None:
    w.denied("GET", f"/api/v1/knowledge-bases/{w.kb}/move-targets")
    # B's own knowledge base lists its own targets only: never A's.
    mine = w.other("GET", f"/api/v1/knowledge-bases/{w.b_kb}/move-targets")
    assert mine.status_code == 200, mine.text
    assert w.kb not in [kb["id"] for kb in mine.json()["data"]]
    w.owner("GET", f"/api/v1/knowledge-bases/{w.kb}/move-targets", 200)


def _download_knowledge(w: World) -> None:
    w.denied("GET", f"/api/v1/knowledge/{w.document}/download")
    assert b"heavy water" in w.owner("GET", f"/api/v1/knowledge/{w.document}/download", 200).content


def _get_image(w: World) -> None:
    from ragline.ingest.images import save_image
    from tests.support.images import blank_image

    picture = blank_image(40, 40)
    tenant_a = w.a.container.tenants.for_key(w.a.key)
    url = save_image(w.a.container.originals, tenant_a.id, "isolation", 1, picture)
    w.denied("GET", "/api/v1/images", params={"url": url})
    assert w.owner("GET", "/api/v1/images", 200, params={"url": url}).content == picture


def _preview_knowledge(w: World) -> None:
    w.denied("GET", f"/api/v1/knowledge/{w.document}/preview")
    assert b"heavy water" in w.owner("GET", f"/api/v1/knowledge/{w.document}/preview", 200).content


def _reparse_knowledge(w: World) -> None:
    w.denied("POST", f"/api/v1/knowledge/{w.document}/reparse")
    before = w.owner("GET", f"/api/v1/knowledge/{w.document}", 200).json()["data"]["updated_at"]
    assert w.owner("GET", f"/api/v1/knowledge/{w.document}", 200).json()["data"]["updated_at"] == before


def _batch_reparse_knowledge(w: World) -> None:
    # B names A's document in its own knowledge base, and A's knowledge base: neither is found.
    reply = w.other("POST", "/api/v1/knowledge/batch-reparse", json={"kb_id": w.b_kb, "ids": [w.document]})
    assert reply.status_code == 422, reply.text
    w.denied("POST", "/api/v1/knowledge/batch-reparse", json={"kb_id": w.kb, "ids": [w.document]})


def _update_manual_knowledge(w: World) -> None:
    w.denied("PUT", f"/api/v1/knowledge/manual/{w.document}", json={"content": "Hijacked."})
    assert b"heavy water" in w.owner("GET", f"/api/v1/knowledge/{w.document}/download", 200).content


def _get_knowledge_batch(w: World) -> None:
    # A batch names ids in the query: another tenant's ids are left out, never shown.
    reply = w.other("GET", "/api/v1/knowledge/batch", params={"ids": [w.document]})
    assert reply.status_code == 200, reply.text
    assert reply.json()["data"] == []
    owner = w.owner("GET", "/api/v1/knowledge/batch", 200, params={"ids": [w.document]})
    assert [d["id"] for d in owner.json()["data"]] == [w.document]


def _create_knowledge_from_file(w: World) -> None:
    url = f"/api/v1/knowledge-bases/{w.kb}/knowledge/file"
    w.denied("POST", url, files={"file": ("intrusion.md", b"# Intrusion\n\nWritten by tenant B.", "text/markdown")})
    w.owner("POST", url, 200, files={"file": ("owner.md", b"# Owner\n\nHeavy water moderates.", "text/markdown")})


def _create_manual_knowledge(w: World) -> None:
    url = f"/api/v1/knowledge-bases/{w.kb}/knowledge/manual"
    w.denied("POST", url, json={"title": "Intrusion", "content": "Written by tenant B."})
    w.owner("POST", url, 200, json={"title": "Owner's page", "content": "Deuterium is heavy hydrogen."})


def _update_knowledge_base(w: World) -> None:
    w.denied("PUT", f"/api/v1/knowledge-bases/{w.kb}", json={"name": "hijacked"})
    assert w.owner("GET", f"/api/v1/knowledge-bases/{w.kb}", 200).json()["data"]["name"] == "guide"
    w.owner("PUT", f"/api/v1/knowledge-bases/{w.kb}", 200, json={"name": "guide", "description": "the guide"})


def _delete_knowledge_base(w: World) -> None:
    w.denied("DELETE", f"/api/v1/knowledge-bases/{w.kb}")
    w.owner("GET", f"/api/v1/knowledge-bases/{w.kb}", 200)
    doomed = w.a.create_kb("doomed", {"Note": "To be deleted."})
    w.owner("DELETE", f"/api/v1/knowledge-bases/{doomed}", 200)


def _clear_knowledge_base(w: World) -> None:
    w.denied("DELETE", f"/api/v1/knowledge-bases/{w.kb}/knowledge")
    assert w.owner("GET", f"/api/v1/knowledge/{w.document}", 200)
    emptied = w.a.create_kb("emptied", {"Note": "To be cleared."})
    assert w.owner("DELETE", f"/api/v1/knowledge-bases/{emptied}/knowledge", 200).json()["data"]["deleted_count"] == 1


def _delete_knowledge(w: World) -> None:
    w.denied("DELETE", f"/api/v1/knowledge/{w.document}")
    w.owner("GET", f"/api/v1/knowledge/{w.document}", 200)
    note = w.owner(
        "POST", f"/api/v1/knowledge-bases/{w.kb}/knowledge/manual", 200, json={"title": "Scrap", "content": "Scrap."}
    )
    w.owner("DELETE", f"/api/v1/knowledge/{note.json()['data']['id']}", 200)


def _batch_delete_knowledge(w: World) -> None:
    url = "/api/v1/knowledge/batch-delete"
    w.denied("POST", url, json={"kb_id": w.kb, "ids": [w.document]})
    # B's own knowledge base cannot name A's document.
    reply = w.other("POST", url, json={"kb_id": w.b_kb, "ids": [w.document]})
    assert reply.status_code == 422, reply.text
    w.owner("GET", f"/api/v1/knowledge/{w.document}", 200)
    note = w.owner(
        "POST", f"/api/v1/knowledge-bases/{w.kb}/knowledge/manual", 200, json={"title": "Batch", "content": "Batch."}
    )
    w.owner("POST", url, 200, json={"kb_id": w.kb, "ids": [note.json()["data"]["id"]]})


def _delete_message(w: World) -> None:
    w.denied("DELETE", f"/api/v1/messages/{w.session}/{w.user_message}")
    w.denied("DELETE", f"/api/v1/messages/{w.b_session}/{w.user_message}")  # A's message, B's session
    assert w.user_message in {m["id"] for m in w.a.messages(w.session)}
    scratch = w.a.session([w.kb])
    read_frames(w.a.client, "POST", f"/api/v1/knowledge-chat/{scratch}", json={"query": "Scratch?"})
    first = w.a.messages(scratch)[0]["id"]
    w.owner("DELETE", f"/api/v1/messages/{scratch}/{first}", 200)


def _create_knowledge_from_url(w: World) -> None:
    url = f"/api/v1/knowledge-bases/{w.kb}/knowledge/url"
    # B never reaches the fetch: A's knowledge base is not found for B.
    w.denied("POST", url, json={"url": "http://example.com/page"})
    # A does, and the fetch refuses a private address (no page server needed for the probe).
    reply = w.owner("POST", url, 422, json={"url": "http://127.0.0.1:9/page"})
    assert reply.json()["error"]["type"] == "url_refused"


def _scratch_document(w: World, title: str) -> tuple[str, str]:
    """A document of A's own to change or delete, and its first chunk."""
    note = w.owner(
        "POST", f"/api/v1/knowledge-bases/{w.kb}/knowledge/manual", 200, json={"title": title, "content": f"{title}."}
    ).json()["data"]["id"]
    chunk = w.owner("GET", f"/api/v1/chunks/{note}", 200).json()["data"][0]["id"]
    return note, chunk


def _update_chunk(w: World) -> None:
    w.denied("PUT", f"/api/v1/chunks/{w.document}/{w.chunk}", json={"content": "Hijacked."})
    assert w.owner("GET", f"/api/v1/chunks/by-id/{w.chunk}", 200).json()["data"]["content"] != "Hijacked."
    note, chunk = _scratch_document(w, "Editable")
    w.owner("PUT", f"/api/v1/chunks/{note}/{chunk}", 200, json={"content": "Edited."})


def _delete_chunk(w: World) -> None:
    w.denied("DELETE", f"/api/v1/chunks/{w.document}/{w.chunk}")
    w.owner("GET", f"/api/v1/chunks/by-id/{w.chunk}", 200)
    note, chunk = _scratch_document(w, "Deletable")
    w.owner("DELETE", f"/api/v1/chunks/{note}/{chunk}", 200)


def _delete_knowledge_chunks(w: World) -> None:
    w.denied("DELETE", f"/api/v1/chunks/{w.document}")
    w.owner("GET", f"/api/v1/chunks/by-id/{w.chunk}", 200)
    note, _ = _scratch_document(w, "Emptied")
    w.owner("DELETE", f"/api/v1/chunks/{note}", 200)


def _faq_entry(w: World, question: str) -> int:
    """An FAQ entry of A's own (a question per probe, so none repeats another's)."""
    body = {"standard_question": question, "answers": ["Heavy water."]}
    return int(w.owner("POST", f"/api/v1/knowledge-bases/{w.kb}/faq/entry", 200, json=body).json()["data"]["id"])


def _faq_url(kb: str, tail: str = "") -> str:
    return f"/api/v1/knowledge-bases/{kb}/faq{tail}"


def _list_faq_entries(w: World) -> None:
    _faq_entry(w, "Which water is heavy?")
    w.denied("GET", _faq_url(w.kb, "/entries"))
    assert w.owner("GET", _faq_url(w.kb, "/entries"), 200).json()["data"]["total"] >= 1


def _export_faq(w: World) -> None:
    w.denied("GET", _faq_url(w.kb, "/entries/export"))
    w.owner("GET", _faq_url(w.kb, "/entries/export"), 200)


def _get_faq_entry(w: World) -> None:
    entry = _faq_entry(w, "What is deuterium?")
    w.denied("GET", _faq_url(w.kb, f"/entries/{entry}"))
    w.denied("GET", _faq_url(w.b_kb, f"/entries/{entry}"))  # A's entry, B's knowledge base
    w.owner("GET", _faq_url(w.kb, f"/entries/{entry}"), 200)


def _upsert_faq(w: World) -> None:
    body = {"mode": "append", "entries": [{"standard_question": "Upserted?", "answers": ["Yes."]}]}
    w.denied("POST", _faq_url(w.kb, "/entries"), json=body)
    w.denied("POST", _faq_url(w.kb, "/entries"), json={**body, "mode": "replace"})
    assert w.owner("GET", _faq_url(w.kb, "/entries"), 200, params={"keyword": "Upserted"}).json()["data"]["total"] == 0
    w.owner("POST", _faq_url(w.kb, "/entries"), 200, json=body)


def _create_faq_entry(w: World) -> None:
    w.denied("POST", _faq_url(w.kb, "/entry"), json={"standard_question": "Intrusion?", "answers": ["B."]})
    _faq_entry(w, "What does the moderator slow?")


def _update_faq_entry(w: World) -> None:
    entry = _faq_entry(w, "Is the coolant water?")
    body = {"standard_question": "Hijacked?", "answers": ["B."]}
    w.denied("PUT", _faq_url(w.kb, f"/entries/{entry}"), json=body)
    w.denied("PUT", _faq_url(w.b_kb, f"/entries/{entry}"), json=body)
    assert w.owner("GET", _faq_url(w.kb, f"/entries/{entry}"), 200).json()["data"]["standard_question"] != "Hijacked?"
    w.owner("PUT", _faq_url(w.kb, f"/entries/{entry}"), 200, json={**body, "standard_question": "Is it water?"})


def _add_similar_questions(w: World) -> None:
    entry = _faq_entry(w, "Why heavy water?")
    body = {"similar_questions": ["Hijacked?"]}
    w.denied("POST", _faq_url(w.kb, f"/entries/{entry}/similar-questions"), json=body)
    w.denied("POST", _faq_url(w.b_kb, f"/entries/{entry}/similar-questions"), json=body)
    w.owner(
        "POST", _faq_url(w.kb, f"/entries/{entry}/similar-questions"), 200, json={"similar_questions": ["Why D2O?"]}
    )


def _update_faq_fields(w: World) -> None:
    entry = _faq_entry(w, "Can the reactor stop?")
    body = {"by_id": {str(entry): {"is_enabled": False}}}
    w.denied("PUT", _faq_url(w.kb, "/entries/fields"), json=body)
    w.denied("PUT", _faq_url(w.b_kb, "/entries/fields"), json=body)
    assert w.owner("GET", _faq_url(w.kb, f"/entries/{entry}"), 200).json()["data"]["is_enabled"] is True
    w.owner("PUT", _faq_url(w.kb, "/entries/fields"), 200, json=body)


def _update_faq_tags(w: World) -> None:
    entry = _faq_entry(w, "Who runs the reactor?")
    body = {"updates": {str(entry): None}}
    w.denied("PUT", _faq_url(w.kb, "/entries/tags"), json=body)
    w.denied("PUT", _faq_url(w.b_kb, "/entries/tags"), json=body)
    w.owner("PUT", _faq_url(w.kb, "/entries/tags"), 200, json=body)


def _delete_faq_entries(w: World) -> None:
    entry = _faq_entry(w, "Is the reactor safe?")
    w.denied("DELETE", _faq_url(w.kb, "/entries"), json={"ids": [entry]})
    w.denied("DELETE", _faq_url(w.b_kb, "/entries"), json={"ids": [entry]})
    w.owner("GET", _faq_url(w.kb, f"/entries/{entry}"), 200)
    w.owner("DELETE", _faq_url(w.kb, "/entries"), 200, json={"ids": [entry]})


def _search_faq(w: World) -> None:
    _faq_entry(w, "What slows the neutrons?")
    w.denied("POST", _faq_url(w.kb, "/search"), json={"query_text": "neutrons"})
    assert w.owner("POST", _faq_url(w.kb, "/search"), 200, json={"query_text": "slows the neutrons"}).json()["data"]


def _faq_import_display(w: World) -> None:
    w.denied("PUT", _faq_url(w.kb, "/import/last-result/display"), json={"display_status": "close"})
    w.owner("PUT", _faq_url(w.kb, "/import/last-result/display"), 200, json={"display_status": "close"})


def _faq_import_progress(w: World) -> None:
    # The task id carries the whole outcome (counts, mode): whoever holds it learns nothing more.
    body = {"mode": "append", "entries": [{"standard_question": "Progress?", "answers": ["Done."]}]}
    task = w.owner("POST", _faq_url(w.kb, "/entries"), 200, json=body).json()["data"]["task_id"]
    reply = w.other("GET", f"/api/v1/faq/import/progress/{task}")
    assert reply.status_code == 200, reply.text
    assert set(reply.json()["data"]) >= {"success_count", "skipped_count"}
    assert w.kb not in reply.text
    assert "Progress?" not in reply.text


def _list_tags(w: World) -> None:
    w.denied("GET", f"/api/v1/knowledge-bases/{w.kb}/tags")
    w.owner("GET", f"/api/v1/knowledge-bases/{w.kb}/tags", 200)


def _create_tag(w: World) -> None:
    w.denied("POST", f"/api/v1/knowledge-bases/{w.kb}/tags", json={"name": "Intrusion"})
    names = {t["name"] for t in w.owner("GET", f"/api/v1/knowledge-bases/{w.kb}/tags", 200).json()["data"]["data"]}
    assert "Intrusion" not in names
    w.owner("POST", f"/api/v1/knowledge-bases/{w.kb}/tags", 200, json={"name": "Reactor"})


def _owner_tag(w: World, name: str) -> str:
    reply = w.owner("POST", f"/api/v1/knowledge-bases/{w.kb}/tags", 200, json={"name": name})
    return str(reply.json()["data"]["id"])


def _update_tag(w: World) -> None:
    tag = _owner_tag(w, "Coolant")
    w.denied("PUT", f"/api/v1/knowledge-bases/{w.kb}/tags/{tag}", json={"name": "Hijacked"})
    w.denied("PUT", f"/api/v1/knowledge-bases/{w.b_kb}/tags/{tag}", json={"name": "Hijacked"})  # A's tag, B's kb
    w.owner("PUT", f"/api/v1/knowledge-bases/{w.kb}/tags/{tag}", 200, json={"name": "Moderator"})


def _delete_tag(w: World) -> None:
    tag = _owner_tag(w, "Doomed tag")
    w.denied("DELETE", f"/api/v1/knowledge-bases/{w.kb}/tags/{tag}", params={"force": "true"})
    w.denied("DELETE", f"/api/v1/knowledge-bases/{w.b_kb}/tags/{tag}", params={"force": "true"})
    w.owner("DELETE", f"/api/v1/knowledge-bases/{w.kb}/tags/{tag}", 200)


def _load_messages(w: World) -> None:
    w.denied("GET", f"/api/v1/messages/{w.session}/load")
    assert w.message in {m["id"] for m in w.owner("GET", f"/api/v1/messages/{w.session}/load", 200).json()["data"]}


def _create_session(w: World) -> None:
    w.denied("POST", "/api/v1/sessions", json={"knowledge_base_ids": [w.kb]})
    w.denied("POST", "/api/v1/sessions", json={"knowledge_base_ids": [w.b_kb, w.kb]})
    w.owner("POST", "/api/v1/sessions", 201, json={"knowledge_base_ids": [w.kb]})


def _list_sessions(w: World) -> None:
    reply = w.other("GET", "/api/v1/sessions")
    assert reply.status_code == 200
    assert w.session not in {s["id"] for s in reply.json()["data"]}
    assert w.session in {s["id"] for s in w.owner("GET", "/api/v1/sessions", 200).json()["data"]}


def _get_session(w: World) -> None:
    w.denied("GET", f"/api/v1/sessions/{w.session}")
    w.owner("GET", f"/api/v1/sessions/{w.session}", 200)


def _list_messages(w: World) -> None:
    w.denied("GET", f"/api/v1/sessions/{w.session}/messages")
    w.owner("GET", f"/api/v1/sessions/{w.session}/messages", 200)


def _update_session(w: World) -> None:
    w.denied("PUT", f"/api/v1/sessions/{w.session}", json={"title": "Hijacked", "description": "Hijacked"})
    mine = w.owner("GET", f"/api/v1/sessions/{w.session}", 200).json()["data"]
    assert "Hijacked" not in (mine["title"], mine["description"])
    scratch = w.a.session([w.kb])
    w.owner("PUT", f"/api/v1/sessions/{scratch}", 200, json={"title": "Mine"})


def _delete_session(w: World) -> None:
    w.denied("DELETE", f"/api/v1/sessions/{w.session}")
    w.owner("GET", f"/api/v1/sessions/{w.session}", 200)
    w.owner("DELETE", f"/api/v1/sessions/{w.a.session([w.kb])}", 200)


def _batch_delete_sessions(w: World) -> None:
    w.denied("DELETE", "/api/v1/sessions/batch", json={"ids": [w.session]})
    w.denied("DELETE", "/api/v1/sessions/batch", json={"ids": [w.b_session, w.session]})
    # B's delete_all deletes B's sessions only.
    scratch_b = w.b.post("/api/v1/sessions", json={}).json()["data"]["id"]
    assert w.other("DELETE", "/api/v1/sessions/batch", json={"delete_all": True}).status_code == 200
    assert w.b.get(f"/api/v1/sessions/{scratch_b}").status_code == 404
    w.owner("GET", f"/api/v1/sessions/{w.session}", 200)
    w.owner("DELETE", "/api/v1/sessions/batch", 200, json={"ids": [w.a.session([w.kb])]})
    # The probe's own session of B's, for the probes after this one.
    w.b_session = w.b.post("/api/v1/sessions", json={"knowledge_base_ids": [w.b_kb]}).json()["data"]["id"]


def _clear_session_messages(w: World) -> None:
    w.denied("DELETE", f"/api/v1/sessions/{w.session}/messages")
    assert w.a.messages(w.session)
    w.owner("DELETE", f"/api/v1/sessions/{w.a.session([w.kb])}/messages", 200)


def _pin_session(w: World) -> None:
    w.denied("POST", f"/api/v1/sessions/{w.session}/pin")
    assert w.owner("GET", f"/api/v1/sessions/{w.session}", 200).json()["data"]["is_pinned"] is False
    w.owner("POST", f"/api/v1/sessions/{w.a.session([w.kb])}/pin", 200)


def _unpin_session(w: World) -> None:
    pinned = w.a.session([w.kb])
    w.owner("POST", f"/api/v1/sessions/{pinned}/pin", 200)
    w.denied("DELETE", f"/api/v1/sessions/{pinned}/pin")
    assert w.owner("GET", f"/api/v1/sessions/{pinned}", 200).json()["data"]["is_pinned"] is True
    w.owner("DELETE", f"/api/v1/sessions/{pinned}/pin", 200)


def _generate_title(w: World) -> None:
    body = {"messages": [{"role": "user", "content": "Hijacked title please"}]}
    w.denied("POST", f"/api/v1/sessions/{w.session}/generate_title", json=body)
    assert "Hijacked" not in w.owner("GET", f"/api/v1/sessions/{w.session}", 200).json()["data"]["title"]
    w.owner("POST", f"/api/v1/sessions/{w.a.session([w.kb])}/generate_title", 200, json=body)


def _fork_session(w: World) -> None:
    body = {"message_id": w.message}
    w.denied("POST", f"/api/v1/sessions/{w.session}/fork", json=body)
    w.denied("POST", f"/api/v1/sessions/{w.b_session}/fork", json=body)  # A's message, B's session
    assert not [s for s in w.b.get("/api/v1/sessions").json()["data"] if s["id"] != w.b_session]
    fork = w.owner("POST", f"/api/v1/sessions/{w.session}/fork", 201, json=body).json()["data"]["id"]
    w.owner("DELETE", f"/api/v1/sessions/{fork}", 200)


def _rewind_session(w: World) -> None:
    before = [m["id"] for m in w.a.messages(w.session)]
    w.denied("POST", f"/api/v1/sessions/{w.session}/rewind", json={"message_id": w.user_message})
    w.denied("POST", f"/api/v1/sessions/{w.b_session}/rewind", json={"message_id": w.user_message})
    assert [m["id"] for m in w.a.messages(w.session)] == before
    scratch = w.a.session([w.kb])
    read_frames(w.a.client, "POST", f"/api/v1/knowledge-chat/{scratch}", json={"query": "How does it cool?"})
    first = w.a.messages(scratch)[0]["id"]
    w.owner("POST", f"/api/v1/sessions/{scratch}/rewind", 200, json={"message_id": first})


def _message_feedback(w: World) -> None:
    body = {"rating": "down", "comment": "Hijacked"}
    w.denied("PUT", f"/api/v1/sessions/{w.session}/messages/{w.message}/feedback", json=body)
    w.denied("PUT", f"/api/v1/sessions/{w.b_session}/messages/{w.message}/feedback", json=body)
    mine = next(m for m in w.a.messages(w.session) if m["id"] == w.message)
    assert (mine["feedback"], mine["feedback_comment"]) == ("", "")
    url = f"/api/v1/sessions/{w.session}/messages/{w.message}/feedback"
    w.owner("PUT", url, 200, json={"rating": "up"})
    w.owner("PUT", url, 200, json={"rating": "none"})


def _suggested_questions(w: World) -> None:
    w.denied("GET", f"/api/v1/knowledge-bases/{w.kb}/suggested-questions")
    assert w.other("GET", f"/api/v1/knowledge-bases/{w.b_kb}/suggested-questions").json()["data"] == []
    assert w.owner("GET", f"/api/v1/knowledge-bases/{w.kb}/suggested-questions", 200).json()["data"]


def _list_models(w: World) -> None:
    # The deployment's models, the same for every tenant: nothing of A's in B's reply.
    theirs = w.other("GET", "/api/v1/models")
    assert theirs.status_code == 200
    assert theirs.json()["data"] == w.owner("GET", "/api/v1/models", 200).json()["data"]
    assert w.kb not in theirs.text


def _the_deployments(path: str, **params: str) -> Callable[[World], None]:
    """A route that answers the deployment's settings or features, the same for every tenant: B's reply equals A's
    (its tenant number aside) and holds nothing of A's."""

    def probe(w: World) -> None:
        mine = w.owner("GET", path, 200, params=params).json()
        theirs = w.other("GET", path, params=params)
        assert theirs.status_code == 200, theirs.text
        _nothing_of_a(w, theirs.text)
        assert _without_tenant(theirs.json()) == _without_tenant(mine), (path, theirs.json(), mine)

    return probe


# What is the same for every tenant but moves on between two replies (the process's uptime).
_MOVING = frozenset({"tenant_id", "uptime_seconds"})


def _without_tenant(reply: Any) -> Any:
    if isinstance(reply, dict):
        return {k: _without_tenant(v) for k, v in reply.items() if k not in _MOVING}
    if isinstance(reply, list):
        return [_without_tenant(v) for v in reply]
    return reply


def _nothing_of_a(w: World, text: str) -> None:
    """None of A's ids, nor words of A's document, in a reply to B."""
    for value in (w.kb, w.document, w.chunk, w.session, w.message, w.memory, "reactor", "heavy water"):
        assert value not in text.lower(), (value, text[:300])


def _list_agents(w: World) -> None:
    _the_deployments("/api/v1/agents")(w)
    (theirs,) = w.other("GET", "/api/v1/agents").json()["data"]
    (mine,) = w.owner("GET", "/api/v1/agents", 200).json()["data"]
    assert theirs["tenant_id"] != mine["tenant_id"]  # each tenant sees the built-in agent as its own


def _agent_suggested_questions(w: World) -> None:
    url = "/api/v1/agents/builtin-quick-answer/suggested-questions"
    # Questions come from the caller's own documents: naming A's knowledge base and document finds none of them.
    for params in ({}, {"knowledge_base_ids": w.kb}, {"knowledge_base_ids": w.kb, "knowledge_ids": w.document}):
        theirs = w.other("GET", url, params=params)
        assert theirs.status_code == 200, theirs.text
        assert theirs.json()["data"]["questions"] == [], (params, theirs.text)
        _nothing_of_a(w, theirs.text)
    mine = w.owner("GET", url, 200, params={"knowledge_base_ids": w.kb}).json()["data"]["questions"]
    assert {q["knowledge_base_id"] for q in mine} == {w.kb}


def _initialization_config(w: World) -> None:
    url = f"/api/v1/initialization/config/{w.kb}"
    w.denied("GET", url)
    assert w.owner("GET", url, 200).json()["data"]["embedding_model_id"]


def _update_initialization_config(w: World) -> None:
    url = f"/api/v1/initialization/config/{w.kb}"
    _settled_documents(w, f"/api/v1/knowledge-bases/{w.kb}/documents")  # enrichment writes the description
    before = w.owner("GET", url, 200).json()["data"]
    w.denied("PUT", url, json={"llmModelId": "hijacked", "documentSplitting": {"chunkSize": 100, "chunkOverlap": 0}})
    assert w.owner("GET", url, 200).json()["data"] == before
    assert w.owner("PUT", url, 200, json={}).json()["data"] == before


def _knowledge_folders(w: World) -> None:
    url = f"/api/v1/knowledge-bases/{w.kb}/knowledge/folders"
    w.denied("GET", url)
    assert w.owner("GET", url, 200).json()["data"]["root_document_count"] >= 1


def _message_suggestions(method: str) -> Callable[[World], None]:
    def probe(w: World) -> None:
        body = {"json": {}} if method == "POST" else {}
        w.denied(method, f"/api/v1/sessions/{w.session}/messages/{w.message}/suggestions", **body)
        w.denied(method, f"/api/v1/sessions/{w.b_session}/messages/{w.message}/suggestions", **body)  # B's session
        reply = w.owner(method, f"/api/v1/sessions/{w.session}/messages/{w.message}/suggestions", 200, **body)
        assert reply.json()["data"]["assistant_message_id"] == w.message

    return probe


def _keywords(w: World) -> None:
    # Keywords come from the question alone: B's reply holds nothing of A's, and equals A's for one question.
    body = {"query": "How does heavy water cool the reactor?"}
    theirs = w.other("POST", "/api/v1/keywords", json=body)
    assert theirs.status_code == 200
    assert theirs.json()["data"] == w.owner("POST", "/api/v1/keywords", 200, json=body).json()["data"]
    assert w.kb not in theirs.text


def _knowledge_search(w: World) -> None:
    body = {"query": "heavy water", "knowledge_base_ids": [w.kb]}
    w.denied("POST", "/api/v1/knowledge-search", json=body)
    w.denied("POST", "/api/v1/knowledge-search", json={**body, "knowledge_base_ids": [w.b_kb, w.kb]})
    assert w.owner("POST", "/api/v1/knowledge-search", 200, json=body).json()["data"]


def _ask(w: World) -> None:
    w.denied("POST", f"/api/v1/sessions/{w.session}/questions", json={"query": "Leak?"})
    # B's own session cannot reach A's knowledge base or document through the request options.
    url = f"/api/v1/sessions/{w.b_session}/questions"
    w.denied("POST", url, json={"query": "Leak?", "knowledge_base_ids": [w.kb]})
    w.denied("POST", url, json={"query": "Leak?", "knowledge_ids": [w.document]})
    w.owner("POST", f"/api/v1/sessions/{w.session}/questions", 202, json={"query": "What slows neutrons?"})


def _knowledge_chat(w: World) -> None:
    w.denied("POST", f"/api/v1/knowledge-chat/{w.session}", json={"query": "Leak?"})
    w.denied("POST", f"/api/v1/knowledge-chat/{w.b_session}", json={"query": "Leak?", "knowledge_base_ids": [w.kb]})
    reply = w.owner("POST", f"/api/v1/knowledge-chat/{w.session}", 200, json={"query": "What slows neutrons?"})
    assert "event:message" in reply.text


def _agent_chat(w: World) -> None:
    w.denied("POST", f"/api/v1/agent-chat/{w.session}", json={"query": "Leak?", "agent_enabled": True})
    w.denied("POST", f"/api/v1/agent-chat/{w.b_session}", json={"query": "Leak?", "knowledge_base_ids": [w.kb]})
    w.denied(
        "POST",
        f"/api/v1/agent-chat/{w.b_session}",
        json={"query": "Leak?", "mentioned_items": [{"id": w.kb, "type": "kb"}]},
    )
    reply = w.owner("POST", f"/api/v1/agent-chat/{w.session}", 200, json={"query": "What slows neutrons?"})
    assert '"agent_mode":"off"' in reply.text


def _message_events(w: World) -> None:
    w.denied("GET", f"/api/v1/sessions/{w.session}/messages/{w.message}/events")
    w.denied("GET", f"/api/v1/sessions/{w.b_session}/messages/{w.message}/events")  # A's message, B's session
    w.denied("GET", f"/api/v1/sessions/{w.session}/messages/{w.message}/events", headers={"Last-Event-ID": "0"})
    assert '"complete"' in w.owner("GET", f"/api/v1/sessions/{w.session}/messages/{w.message}/events", 200).text


def _continue_stream(w: World) -> None:
    w.denied("GET", f"/api/v1/sessions/continue-stream/{w.session}", params={"message_id": w.message})
    w.denied("GET", f"/api/v1/sessions/continue-stream/{w.b_session}", params={"message_id": w.message})
    reply = w.owner("GET", f"/api/v1/sessions/continue-stream/{w.session}", 200, params={"message_id": w.message})
    assert '"complete"' in reply.text


def _settled(w: World) -> None:
    """Every turn of A's session has ended (no earlier probe's turn is left to take a queued script)."""
    deadline = time.monotonic() + 15
    while not all(m["is_completed"] for m in w.a.messages(w.session)):
        assert time.monotonic() < deadline, "a turn did not end"
        time.sleep(0.05)


def _stop(w: World) -> None:
    _settled(w)
    w.scripted.queue(Script.answer(*[f"w{i} " for i in range(20)], delay=0.1))
    running = w.a.ask(w.session, "And what slows neutrons?")["assistant_message_id"]
    deadline = time.monotonic() + 15
    while not (w.scripted.answers and w.scripted.answers[-1].pieces_sent >= 2):
        assert time.monotonic() < deadline, "the answer did not start"
        time.sleep(0.02)
    # B cannot stop A's running turn, through A's session or its own.
    w.denied("POST", f"/api/v1/sessions/{w.session}/stop", json={"message_id": running})
    w.denied("POST", f"/api/v1/sessions/{w.b_session}/stop", json={"message_id": running})
    assert not next(m for m in w.a.messages(w.session) if m["id"] == running)["is_completed"]
    frames = read_frames(w.a.client, "GET", f"/api/v1/sessions/{w.session}/messages/{running}/events")
    assert frames[-1].type == "complete"  # it ran to its end
    reply = w.owner("POST", f"/api/v1/sessions/{w.session}/stop", 200, json={"message_id": running})
    assert reply.json()["data"]["status"] == "already_completed"


def _list_memories(w: World) -> None:
    reply = w.other("GET", "/api/v1/memories")
    assert reply.status_code == 200
    assert reply.json()["data"] == []
    assert [m["id"] for m in w.owner("GET", "/api/v1/memories", 200).json()["data"]] == [w.memory]


def _delete_memory(w: World) -> None:
    w.denied("DELETE", f"/api/v1/memories/{w.memory}")
    assert [m["id"] for m in w.owner("GET", "/api/v1/memories", 200).json()["data"]] == [w.memory]


def _delete_all_memories(w: World) -> None:
    reply = w.other("DELETE", "/api/v1/memories")
    assert reply.status_code == 200
    assert reply.json()["data"] == {"deleted": 0}
    assert [m["id"] for m in w.owner("GET", "/api/v1/memories", 200).json()["data"]] == [w.memory]


# The owner's destructive calls come last (the memory probes run after the others).
COVERED: dict[tuple[str, str], Callable[[World], None]] = {
    ("POST", "/api/v1/knowledge-bases"): _create_knowledge_base,
    ("GET", "/api/v1/knowledge-bases"): _list_knowledge_bases,
    ("GET", "/api/v1/knowledge-bases/{kb_id}"): _get_knowledge_base,
    ("POST", "/api/v1/knowledge-bases/{kb_id}/documents"): _upload_document,
    ("POST", "/api/v1/knowledge-bases/{kb_id}/faq"): _import_faq,
    ("GET", "/api/v1/knowledge-bases/{kb_id}/documents"): _list_documents,
    ("GET", "/api/v1/knowledge-bases/{kb_id}/documents/{document_id}"): _get_document,
    ("PUT", "/api/v1/knowledge-bases/{kb_id}/embedding-model"): _set_embedding_model,
    ("GET", "/api/v1/knowledge-bases/{kb_id}/documents/{document_id}/chunks"): _list_chunks,
    ("GET", "/api/v1/chunks/by-id/{chunk_id}"): _get_chunk,
    ("GET", "/api/v1/chunks/{knowledge_id}"): _list_knowledge_chunks,
    ("POST", "/api/v1/knowledge-bases/{kb_id}/hybrid-search"): _hybrid_search("POST"),
    ("GET", "/api/v1/knowledge-bases/{kb_id}/hybrid-search"): _hybrid_search("GET"),
    ("GET", "/api/v1/knowledge-bases/{kb_id}/knowledge"): _list_knowledge,
    ("POST", "/api/v1/knowledge-bases/{kb_id}/knowledge/file"): _create_knowledge_from_file,
    ("POST", "/api/v1/knowledge-bases/{kb_id}/knowledge/manual"): _create_manual_knowledge,
    ("GET", "/api/v1/knowledge/batch"): _get_knowledge_batch,
    ("GET", "/api/v1/knowledge/search"): _search_knowledge,
    ("GET", "/api/v1/knowledge/{knowledge_id}/download"): _download_knowledge,
    ("GET", "/api/v1/knowledge/{knowledge_id}/preview"): _preview_knowledge,
    ("GET", "/api/v1/images"): _get_image,
    ("POST", "/api/v1/knowledge/{knowledge_id}/reparse"): _reparse_knowledge,
    ("POST", "/api/v1/knowledge/batch-reparse"): _batch_reparse_knowledge,
    ("PUT", "/api/v1/knowledge/manual/{knowledge_id}"): _update_manual_knowledge,
    ("PUT", "/api/v1/knowledge/{knowledge_id}"): _update_knowledge,
    ("PUT", "/api/v1/knowledge/tags"): _update_knowledge_tags,
    ("PUT", "/api/v1/knowledge-bases/{kb_id}/pin"): _pin_knowledge_base,
    ("POST", "/api/v1/knowledge-bases/{kb_id}/duplicate"): _duplicate_knowledge_base,
    ("GET", "/api/v1/knowledge-bases/{kb_id}/move-targets"): _move_targets,
    ("GET", "/api/v1/knowledge/{knowledge_id}"): _get_knowledge,
    ("GET", "/api/v1/messages/{session_id}/load"): _load_messages,
    ("DELETE", "/api/v1/messages/{session_id}/{message_id}"): _delete_message,
    ("PUT", "/api/v1/chunks/{knowledge_id}/{chunk_id}"): _update_chunk,
    ("DELETE", "/api/v1/chunks/{knowledge_id}/{chunk_id}"): _delete_chunk,
    ("DELETE", "/api/v1/chunks/{knowledge_id}"): _delete_knowledge_chunks,
    ("GET", "/api/v1/knowledge-bases/{kb_id}/faq/entries"): _list_faq_entries,
    ("GET", "/api/v1/knowledge-bases/{kb_id}/faq/entries/export"): _export_faq,
    ("GET", "/api/v1/knowledge-bases/{kb_id}/faq/entries/{entry_id}"): _get_faq_entry,
    ("POST", "/api/v1/knowledge-bases/{kb_id}/faq/entries"): _upsert_faq,
    ("POST", "/api/v1/knowledge-bases/{kb_id}/faq/entry"): _create_faq_entry,
    ("PUT", "/api/v1/knowledge-bases/{kb_id}/faq/entries/{entry_id}"): _update_faq_entry,
    ("POST", "/api/v1/knowledge-bases/{kb_id}/faq/entries/{entry_id}/similar-questions"): _add_similar_questions,
    ("PUT", "/api/v1/knowledge-bases/{kb_id}/faq/entries/fields"): _update_faq_fields,
    ("PUT", "/api/v1/knowledge-bases/{kb_id}/faq/entries/tags"): _update_faq_tags,
    ("DELETE", "/api/v1/knowledge-bases/{kb_id}/faq/entries"): _delete_faq_entries,
    ("POST", "/api/v1/knowledge-bases/{kb_id}/faq/search"): _search_faq,
    ("PUT", "/api/v1/knowledge-bases/{kb_id}/faq/import/last-result/display"): _faq_import_display,
    ("GET", "/api/v1/faq/import/progress/{task_id}"): _faq_import_progress,
    ("GET", "/api/v1/knowledge-bases/{kb_id}/tags"): _list_tags,
    ("POST", "/api/v1/knowledge-bases/{kb_id}/tags"): _create_tag,
    ("PUT", "/api/v1/knowledge-bases/{kb_id}/tags/{tag_id}"): _update_tag,
    ("DELETE", "/api/v1/knowledge-bases/{kb_id}/tags/{tag_id}"): _delete_tag,
    ("PUT", "/api/v1/knowledge-bases/{kb_id}"): _update_knowledge_base,
    ("DELETE", "/api/v1/knowledge-bases/{kb_id}"): _delete_knowledge_base,
    ("DELETE", "/api/v1/knowledge-bases/{kb_id}/knowledge"): _clear_knowledge_base,
    ("DELETE", "/api/v1/knowledge/{knowledge_id}"): _delete_knowledge,
    ("POST", "/api/v1/knowledge-bases/{kb_id}/knowledge/url"): _create_knowledge_from_url,
    ("POST", "/api/v1/knowledge/batch-delete"): _batch_delete_knowledge,
    ("POST", "/api/v1/sessions"): _create_session,
    ("GET", "/api/v1/sessions"): _list_sessions,
    ("GET", "/api/v1/sessions/{session_id}"): _get_session,
    ("GET", "/api/v1/sessions/{session_id}/messages"): _list_messages,
    ("PUT", "/api/v1/sessions/{session_id}"): _update_session,
    ("DELETE", "/api/v1/sessions/{session_id}"): _delete_session,
    ("DELETE", "/api/v1/sessions/batch"): _batch_delete_sessions,
    ("DELETE", "/api/v1/sessions/{session_id}/messages"): _clear_session_messages,
    ("POST", "/api/v1/sessions/{session_id}/pin"): _pin_session,
    ("DELETE", "/api/v1/sessions/{session_id}/pin"): _unpin_session,
    ("POST", "/api/v1/sessions/{session_id}/generate_title"): _generate_title,
    ("POST", "/api/v1/knowledge-search"): _knowledge_search,
    ("POST", "/api/v1/keywords"): _keywords,
    ("POST", "/api/v1/sessions/{session_id}/fork"): _fork_session,
    ("POST", "/api/v1/sessions/{session_id}/rewind"): _rewind_session,
    ("PUT", "/api/v1/sessions/{session_id}/messages/{message_id}/feedback"): _message_feedback,
    ("GET", "/api/v1/knowledge-bases/{kb_id}/suggested-questions"): _suggested_questions,
    ("GET", "/api/v1/models"): _list_models,
    ("GET", "/api/v1/agents"): _list_agents,
    ("GET", "/api/v1/agents/{agent_id}"): _the_deployments("/api/v1/agents/builtin-quick-answer"),
    ("GET", "/api/v1/agents/{agent_id}/suggested-questions"): _agent_suggested_questions,
    ("GET", "/api/v1/initialization/config/{kb_id}"): _initialization_config,
    ("PUT", "/api/v1/initialization/config/{kb_id}"): _update_initialization_config,
    ("GET", "/api/v1/knowledge-bases/{kb_id}/knowledge/folders"): _knowledge_folders,
    ("GET", "/api/v1/sessions/{session_id}/messages/{message_id}/suggestions"): _message_suggestions("GET"),
    ("POST", "/api/v1/sessions/{session_id}/messages/{message_id}/suggestions"): _message_suggestions("POST"),
    ("GET", "/api/v1/system/info"): _the_deployments("/api/v1/system/info"),
    ("GET", "/api/v1/system/capabilities"): _the_deployments("/api/v1/system/capabilities"),
    ("GET", "/api/v1/system/parser-engines"): _the_deployments("/api/v1/system/parser-engines"),
    ("GET", "/api/v1/system/storage-engine-status"): _the_deployments("/api/v1/system/storage-engine-status"),
    ("GET", "/api/v1/tenants/kv/{key}"): _the_deployments("/api/v1/tenants/kv/retrieval-config"),
    ("GET", "/api/v1/organizations"): _the_deployments("/api/v1/organizations"),
    ("GET", "/api/v1/shared-knowledge-bases"): _the_deployments("/api/v1/shared-knowledge-bases"),
    ("GET", "/api/v1/shared-agents"): _the_deployments("/api/v1/shared-agents"),
    ("GET", "/api/v1/user/favorites"): _the_deployments("/api/v1/user/favorites", type="kb"),
    ("GET", "/api/v1/me/invitations/pending-count"): _the_deployments("/api/v1/me/invitations/pending-count"),
    ("GET", "/api/v1/im-channels"): _the_deployments("/api/v1/im-channels"),
    ("GET", "/api/v1/embed-channels"): _the_deployments("/api/v1/embed-channels"),
    ("GET", "/api/v1/mcp-services"): _the_deployments("/api/v1/mcp-services"),
    ("GET", "/api/v1/web-search-providers"): _the_deployments("/api/v1/web-search-providers"),
    ("GET", "/api/v1/vector-stores"): _the_deployments("/api/v1/vector-stores"),
    ("GET", "/api/v1/skills"): _the_deployments("/api/v1/skills"),
    ("POST", "/api/v1/sessions/{session_id}/questions"): _ask,
    ("POST", "/api/v1/knowledge-chat/{session_id}"): _knowledge_chat,
    ("POST", "/api/v1/agent-chat/{session_id}"): _agent_chat,
    ("GET", "/api/v1/sessions/{session_id}/messages/{message_id}/events"): _message_events,
    ("GET", "/api/v1/sessions/continue-stream/{session_id}"): _continue_stream,
    ("POST", "/api/v1/sessions/{session_id}/stop"): _stop,
    ("GET", "/api/v1/memories"): _list_memories,
    ("DELETE", "/api/v1/memories/{memory_id}"): _delete_memory,
    ("DELETE", "/api/v1/memories"): _delete_all_memories,
}
# Routes whose path names no session, message, knowledge base, document, chunk or memory: probed above for
# what they could leak (lists, names, ids in the body) rather than for a 404.
NO_ID_ROUTES = {
    ("GET", "/api/v1/faq/import/progress/{task_id}"),
    ("POST", "/api/v1/knowledge/batch-delete"),
    ("GET", "/api/v1/knowledge/search"),
    ("PUT", "/api/v1/knowledge/tags"),
    ("POST", "/api/v1/knowledge/batch-reparse"),
    ("POST", "/api/v1/knowledge-bases"),
    ("GET", "/api/v1/knowledge-bases"),
    ("POST", "/api/v1/sessions"),
    ("GET", "/api/v1/sessions"),
    ("DELETE", "/api/v1/sessions/batch"),
    ("POST", "/api/v1/knowledge-search"),
    ("POST", "/api/v1/keywords"),
    ("GET", "/api/v1/models"),
    ("GET", "/api/v1/memories"),
    ("DELETE", "/api/v1/memories"),
    # The built-in agent and the deployment's settings and (absent) features: the same for every tenant.
    ("GET", "/api/v1/agents"),
    ("GET", "/api/v1/agents/{agent_id}"),
    ("GET", "/api/v1/agents/{agent_id}/suggested-questions"),
    ("GET", "/api/v1/system/info"),
    ("GET", "/api/v1/system/capabilities"),
    ("GET", "/api/v1/system/parser-engines"),
    ("GET", "/api/v1/system/storage-engine-status"),
    ("GET", "/api/v1/tenants/kv/{key}"),
    ("GET", "/api/v1/organizations"),
    ("GET", "/api/v1/shared-knowledge-bases"),
    ("GET", "/api/v1/shared-agents"),
    ("GET", "/api/v1/user/favorites"),
    ("GET", "/api/v1/me/invitations/pending-count"),
    ("GET", "/api/v1/im-channels"),
    ("GET", "/api/v1/embed-channels"),
    ("GET", "/api/v1/mcp-services"),
    ("GET", "/api/v1/web-search-providers"),
    ("GET", "/api/v1/vector-stores"),
    ("GET", "/api/v1/skills"),
}
# ``url``: an image's handle (resource://images/<owner>/<n>), a question's or a document's.
ID_PARAMETERS = {
    "kb_id",
    "document_id",
    "knowledge_id",
    "chunk_id",
    "session_id",
    "message_id",
    "memory_id",
    "ids",
    "url",
}


def _flatten(routes: list[Any], prefix: str = "") -> Iterator[tuple[str, APIRoute]]:
    for route in routes:
        if isinstance(route, APIRoute):
            yield prefix + route.path, route
        elif (inner := getattr(route, "original_router", None)) is not None:
            # FastAPI 0.16x keeps an included router (the memory routes) as one entry of app.routes.
            context = getattr(route, "include_context", None)
            yield from _flatten(inner.routes, prefix + str(getattr(context, "prefix", "")))


def api_routes(world: World) -> dict[tuple[str, str], APIRoute]:
    """Every (method, path) the app serves under /api/, from its routes and, as a cross-check, its OpenAPI."""
    from ragline.server.embedded import build_embedded_app

    app = build_embedded_app(world.a.container)
    routes = {
        (method, path): route
        for path, route in _flatten(app.routes)
        if path.startswith("/api/")
        for method in route.methods
    }
    documented = {
        (method.upper(), path)
        for path, operations in app.openapi()["paths"].items()
        if path.startswith("/api/")
        for method in operations
    }
    assert documented <= set(routes), f"routes the enumeration missed: {sorted(documented - set(routes))}"
    return routes


# The web app's account routes (register, login, tokens) name no tenant's record: tests/integration/test_accounts.py.
ACCOUNT_PREFIX = "/api/v1/auth/"


def test_every_api_route_is_covered(world: World) -> None:
    routes = {key: route for key, route in api_routes(world).items() if not key[1].startswith(ACCOUNT_PREFIX)}
    assert set(COVERED) == set(routes), (
        f"routes without a tenant-isolation probe: {sorted(set(routes) - set(COVERED))}; "
        f"probes for routes that are gone: {sorted(set(COVERED) - set(routes))}"
    )
    for key, route in routes.items():
        names = {p.name for p in route.dependant.path_params} | {p.name for p in route.dependant.query_params}
        # Every route names an id of a tenant's record, or is listed as having none.
        assert bool(names & ID_PARAMETERS) != (key in NO_ID_ROUTES), (key, names)
        # And every one of them resolves the caller's tenant from X-API-Key.
        assert any(d.call.__name__ == "tenant_of" for d in _dependencies(route.dependant)), key


def _dependencies(dependant: Any) -> Iterator[Any]:
    for sub in dependant.dependencies:
        yield sub
        yield from _dependencies(sub)


@pytest.mark.parametrize(("method", "path"), list(COVERED))
def test_another_tenant_gets_404_and_no_key_gets_401(world: World, method: str, path: str) -> None:
    COVERED[(method, path)](world)
