"""The memory routes mounted on a small app: list and delete one's own memories, errors as the API's."""

from __future__ import annotations

from typing import Annotated

import pytest
from fastapi import FastAPI, Header
from fastapi.testclient import TestClient

from ragline.memory.models import new_memory
from ragline.server.errors import ApiError, install_error_handlers
from ragline.server.routes.memories import MEMORIES_PATH, memory_router
from ragline.store.models import Tenant

TENANTS = {
    "key-1": Tenant(id="t-1", name="one", created_at="2024-01-01T00:00:00.000+00:00"),
    "key-2": Tenant(id="t-2", name="two", created_at="2024-01-01T00:00:00.000+00:00"),
}


def fake_tenant(x_api_key: Annotated[str | None, Header()] = None) -> Tenant:
    tenant = TENANTS.get(x_api_key or "")
    if tenant is None:
        raise ApiError(401, "unauthorized", "a valid X-API-Key header is required", "X-API-Key")
    return tenant


@pytest.fixture
def client(sqlite_store):
    app = FastAPI()
    install_error_handlers(app)
    app.include_router(memory_router(lambda: sqlite_store, fake_tenant))
    with TestClient(app) as test_client:
        yield test_client


def headers(user: str | None = "alice", key: str = "key-1") -> dict[str, str]:
    values = {"X-API-Key": key}
    if user is not None:
        values["X-User-Id"] = user
    return values


def add(store, content, tenant="t-1", user="alice", vector=None):
    return store.add(new_memory(tenant, user, content, "sess-1", "msg-1"), vector)


def test_list_shows_only_the_callers_memories_without_vectors(client, sqlite_store):
    mine = add(sqlite_store, "The user works at Acme.", vector=[0.6, 0.8])
    add(sqlite_store, "The user works at Globex.", user="bob")
    add(sqlite_store, "The user works at Initech.", tenant="t-2")
    response = client.get(MEMORIES_PATH, headers=headers())
    assert response.status_code == 200
    [item] = response.json()["data"]
    assert item == {
        "id": mine.id,
        "user_id": "alice",
        "content": "The user works at Acme.",
        "source_session_id": "sess-1",
        "source_message_id": "msg-1",
        "created_at": mine.created_at,
        "updated_at": mine.updated_at,
    }


def test_without_user_header_the_default_user_is_used(client, sqlite_store):
    add(sqlite_store, "The user likes tea.", user="")
    add(sqlite_store, "The user likes coffee.")
    items = client.get(MEMORIES_PATH, headers=headers(user=None)).json()["data"]
    assert [i["content"] for i in items] == ["The user likes tea."]


def test_delete_one(client, sqlite_store):
    memory = add(sqlite_store, "The user works at Acme.")
    response = client.delete(f"{MEMORIES_PATH}/{memory.id}", headers=headers())
    assert response.status_code == 200
    assert response.json() == {"success": True, "data": {"id": memory.id, "deleted": True}}
    assert sqlite_store.list("t-1", "alice") == []


def test_deleting_another_users_or_unknown_memory_is_not_found(client, sqlite_store):
    theirs = add(sqlite_store, "The user works at Globex.", user="bob")
    other_tenant = add(sqlite_store, "The user works at Initech.", tenant="t-2", user="alice")
    for memory_id in (theirs.id, other_tenant.id, "no-such-id"):
        response = client.delete(f"{MEMORIES_PATH}/{memory_id}", headers=headers())
        assert response.status_code == 404
        assert response.json() == {
            "success": False,
            "error": {"code": 1003, "type": "not_found", "message": "memory not found", "field": "memory_id"},
        }
    assert len(sqlite_store.list("t-1", "bob")) == 1
    assert len(sqlite_store.list("t-2", "alice")) == 1


def test_delete_all_returns_the_count(client, sqlite_store):
    add(sqlite_store, "The user works at Acme.")
    add(sqlite_store, "The user lives in Berlin.")
    add(sqlite_store, "The user works at Globex.", user="bob")
    response = client.delete(MEMORIES_PATH, headers=headers())
    assert response.status_code == 200
    assert response.json()["data"] == {"deleted": 2}
    assert client.delete(MEMORIES_PATH, headers=headers()).json()["data"] == {"deleted": 0}
    assert len(sqlite_store.list("t-1", "bob")) == 1


def test_the_tenant_dependency_guards_every_route(client):
    for method, path in (("GET", MEMORIES_PATH), ("DELETE", MEMORIES_PATH), ("DELETE", f"{MEMORIES_PATH}/x")):
        response = client.request(method, path, headers={"X-User-Id": "alice"})
        assert response.status_code == 401
        assert response.json()["error"]["type"] == "unauthorized"


def test_an_oversized_user_id_is_a_validation_error(client):
    response = client.get(MEMORIES_PATH, headers=headers(user="u" * 201))
    assert response.status_code == 422
    assert response.json()["error"]["type"] == "invalid_field"
