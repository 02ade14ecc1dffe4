"""The web app's accounts on the deployed stack: tokens signed with the secret template.yaml generates in Secrets
Manager, read by the functions that verify tokens through their own grants.

Register and sign in through API Gateway → ``ingest_turn``; the token opens the user's tenant on the API and on
``stream_reader``'s function URL (a signed-in user follows an answer there); it verifies with the secret's value
and with nothing else, no table holds the secret, each container reads it once, and without the grant no token is
issued (the call is refused as AWS refuses it).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import jwt
import pytest

from tests.support.scripted_model import Script
from tests.support.serverless import FUNCTION_CONCURRENCY, DeployedStack, stack_client
from tests.support.sse import answer_text, read_frames

PASSWORD = "Passw0rd2024"
READ_SECRET = "secretsmanager:GetSecretValue"
# A reply takes as long as it takes on a loaded machine (pytest-timeout is the safety net); connecting is bounded.
WAIT_FOR_REPLY = httpx.Timeout(None, connect=60.0)


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def anonymous(aws_stack: DeployedStack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=aws_stack.api_url, timeout=WAIT_FOR_REPLY) as client:
        yield client


def _sign_up(client: httpx.Client, email: str) -> dict[str, Any]:
    """Register (a new tenant), then sign in: the login reply."""
    registered = client.post("/api/v1/auth/register", json={"username": "ada", "email": email, "password": PASSWORD})
    assert registered.status_code == 201, registered.text
    login = client.post("/api/v1/auth/login", json={"email": email, "password": PASSWORD})
    assert login.status_code == 200, login.text
    return {**login.json(), "api_key": registered.json()["tenant"]["api_key"]}


def _secret(stack: DeployedStack) -> str:
    arn = stack.refs["TokenSigningSecret"]
    return str(stack.client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"])


def test_tokens_are_signed_with_the_secret_the_template_generated(
    aws_stack: DeployedStack, anonymous: httpx.Client
) -> None:
    stack = aws_stack
    since = len(stack.calls())
    signed_in = _sign_up(anonymous, "ada@example.com")
    token, refresh = signed_in["token"], signed_in["refresh_token"]
    # Both tokens verify with the value Secrets Manager holds, and with nothing else.
    secret = _secret(stack)
    claims = jwt.decode(token, secret, algorithms=["HS256"], issuer="ragline")
    assert claims["typ"] == "access"
    assert jwt.decode(refresh, secret, algorithms=["HS256"], issuer="ragline")["typ"] == "refresh"
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(token, secret[::-1], algorithms=["HS256"], issuer="ragline")
    # The token opens the user's own tenant on the API, as its API key does.
    for _ in range(3):
        assert anonymous.get("/api/v1/auth/me", headers=_bearer(token)).status_code == 200
    created = anonymous.post("/api/v1/knowledge-bases", json={"name": "ada-kb"}, headers=_bearer(token))
    assert created.status_code == 201, created.text
    by_key = anonymous.get("/api/v1/knowledge-bases", headers={"X-API-Key": signed_in["api_key"]})
    assert [kb["id"] for kb in by_key.json()["data"]] == [created.json()["data"]["id"]]
    renewed = anonymous.post("/api/v1/auth/refresh", json={"refreshToken": refresh})
    assert renewed.status_code == 200, renewed.text
    # No table holds the secret: the tenants table has users, e-mail claims and tenants only.
    items = stack.table("TenantsTable").scan()["Items"]
    assert not [i for i in items if str(i["pk"]).startswith("secret")]
    assert not [i for i in items if secret in {str(v) for v in i.values()}]
    # ingest_turn read it through its grant, on the secret's ARN, once per container (not once per request).
    reads = [c for c in stack.calls()[since:] if c.action == READ_SECRET]
    assert reads
    assert {(c.function, c.resource, c.allowed) for c in reads} == {
        ("IngestTurnFunction", stack.refs["TokenSigningSecret"], True)
    }
    assert len(reads) <= FUNCTION_CONCURRENCY["IngestTurnFunction"] < 7  # 7 requests signed or verified a token
    stack.assert_no_denials(since)


def test_a_signed_in_user_follows_an_answer_on_the_stream_url_and_a_forged_token_opens_nothing(
    aws_stack: DeployedStack, anonymous: httpx.Client, scripted: Any
) -> None:
    stack = aws_stack
    since = len(stack.calls())
    token = _sign_up(anonymous, "grace@example.com")["token"]
    session = anonymous.post("/api/v1/sessions", json={"knowledge_base_ids": []}, headers=_bearer(token))
    assert session.status_code == 201, session.text
    session_id = session.json()["data"]["id"]
    scripted.queue(Script.answer("Signed ", "in."))
    asked = anonymous.post(
        f"/api/v1/sessions/{session_id}/questions", json={"query": "Who am I?"}, headers=_bearer(token)
    )
    assert asked.status_code == 202, asked.text
    events = f"api/v1/sessions/{session_id}/messages/{asked.json()['data']['assistant_message_id']}/events"
    with httpx.Client(base_url=stack.stream_url, timeout=WAIT_FOR_REPLY) as reader:
        frames = read_frames(reader, "GET", events, headers=_bearer(token))
        assert frames[-1].type == "complete"
        assert answer_text(frames) == "Signed in."
        # The same claims signed with another secret: refused by both functions, in the error format.
        claims = jwt.decode(token, options={"verify_signature": False})
        forged = jwt.encode({**claims, "exp": int(time.time()) + 600}, "not-the-secret" * 4, algorithm="HS256")
        for client, path in ((reader, events), (anonymous, f"/api/v1/sessions/{session_id}")):
            refused = client.get(path, headers=_bearer(forged))
            assert refused.status_code == 401, refused.text
            assert refused.json()["error"]["type"] == "unauthorized"
            assert "secret" not in refused.text.lower()
    # Another tenant's API key does not reach the user's session.
    with stack_client(stack) as other:
        assert other.api.get(f"/api/v1/sessions/{session_id}").status_code == 404
    readers = {c.function for c in stack.calls()[since:] if c.action == READ_SECRET}
    assert "StreamReaderFunction" in readers
    stack.assert_no_denials(since)


def test_without_its_grant_ingest_turn_issues_no_token(aws_stack: DeployedStack, anonymous: httpx.Client) -> None:
    """The grant is what lets the function read the secret: the role without it is refused, as AWS refuses it."""
    stack = aws_stack
    arn = stack.refs["TokenSigningSecret"]
    _sign_up(anonymous, "linus@example.com")
    statements = [
        s for s in stack.resolver.role_statements("IngestTurnFunctionRole") if arn not in str(s.get("Resource"))
    ]
    since = len(stack.calls())
    with stack.role_statements("IngestTurnFunction", statements):
        login = anonymous.post("/api/v1/auth/login", json={"email": "linus@example.com", "password": PASSWORD})
        assert login.status_code == 500, login.text
        assert arn not in login.text
    denied = stack.denials(since)
    assert [(c.function, c.action, c.resource) for c in denied] == [("IngestTurnFunction", READ_SECRET, arn)]
    # With the template's grant again (fresh containers), the same login succeeds.
    login = anonymous.post("/api/v1/auth/login", json={"email": "linus@example.com", "password": PASSWORD})
    assert login.status_code == 200, login.text
