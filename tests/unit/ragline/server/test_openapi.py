"""OpenAPI shows the shape of every reply: a JSON schema for each JSON route, an event stream for SSE."""

from typing import Any, cast

import pytest

from ragline.container import Container
from ragline.runtime.turns import TurnLauncher
from ragline.server.app import create_app


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    # Generating the schema reads the routes only; no container or launcher is called.
    return create_app(cast(Container, None), cast(TurnLauncher, None)).openapi()


def _operations(openapi: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, operation)
        for path, item in openapi["paths"].items()
        for method, operation in item.items()
        if path.startswith("/api/v1/")
    ]


def test_every_reply_has_a_shape(openapi: dict[str, Any]) -> None:
    shapeless = []
    for method, path, operation in _operations(openapi):
        success = {code: reply for code, reply in operation["responses"].items() if code.startswith("2")}
        content = [media for reply in success.values() for media in reply.get("content", {}).items()]
        # A JSON reply is a named model (its fields listed), never a bare "object"; SSE says it streams.
        if not content or not all(
            kind == "text/event-stream" or "$ref" in media.get("schema", {}) for kind, media in content
        ):
            shapeless.append(f"{method} {path}")
    assert not shapeless, shapeless


def test_list_replies_name_their_items(openapi: dict[str, Any]) -> None:
    schemas = openapi["components"]["schemas"]
    reply = openapi["paths"]["/api/v1/knowledge-bases"]["get"]["responses"]["200"]["content"]["application/json"]
    listing = schemas[reply["schema"]["$ref"].rsplit("/", 1)[1]]
    item_ref = listing["properties"]["items"]["items"]["$ref"]
    assert "document_count" in schemas[item_ref.rsplit("/", 1)[1]]["properties"]


def test_the_routes_of_the_api_are_all_there(openapi: dict[str, Any]) -> None:
    routes = {(method, path) for method, path, _ in _operations(openapi)}
    assert {
        ("POST", "/api/v1/knowledge-bases"),
        ("GET", "/api/v1/knowledge-bases/{kb_id}"),
        ("POST", "/api/v1/knowledge-bases/{kb_id}/documents"),
        ("POST", "/api/v1/knowledge-bases/{kb_id}/faq"),
        ("GET", "/api/v1/knowledge-bases/{kb_id}/documents/{document_id}/chunks"),
        ("GET", "/api/v1/chunks/{chunk_id}"),
        ("POST", "/api/v1/sessions"),
        ("GET", "/api/v1/sessions/{session_id}/messages"),
        ("POST", "/api/v1/knowledge-search"),
        ("POST", "/api/v1/sessions/{session_id}/questions"),
        ("POST", "/api/v1/knowledge-chat/{session_id}"),
        ("GET", "/api/v1/sessions/continue-stream/{session_id}"),
        ("POST", "/api/v1/sessions/{session_id}/stop"),
        ("GET", "/api/v1/memories"),
    } <= routes
