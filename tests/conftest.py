"""Shared fixtures: the scripted model server, a ragline server per test, an HTTP client."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import settings

from tests.support.polling import CLIENT_TIMEOUT
from tests.support.scripted_model import ScriptedModel
from tests.support.servers import ServerThread
from tests.support.sse import Frame, read_frames

# Property tests (hypothesis): the same examples on every run (a failure reproduces; a flaky test is a bug),
# no example database written into the checkout, and no per-example deadline on a shared machine.
settings.register_profile("ragline", derandomize=True, database=None, deadline=None)
settings.load_profile("ragline")

os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")

# The live OpenSearch and Neo4j fixtures (opensearch, opensearch_client, opensearch_index, neo4j_server), and
# aws_stack / aws / aws_search: template.yaml deployed in moto, its functions run in sandboxes of their own.
pytest_plugins = ["tests.support.engines", "tests.support.serverless", "tests.support.runtimes"]


@pytest.fixture(scope="session")
def scripted() -> Iterator[ScriptedModel]:
    model = ScriptedModel()
    server = ServerThread(model.app).start()
    model.url = server.url  # type: ignore[attr-defined]
    yield model
    server.stop()


@pytest.fixture(scope="session")
def shared_models(scripted: ScriptedModel) -> Any:
    """One model registry for the session: the ONNX embedder loads once; chat goes to the scripted server."""
    from ragline.config import Settings, load_config
    from ragline.container import build_models

    config, _ = load_config()
    settings = Settings(chat_base_url=f"{scripted.url}/v1", chat_model="scripted", chat_api_key="test")  # type: ignore[attr-defined]
    return build_models(settings, config)


@pytest.fixture
def fresh_scripts(scripted: ScriptedModel) -> Iterator[None]:
    scripted.queue()  # nothing queued from an earlier test survives
    yield
    scripted._queue.clear()
    scripted.understanding.clear()
    scripted.received.clear()


@dataclass
class Ragline:
    url: str
    key: str
    container: Any
    client: httpx.Client

    def create_kb(self, name: str, docs: dict[str, str] | None = None) -> str:
        reply = self.client.post("/api/v1/knowledge-bases", json={"name": name})
        assert reply.status_code == 201, reply.text
        kb_id = str(reply.json()["data"]["id"])
        for title, content in (docs or {}).items():
            # wait: the vectors too, so a test's first search sees the document as every later one does.
            added = self.client.post(
                f"/api/v1/knowledge-bases/{kb_id}/documents?wait=true", json={"title": title, "content": content}
            )
            assert added.status_code == 201, added.text
            assert added.json()["data"]["status"] == "indexed", added.text
        return kb_id

    def session(self, kb_ids: list[str]) -> str:
        reply = self.client.post("/api/v1/sessions", json={"knowledge_base_ids": kb_ids})
        assert reply.status_code == 201, reply.text
        return str(reply.json()["data"]["id"])

    def chat(self, session_id: str, query: str, **options: Any) -> list[Frame]:
        return read_frames(
            self.client, "POST", f"/api/v1/knowledge-chat/{session_id}", json={"query": query, **options}
        )

    def ask(self, session_id: str, query: str, **options: Any) -> dict[str, Any]:
        reply = self.client.post(f"/api/v1/sessions/{session_id}/questions", json={"query": query, **options})
        assert reply.status_code == 202, reply.text
        return dict(reply.json()["data"])

    def events(self, session_id: str, message_id: str, **kwargs: Any) -> list[Frame]:
        return read_frames(self.client, "GET", f"/api/v1/sessions/{session_id}/messages/{message_id}/events", **kwargs)

    def messages(self, session_id: str) -> list[dict[str, Any]]:
        reply = self.client.get(f"/api/v1/sessions/{session_id}/messages")
        assert reply.status_code == 200, reply.text
        return list(reply.json()["data"])


def start_ragline(data_dir: Path, models: Any, **settings: Any) -> tuple[ServerThread, Ragline]:
    from ragline.bootstrap import ensure_default_tenant
    from ragline.config import Settings
    from ragline.container import Container
    from ragline.server.embedded import build_embedded_app

    container = Container.embedded(Settings(data_dir=data_dir, **settings), models=models)
    _, key = ensure_default_tenant(container)
    server = ServerThread(build_embedded_app(container)).start()
    client = httpx.Client(base_url=server.url, headers={"X-API-Key": key}, timeout=CLIENT_TIMEOUT)
    return server, Ragline(server.url, key, container, client)


@pytest.fixture
def ragline(tmp_path: Path, shared_models: Any) -> Iterator[Ragline]:
    server, handle = start_ragline(tmp_path / "data", shared_models)
    yield handle
    handle.client.close()
    server.stop()
    handle.container.close()


@pytest.fixture(scope="session")
def ocr_engine() -> Any:
    """The OCR engine, loaded once for the session (`make install` installs it; its models ship in the wheel)."""
    from ragline.models.rapid_ocr import RapidOcr

    engine = RapidOcr()
    engine.load()
    return engine
