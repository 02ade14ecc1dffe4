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
        # A JSON reply is a named model (its fields listed), never a bare "object"; SSE says it streams;
        # a file (a CSV export, a document's original, a stored image) is a string of its media type.
        if not content or not all(
            kind == "text/event-stream"
            or "$ref" in media.get("schema", {})
            or (
                (kind in ("text/csv", "application/octet-stream") or kind.startswith("image/"))
                and media.get("schema", {}).get("type") == "string"
            )
            for kind, media in content
        ):
            shapeless.append(f"{method} {path}")
    assert not shapeless, shapeless


def _schema(openapi: dict[str, Any], ref: str) -> dict[str, Any]:
    return dict(openapi["components"]["schemas"][ref.rsplit("/", 1)[1]])


def test_replies_are_enveloped_and_list_replies_name_their_items(openapi: dict[str, Any]) -> None:
    reply = openapi["paths"]["/api/v1/knowledge-bases"]["get"]["responses"]["200"]["content"]["application/json"]
    envelope = _schema(openapi, reply["schema"]["$ref"])
    assert {"success", "data"} <= set(envelope["properties"])
    item = _schema(openapi, envelope["properties"]["data"]["items"]["$ref"])
    # WeKnora's fields (knowledge_count, a numeric tenant_id) and ragline's (document_count).
    assert {"knowledge_count", "document_count", "tenant_id"} <= set(item["properties"])
    assert item["properties"]["tenant_id"]["type"] == "integer"


def test_paged_lists_say_their_page(openapi: dict[str, Any]) -> None:
    reply = openapi["paths"]["/api/v1/sessions"]["get"]["responses"]["200"]["content"]["application/json"]
    assert {"data", "total", "page", "page_size"} <= set(_schema(openapi, reply["schema"]["$ref"])["properties"])


def test_the_routes_of_the_api_are_all_there(openapi: dict[str, Any]) -> None:
    routes = {(method, path) for method, path, _ in _operations(openapi)}
    assert {
        ("POST", "/api/v1/knowledge-bases"),
        ("GET", "/api/v1/knowledge-bases/{kb_id}"),
        ("POST", "/api/v1/knowledge-bases/{kb_id}/documents"),
        ("POST", "/api/v1/knowledge-bases/{kb_id}/faq"),
        ("GET", "/api/v1/knowledge-bases/{kb_id}/documents/{document_id}/chunks"),
        ("GET", "/api/v1/chunks/by-id/{chunk_id}"),
        ("GET", "/api/v1/chunks/{knowledge_id}"),
        ("POST", "/api/v1/knowledge-bases/{kb_id}/hybrid-search"),
        ("POST", "/api/v1/knowledge-bases/{kb_id}/knowledge/file"),
        ("POST", "/api/v1/knowledge-bases/{kb_id}/knowledge/manual"),
        ("GET", "/api/v1/knowledge-bases/{kb_id}/knowledge"),
        ("GET", "/api/v1/knowledge/batch"),
        ("GET", "/api/v1/knowledge/{knowledge_id}"),
        ("GET", "/api/v1/messages/{session_id}/load"),
        ("POST", "/api/v1/agent-chat/{session_id}"),
        ("POST", "/api/v1/sessions"),
        ("GET", "/api/v1/sessions/{session_id}/messages"),
        ("POST", "/api/v1/knowledge-search"),
        ("POST", "/api/v1/sessions/{session_id}/questions"),
        ("POST", "/api/v1/knowledge-chat/{session_id}"),
        ("GET", "/api/v1/sessions/continue-stream/{session_id}"),
        ("POST", "/api/v1/sessions/{session_id}/stop"),
        ("GET", "/api/v1/memories"),
    } <= routes


def _unbounded(openapi: dict[str, Any], schema: dict[str, Any], path: str, seen: frozenset[str]) -> list[str]:
    """Strings without a maxLength and arrays without a maxItems anywhere under ``schema``."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        return [] if name in seen else _unbounded(openapi, _schema(openapi, schema["$ref"]), path, seen | {name})
    found = [
        hit
        for key in ("anyOf", "oneOf", "allOf")
        for sub in schema.get(key, [])
        for hit in _unbounded(openapi, sub, path, seen)
    ]
    kind = schema.get("type")
    if kind == "string" and not {"maxLength", "enum", "const"} & schema.keys() and schema.get("format") != "binary":
        found.append(path)
    if kind == "array":
        if "maxItems" not in schema:
            found.append(f"{path}[] (no maxItems)")
        found += _unbounded(openapi, schema.get("items", {}), f"{path}[]", seen)
    for name, sub in schema.get("properties", {}).items():
        found += _unbounded(openapi, sub, f"{path}.{name}", seen)
    if isinstance(schema.get("additionalProperties"), dict):
        found += _unbounded(openapi, schema["additionalProperties"], f"{path}.*", seen)
    return found


def test_every_string_and_list_a_body_or_query_carries_is_bounded(openapi: dict[str, Any]) -> None:
    # The length is checked before the content (pydantic's maxLength runs before any validator that reads
    # the characters): a 19 MB value in a field without one kept the event loop busy for 15-42 s.
    unbounded = []
    for method, path, operation in _operations(openapi):
        for kind, media in operation.get("requestBody", {}).get("content", {}).items():
            unbounded += _unbounded(openapi, media.get("schema", {}), f"{method} {path} {kind}", frozenset())
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "query":
                unbounded += _unbounded(
                    openapi, parameter.get("schema", {}), f"{method} {path} ?{parameter['name']}", frozenset()
                )
    assert not unbounded, "\n".join(unbounded)
