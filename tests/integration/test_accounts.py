"""WeKnora's account routes over real HTTP: register, login, tokens on the API, refresh, logout, password change.

A registered user gets their own tenant; their access token authenticates every route beside the API keys and
reaches only their tenant; forged, expired-kind and revoked tokens answer 401 in the error format.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import jwt
import pytest

from tests.conftest import Ragline, start_ragline
from tests.support.polling import CLIENT_TIMEOUT


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, shared_models: Any) -> Iterator[Ragline]:
    thread, handle = start_ragline(tmp_path_factory.mktemp("accounts") / "data", shared_models)
    yield handle
    handle.client.close()
    thread.stop()
    handle.container.close()


def _anonymous(server: Ragline) -> httpx.Client:
    return httpx.Client(base_url=server.url, timeout=CLIENT_TIMEOUT)


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_register_login_and_the_token_reaches_only_the_users_tenant(server: Ragline) -> None:
    with _anonymous(server) as client:
        reply = client.post(
            "/api/v1/auth/register", json={"username": "alice", "email": "Alice@Example.com", "password": "secret123"}
        )
        assert reply.status_code == 201, reply.text
        body = reply.json()
        assert body["user"]["email"] == "alice@example.com"
        assert body["tenant"]["api_key"].startswith("rl-")
        assert "password" not in reply.text
        again = client.post(
            "/api/v1/auth/register", json={"username": "alice2", "email": "alice@example.com", "password": "secret123"}
        )
        assert again.status_code == 409
        assert again.json()["error"]["field"] == "email"

        login = client.post("/api/v1/auth/login", json={"email": "alice@example.com", "password": "secret123"})
        assert login.status_code == 200, login.text
        token, refresh = login.json()["token"], login.json()["refresh_token"]
        assert login.json()["user"]["tenant_id"] == body["tenant"]["id"]

        me = client.get("/api/v1/auth/me", headers=_bearer(token)).json()["data"]
        assert me["user"]["email"] == "alice@example.com"
        assert me["tenant"]["id"] == body["tenant"]["id"]
        assert client.get("/api/v1/auth/validate", headers=_bearer(token)).json()["valid"] is True

        created = client.post("/api/v1/knowledge-bases", json={"name": "alice-kb"}, headers=_bearer(token))
        assert created.status_code == 201, created.text
        kb = created.json()["data"]["id"]
        # The same tenant by its API key; the default tenant's key does not see it.
        by_key = client.get("/api/v1/knowledge-bases", headers={"X-API-Key": body["tenant"]["api_key"]})
        assert kb in {k["id"] for k in by_key.json()["data"]}
        assert server.client.get(f"/api/v1/knowledge-bases/{kb}").status_code == 404

        # A refresh token is not an access token; used once, it is spent.
        assert client.get("/api/v1/knowledge-bases", headers=_bearer(refresh)).status_code == 401
        renewed = client.post("/api/v1/auth/refresh", json={"refreshToken": refresh})
        assert renewed.status_code == 200, renewed.text
        assert client.post("/api/v1/auth/refresh", json={"refreshToken": refresh}).status_code == 401
        fresh = renewed.json()["access_token"]
        assert client.get("/api/v1/knowledge-bases", headers=_bearer(fresh)).status_code == 200

        # Logout revokes that token, not the others.
        assert client.post("/api/v1/auth/logout", headers=_bearer(fresh)).status_code == 200
        assert client.get("/api/v1/knowledge-bases", headers=_bearer(fresh)).status_code == 401
        assert client.get("/api/v1/knowledge-bases", headers=_bearer(token)).status_code == 200


def test_bad_credentials_and_forged_tokens_get_401_and_logins_are_throttled(server: Ragline) -> None:
    with _anonymous(server) as client:
        client.post("/api/v1/auth/register", json={"username": "bob", "email": "bob@example.com", "password": "pw1234"})
        wrong = client.post("/api/v1/auth/login", json={"email": "bob@example.com", "password": "nope"})
        assert wrong.status_code == 401
        assert wrong.json()["error"]["type"] == "unauthorized"
        unknown = client.post("/api/v1/auth/login", json={"email": "nobody@example.com", "password": "nope"})
        assert unknown.status_code == 401
        assert unknown.json()["error"]["message"] == wrong.json()["error"]["message"]

        forged = jwt.encode(
            {"sub": "x", "tid": "y", "typ": "access", "iss": "ragline"},
            "a guessed secret of thirty-two bytes!",
            algorithm="HS256",
        )
        for token in (forged, "a.b.c"):
            reply = client.get("/api/v1/knowledge-bases", headers=_bearer(token))
            assert reply.status_code == 401
            assert reply.json()["error"]["field"] == "Authorization"
            assert client.get("/api/v1/auth/me", headers=_bearer(token)).status_code == 401

        statuses = [
            client.post("/api/v1/auth/login", json={"email": "bob@example.com", "password": "bad"}).status_code
            for _ in range(5)
        ]
        assert statuses[-1] == 429
        assert 401 in statuses
        # Throttled even with the right password, until the window passes.
        right = client.post("/api/v1/auth/login", json={"email": "bob@example.com", "password": "pw1234"})
        assert right.status_code == 429
        assert int(right.headers["Retry-After"]) > 0


def test_change_password_refuses_old_tokens(server: Ragline) -> None:
    with _anonymous(server) as client:
        client.post(
            "/api/v1/auth/register", json={"username": "carol", "email": "c@example.com", "password": "first123"}
        )
        token = client.post("/api/v1/auth/login", json={"email": "c@example.com", "password": "first123"}).json()[
            "token"
        ]
        weak = client.post(
            "/api/v1/auth/change-password",
            json={"old_password": "first123", "new_password": "short"},
            headers=_bearer(token),
        )
        assert weak.status_code == 400
        assert weak.json()["error"]["details"] == "password_policy"
        done = client.post(
            "/api/v1/auth/change-password",
            json={"old_password": "first123", "new_password": "second456"},
            headers=_bearer(token),
        )
        assert done.status_code == 200, done.text
        assert client.get("/api/v1/auth/me", headers=_bearer(token)).status_code == 401
        assert (
            client.post("/api/v1/auth/login", json={"email": "c@example.com", "password": "second456"}).status_code
            == 200
        )


def test_public_auth_config(server: Ragline) -> None:
    with _anonymous(server) as client:
        assert client.get("/api/v1/auth/config").json() == {"success": True, "registration_mode": "self_serve"}
        assert client.get("/api/v1/auth/oidc/config").json()["enabled"] is False
        setup = client.post("/api/v1/auth/auto-setup", json={})
        assert setup.status_code == 403
        assert setup.json()["success"] is False
