"""A client that reads replies the way WeKnora's own clients do (its Go package ``client/``, read, not
copied): raw SSE lines where ``event:`` is compared as written, JSON decoded into fixed types.

The checks are the ones a Go ``json.Unmarshal`` into WeKnora's structs would make: a number where the
struct has ``uint64``/``int`` (``tenant_id``, ``match_type``, ``chunk_index``), a string where it has
``string`` (ids), a string map where it has ``map[string]string`` (a search result's ``metadata``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx


class WireTypeError(AssertionError):
    """What a Go client would fail with: a JSON value of the wrong type for WeKnora's struct."""


def _check(value: Any, kind: type | tuple[type, ...], where: str) -> None:
    if isinstance(value, bool) and kind in (int, (int, float)):
        raise WireTypeError(f"{where}: {value!r} is not a number")
    if not isinstance(value, kind):
        raise WireTypeError(f"{where}: {value!r} is not {kind}")


def check_search_result(result: dict[str, Any], where: str = "search result") -> None:
    """WeKnora's ``SearchResult``: the fields a Go client decodes and their types."""
    _check(result["id"], str, f"{where}.id")
    _check(result["content"], str, f"{where}.content")
    _check(result["knowledge_id"], str, f"{where}.knowledge_id")
    for name in ("chunk_index", "match_type", "start_at", "end_at"):
        _check(result.get(name, 0), int, f"{where}.{name}")
    _check(result.get("score", 0.0), (int, float), f"{where}.score")
    metadata = result.get("metadata")
    if metadata is not None:
        _check(metadata, dict, f"{where}.metadata")
        for key, value in metadata.items():
            _check(value, str, f"{where}.metadata[{key}]")
    sub = result.get("sub_chunk_id")
    if sub is not None:
        _check(sub, list, f"{where}.sub_chunk_id")


def check_record(record: dict[str, Any], where: str) -> None:
    """Any WeKnora record: a string id and, when present, a numeric tenant id."""
    _check(record["id"], str, f"{where}.id")
    if "tenant_id" in record:
        _check(record["tenant_id"], int, f"{where}.tenant_id")


@dataclass
class StreamResponse:
    """One frame as WeKnora's ``StreamResponse``."""

    id: str
    response_type: str
    content: str
    done: bool
    knowledge_references: list[dict[str, Any]] | None
    session_id: str
    assistant_message_id: str
    data: dict[str, Any] | None


def _frame(payload: str) -> StreamResponse:
    raw = json.loads(payload)
    _check(raw["id"], str, "frame.id")
    _check(raw["response_type"], str, "frame.response_type")
    _check(raw.get("content", ""), str, "frame.content")
    _check(raw.get("done", False), bool, "frame.done")
    references = raw.get("knowledge_references")
    if references is not None:
        _check(references, list, "frame.knowledge_references")
        for index, reference in enumerate(references):
            check_search_result(reference, f"frame.knowledge_references[{index}]")
    data = raw.get("data")
    if data is not None:
        _check(data, dict, "frame.data")
    return StreamResponse(
        id=raw["id"],
        response_type=raw["response_type"],
        content=raw.get("content", ""),
        done=raw.get("done", False),
        knowledge_references=references,
        session_id=raw.get("session_id", ""),
        assistant_message_id=raw.get("assistant_message_id", ""),
        data=data,
    )


def stream(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    require_message_event: bool,
    stop_after: int | None = None,
    **kwargs: Any,
) -> list[StreamResponse]:
    """Frames as WeKnora's Go client reads them. ``require_message_event``: ContinueStream's rule, a frame
    counts only when the text after ``event:`` is exactly ``message``; KnowledgeQAStream takes every
    ``data:`` frame. A terminal ``error`` frame ends the stream, as the client does."""
    frames: list[StreamResponse] = []
    with client.stream(method, url, **kwargs) as response:
        if response.status_code < 200 or response.status_code >= 300:
            response.read()
            raise httpx.HTTPStatusError(
                f"HTTP error {response.status_code}", request=response.request, response=response
            )
        data, event = "", ""
        for line in response.iter_lines():
            if line == "":
                if data and (event == "message" or not require_message_event):
                    frame = _frame(data)
                    frames.append(frame)
                    if frame.response_type == "error" and frame.done:
                        break
                    if stop_after is not None and len(frames) >= stop_after:
                        break
                data, event = "", ""
                continue
            if line.startswith("event:"):
                event = line[len("event:") :]
            if line.startswith("data:"):
                data = line[len("data:") :]
    return frames
