"""One tenant of ragline over HTTP on either runtime, for tests that hold both to the same contract.

``api`` is parametrised: ``embedded`` is a ``ragline serve`` app on a real port (a fresh server and data
directory per test); ``aws`` is template.yaml deployed in moto with each function in sandboxes of its own and
every call checked against its role (``tests/support/serverless.py``), a fresh tenant per test, searching the
live OpenSearch. A test written against ``api`` runs as a WeKnora client would against each: the API at
``client`` (ingest_turn behind API Gateway on AWS) and a turn's stream at ``stream`` (stream_reader's function
URL on AWS; the same server when embedded).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.support.sse import Frame, read_frames


@dataclass
class Api:
    runtime: str
    url: str
    key: str
    client: httpx.Client
    stream: httpx.Client
    _create_kb: Callable[[str, dict[str, str] | None], str]
    _new_tenant: Callable[[str], str]

    @property
    def deployed(self) -> bool:
        return self.runtime == "aws"

    def create_kb(self, name: str, docs: dict[str, str] | None = None) -> str:
        """A knowledge base with ``docs`` (title → Markdown), every one indexed (vectors included)."""
        return self._create_kb(name, docs)

    def new_tenant(self, name: str) -> str:
        """Another tenant of the same deployment: its API key."""
        return self._new_tenant(name)

    def session(self, kb_ids: list[str]) -> str:
        reply = self.client.post("/api/v1/sessions", json={"knowledge_base_ids": kb_ids})
        assert reply.status_code == 201, reply.text
        return str(reply.json()["data"]["id"])

    def ask(self, session_id: str, query: str, **options: Any) -> dict[str, Any]:
        """ragline's split form: the question accepted (202), its stream read apart."""
        reply = self.client.post(f"/api/v1/sessions/{session_id}/questions", json={"query": query, **options})
        assert reply.status_code == 202, reply.text
        return dict(reply.json()["data"])

    def chat(self, session_id: str, query: str, **options: Any) -> list[Frame]:
        """WeKnora's knowledge-chat to its end (on AWS, API Gateway hands the stream over whole)."""
        return read_frames(
            self.client, "POST", f"/api/v1/knowledge-chat/{session_id}", json={"query": query, **options}
        )


def _embedded(request: pytest.FixtureRequest) -> Api:
    ragline = request.getfixturevalue("ragline")
    container = ragline.container

    def new_tenant(name: str) -> str:
        return str(container.tenants.create(name)[1])

    return Api(
        "embedded",
        ragline.url,
        ragline.key,
        ragline.client,
        ragline.client,
        lambda name, docs: str(ragline.create_kb(name, docs)),
        new_tenant,
    )


def _deployed(request: pytest.FixtureRequest) -> Api:
    aws = request.getfixturevalue("aws")
    request.getfixturevalue("aws_search")  # searches run on the live OpenSearch (skipped without it; CI fails)

    def new_tenant(name: str) -> str:
        return str(aws.stack.create_tenant(f"{name}-{aws.tenant.id[:8]}")[1])

    return Api(
        "aws",
        aws.stack.api_url,
        aws.key,
        aws.api,
        aws.stream,
        lambda name, docs: str(aws.kb(docs, name=name)),
        new_tenant,
    )


@pytest.fixture(params=["embedded", "aws"])
def api(request: pytest.FixtureRequest) -> Api:
    return _embedded(request) if request.param == "embedded" else _deployed(request)
