"""WeKnora's Go client (Tencent/WeKnora ``client/``, read at 412dcc41c, not copied) replayed over HTTP: the
requests its methods send, and its replies decoded as ``encoding/json`` decodes them into its structs.

The Go module is not served by the Go module proxy, so no Go program can be built against it here; this is
the next best thing, and stricter than a loose JSON check:

- a request body is the Go struct marshalled: every field present, zero values included (``""``, ``false``,
  ``null`` for a nil slice or pointer), except those tagged ``omitempty`` when empty;
- a reply is decoded field by field with Go's rules: a JSON value of the wrong type for the struct field is
  the error ``json.Unmarshal`` returns (a string for a ``uint64``, ``1.5`` for an ``int``, a non-RFC 3339
  string for a ``time.Time``), ``null`` leaves the zero value, unknown fields are skipped;
- the SSE reader is the Go client's: lines read one by one, ``event:`` compared as written, a frame ends at
  an empty line, a terminal ``error`` frame ends the call with an error;
- auth is the client's: ``X-API-Key`` (``WithAPIKey``/``WithToken``) or ``Authorization: Bearer``
  (``WithBearerToken``), ``X-Tenant-ID`` when ``WithTenantID`` was given, ``X-Request-ID`` from the context.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.support.polling import CLIENT_TIMEOUT


class GoDecodeError(AssertionError):
    """What ``json.Unmarshal`` would return: the value at ``where`` does not fit the Go type."""


class APIError(AssertionError):
    """The Go client's ``*APIError``: a non-2xx reply, with the server's ``code`` when the body has one."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP error {status}: {body}")
        self.status = status
        self.body = body


class DuplicateURL(AssertionError):
    """The Go client's ``ErrDuplicateURL``, with the record already in the knowledge base."""

    def __init__(self, existing: dict[str, Any]) -> None:
        super().__init__("URL already exists")
        self.existing = existing


class SSEStreamError(AssertionError):
    """The Go client's ``SSEStreamError``: a terminal ``error`` frame."""


# Go types, as the struct fields declare them ----------------------------------------------------------------
# "string", "bool", "int" (any Go integer), "uint" (uint64), "float", "time" (time.Time: RFC 3339), "any"
# (interface{} / json.RawMessage); [T] a slice; ("map", T) a map[string]T; a dict a struct.
GoType = Any

# time.Time's UnmarshalJSON: RFC 3339, fractional seconds optional, a zone always.
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$")

CHUNKING_CONFIG = {"chunk_size": "int", "chunk_overlap": "int", "separators": ["string"]}
KNOWLEDGE_BASE = {
    "id": "string",
    "name": "string",
    "type": "string",
    "is_temporary": "bool",
    "is_pinned": "bool",
    "description": "string",
    "tenant_id": "uint",
    "chunking_config": CHUNKING_CONFIG,
    "image_processing_config": {"model_id": "string"},
    "faq_config": {"index_mode": "string", "question_index_mode": "string"},
    "embedding_model_id": "string",
    "summary_model_id": "string",
    "vlm_config": {"enabled": "bool", "model_id": "string"},
    "storage_provider_config": {"provider": "string"},
    "extract_config": {"enabled": "bool", "text": "string", "tags": ["string"]},
    "auto_tag_config": {"enabled": "bool", "model_id": "string", "max_tags": "int", "skip_if_tagged": "bool"},
    "created_at": "time",
    "updated_at": "time",
    "knowledge_count": "int",
    "chunk_count": "int",
    "is_processing": "bool",
    "processing_count": "int",
}
KNOWLEDGE = {
    "id": "string",
    "tenant_id": "uint",
    "knowledge_base_id": "string",
    "tag_id": "string",
    "type": "string",
    "title": "string",
    "description": "string",
    "source": "string",
    "channel": "string",
    "parse_status": "string",
    "summary_status": "string",
    "enable_status": "string",
    "embedding_model_id": "string",
    "file_name": "string",
    "folder_path": "string",
    "file_type": "string",
    "file_size": "int",
    "file_hash": "string",
    "file_path": "string",
    "storage_size": "int",
    "metadata": "any",
    "created_at": "time",
    "updated_at": "time",
    "processed_at": "time",
    "error_message": "string",
}
CHUNK = {
    "id": "string",
    "seq_id": "int",
    "knowledge_id": "string",
    "knowledge_base_id": "string",
    "tenant_id": "uint",
    "tag_id": "string",
    "content": "string",
    "chunk_index": "int",
    "is_enabled": "bool",
    "status": "int",
    "start_at": "int",
    "end_at": "int",
    "pre_chunk_id": "string",
    "next_chunk_id": "string",
    "chunk_type": "string",
    "parent_chunk_id": "string",
    "relation_chunks": "any",
    "indirect_relation_chunks": "any",
    "metadata": "any",
    "content_hash": "string",
    "image_info": "string",
    "created_at": "string",
    "updated_at": "string",
}
SEARCH_RESULT = {
    "id": "string",
    "content": "string",
    "knowledge_id": "string",
    "chunk_index": "int",
    "knowledge_title": "string",
    "start_at": "int",
    "end_at": "int",
    "seq": "int",
    "score": "float",
    "match_type": "int",
    "chunk_type": "string",
    "image_info": "string",
    "metadata": ("map", "string"),
    "knowledge_filename": "string",
    "knowledge_source": "string",
    "knowledge_channel": "string",
    "matched_content": "string",
    "knowledge_base_id": "string",
    "parent_chunk_id": "string",
    "sub_chunk_id": ["string"],
}
SESSION = {
    "id": "string",
    "tenant_id": "uint",
    "title": "string",
    "description": "string",
    "created_at": "string",
    "updated_at": "string",
}
MESSAGE = {
    "id": "string",
    "session_id": "string",
    "request_id": "string",
    "content": "string",
    "role": "string",
    "knowledge_references": [SEARCH_RESULT],
    "agent_steps": ["any"],
    "is_completed": "bool",
    "channel": "string",
    "created_at": "time",
    "updated_at": "time",
}
STREAM_RESPONSE = {
    "id": "string",
    "response_type": "string",
    "content": "string",
    "done": "bool",
    "knowledge_references": [SEARCH_RESULT],
    "session_id": "string",
    "assistant_message_id": "string",
    "tool_calls": ["any"],
    "data": ("map", "any"),
}


def decode(value: Any, go_type: GoType, where: str) -> Any:
    """``value`` decoded into ``go_type`` the way ``encoding/json`` does, or :class:`GoDecodeError`."""
    if value is None or go_type == "any":
        return value
    if isinstance(go_type, dict):
        if not isinstance(value, dict):
            raise GoDecodeError(f"{where}: cannot unmarshal {type(value).__name__} into a struct")
        return {name: decode(value.get(name), inner, f"{where}.{name}") for name, inner in go_type.items()}
    if isinstance(go_type, list):
        if not isinstance(value, list):
            raise GoDecodeError(f"{where}: cannot unmarshal {type(value).__name__} into a slice")
        return [decode(item, go_type[0], f"{where}[{index}]") for index, item in enumerate(value)]
    if isinstance(go_type, tuple):
        if not isinstance(value, dict):
            raise GoDecodeError(f"{where}: cannot unmarshal {type(value).__name__} into a map")
        return {key: decode(item, go_type[1], f"{where}[{key}]") for key, item in value.items()}
    if go_type == "string" and not isinstance(value, str):
        raise GoDecodeError(f"{where}: cannot unmarshal {value!r} into a Go string")
    if go_type == "bool" and not isinstance(value, bool):
        raise GoDecodeError(f"{where}: cannot unmarshal {value!r} into a Go bool")
    if go_type in ("int", "uint"):
        # A JSON number with a fraction or an exponent (json.loads gives a float) does not fit an integer.
        if isinstance(value, bool) or not isinstance(value, int):
            raise GoDecodeError(f"{where}: cannot unmarshal {value!r} into a Go integer")
        if go_type == "uint" and value < 0:
            raise GoDecodeError(f"{where}: cannot unmarshal {value!r} into a Go uint64")
    if go_type == "float" and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise GoDecodeError(f"{where}: cannot unmarshal {value!r} into a Go float64")
    if go_type == "time" and not (isinstance(value, str) and _RFC3339.match(value)):
        raise GoDecodeError(f"{where}: parsing time {value!r} as RFC 3339")
    return value


@dataclass
class GoClient:
    """``client.NewClient(base_url, options...)``: one method per Go client method the tests use, sending what
    it sends and returning what it returns (decoded)."""

    http: httpx.Client
    api_key: str = ""
    bearer_token: str = ""
    tenant_id: int | None = None
    sent: list[httpx.Request] = field(default_factory=list)

    def _headers(self, request_id: str | None) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["X-API-Key"] = self.api_key
        if self.bearer_token:
            headers["Authorization"] = f"Bearer {self.bearer_token}"
        if request_id is not None:
            headers["X-Request-ID"] = request_id
        if self.tenant_id is not None:
            headers["X-Tenant-ID"] = str(self.tenant_id)
        return headers

    def _do(
        self,
        method: str,
        path: str,
        body: Any = None,
        params: list[tuple[str, str]] | None = None,
        request_id: str | None = None,
    ) -> httpx.Response:
        # json.Marshal of the body; a nil body sends none.
        content = None if body is None else json.dumps(body).encode()
        request = self.http.build_request(
            method, path, content=content, params=params, headers=self._headers(request_id)
        )
        self.sent.append(request)
        return self.http.send(request)

    @staticmethod
    def _parse(reply: httpx.Response, shape: dict[str, GoType]) -> dict[str, Any]:
        """``parseResponse``: a non-2xx reply is an APIError; the body decoded into the response struct."""
        if not 200 <= reply.status_code < 300:
            raise APIError(reply.status_code, reply.text)
        decoded: dict[str, Any] = decode(reply.json(), shape, "response")
        return decoded

    # Knowledge bases (knowledgebase.go) ----------------------------------------------------------------------
    def create_knowledge_base(self, kb: dict[str, Any]) -> dict[str, Any]:
        body = knowledge_base_struct(**kb)
        reply = self._do("POST", "/api/v1/knowledge-bases", body)
        return dict(self._parse(reply, {"success": "bool", "data": KNOWLEDGE_BASE})["data"])

    def get_knowledge_base(self, kb_id: str) -> dict[str, Any]:
        reply = self._do("GET", f"/api/v1/knowledge-bases/{kb_id}")
        return dict(self._parse(reply, {"success": "bool", "data": KNOWLEDGE_BASE})["data"])

    def list_knowledge_bases(self) -> list[dict[str, Any]]:
        reply = self._do("GET", "/api/v1/knowledge-bases")
        return list(self._parse(reply, {"success": "bool", "data": [KNOWLEDGE_BASE]})["data"] or [])

    def update_knowledge_base(self, kb_id: str, name: str, description: str) -> dict[str, Any]:
        body = {"name": name, "description": description, "config": None}
        reply = self._do("PUT", f"/api/v1/knowledge-bases/{kb_id}", body)
        return dict(self._parse(reply, {"success": "bool", "data": KNOWLEDGE_BASE})["data"])

    def delete_knowledge_base(self, kb_id: str) -> None:
        self._parse(self._do("DELETE", f"/api/v1/knowledge-bases/{kb_id}"), {"success": "bool", "message": "string"})

    def hybrid_search(self, kb_id: str, query: str, match_count: int = 0) -> list[dict[str, Any]]:
        body = {
            "query_text": query,
            "vector_threshold": 0.0,
            "keyword_threshold": 0.0,
            "match_count": match_count,
            "disable_keywords_match": False,
            "disable_vector_match": False,
        }
        reply = self._do("POST", f"/api/v1/knowledge-bases/{kb_id}/hybrid-search", body)
        return list(self._parse(reply, {"success": "bool", "data": [SEARCH_RESULT]})["data"] or [])

    # Knowledge (knowledge.go) --------------------------------------------------------------------------------
    def create_knowledge_from_file(
        self, kb_id: str, file_name: str, content: bytes, metadata: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """A multipart form: ``file``, then ``metadata`` (JSON) when given; 409 is ErrDuplicateFile."""
        form = {} if metadata is None else {"metadata": json.dumps(metadata)}
        headers = {k: v for k, v in self._headers(None).items() if k != "Content-Type"}
        request = self.http.build_request(
            "POST",
            f"/api/v1/knowledge-bases/{kb_id}/knowledge/file",
            files={"file": (file_name, content, "application/octet-stream")},
            data=form,
            headers=headers,
        )
        self.sent.append(request)
        reply = self.http.send(request)
        return dict(self._parse(reply, {"success": "bool", "data": KNOWLEDGE})["data"])

    def create_knowledge_from_url(self, kb_id: str, url: str, **optional: Any) -> dict[str, Any]:
        """``CreateKnowledgeFromURLRequest``: ``url`` and whichever omitempty fields were set; a 409 is
        ErrDuplicateURL with the existing record decoded from the reply."""
        fields = {"file_name", "file_type", "enable_multimodel", "title", "tag_id", "channel", "process_config"}
        assert set(optional) <= fields, sorted(set(optional) - fields)
        body = {"url": url, **{k: v for k, v in optional.items() if v}}
        reply = self._do("POST", f"/api/v1/knowledge-bases/{kb_id}/knowledge/url", body)
        if reply.status_code == 409:
            existing = decode(reply.json(), {"success": "bool", "data": KNOWLEDGE}, "response")["data"]
            raise DuplicateURL(existing)
        return dict(self._parse(reply, {"success": "bool", "data": KNOWLEDGE})["data"])

    def create_manual_knowledge(self, kb_id: str, title: str, content: str) -> dict[str, Any]:
        body = {"title": title, "content": content}
        reply = self._do("POST", f"/api/v1/knowledge-bases/{kb_id}/knowledge/manual", body)
        return dict(self._parse(reply, {"success": "bool", "data": KNOWLEDGE})["data"])

    def get_knowledge(self, knowledge_id: str) -> dict[str, Any]:
        reply = self._do("GET", f"/api/v1/knowledge/{knowledge_id}")
        return dict(self._parse(reply, {"success": "bool", "data": KNOWLEDGE})["data"])

    def get_knowledge_batch(self, ids: list[str]) -> list[dict[str, Any]]:
        reply = self._do("GET", "/api/v1/knowledge/batch", params=[("ids", i) for i in ids])
        return list(self._parse(reply, {"success": "bool", "data": [KNOWLEDGE]})["data"] or [])

    def list_knowledge(self, kb_id: str, page: int, page_size: int) -> tuple[list[dict[str, Any]], int]:
        params = [("page", str(page)), ("page_size", str(page_size))]
        reply = self._do("GET", f"/api/v1/knowledge-bases/{kb_id}/knowledge", params=params)
        shape = {"success": "bool", "data": [KNOWLEDGE], "total": "int", "page": "int", "page_size": "int"}
        parsed = self._parse(reply, shape)
        return list(parsed["data"] or []), int(parsed["total"] or 0)

    def delete_knowledge(self, knowledge_id: str) -> None:
        self._parse(self._do("DELETE", f"/api/v1/knowledge/{knowledge_id}"), {"success": "bool", "message": "string"})

    # Chunks (chunk.go) ---------------------------------------------------------------------------------------
    def list_knowledge_chunks(self, knowledge_id: str, page: int, page_size: int) -> tuple[list[dict[str, Any]], int]:
        params = [("page", str(page)), ("page_size", str(page_size))]
        reply = self._do("GET", f"/api/v1/chunks/{knowledge_id}", params=params)
        shape = {"success": "bool", "data": [CHUNK], "total": "int", "page": "int", "page_size": "int"}
        parsed = self._parse(reply, shape)
        return list(parsed["data"] or []), int(parsed["total"] or 0)

    def update_chunk(self, knowledge_id: str, chunk_id: str, content: str, is_enabled: bool) -> dict[str, Any]:
        # UpdateChunkRequest: every field, the ones the caller left at their zero values too.
        body = {
            "content": content,
            "embedding": None,
            "chunk_index": 0,
            "is_enabled": is_enabled,
            "start_at": 0,
            "end_at": 0,
            "image_info": "",
        }
        reply = self._do("PUT", f"/api/v1/chunks/{knowledge_id}/{chunk_id}", body)
        return dict(self._parse(reply, {"success": "bool", "data": CHUNK})["data"])

    def get_chunk_by_id_only(self, chunk_id: str) -> dict[str, Any]:
        reply = self._do("GET", f"/api/v1/chunks/by-id/{chunk_id}")
        return dict(self._parse(reply, {"success": "bool", "data": CHUNK})["data"])

    # Sessions (session.go) -----------------------------------------------------------------------------------
    def create_session(self, title: str, description: str) -> dict[str, Any]:
        reply = self._do("POST", "/api/v1/sessions", {"title": title, "description": description})
        return dict(self._parse(reply, {"success": "bool", "data": SESSION})["data"])

    def get_session(self, session_id: str) -> dict[str, Any]:
        reply = self._do("GET", f"/api/v1/sessions/{session_id}")
        return dict(self._parse(reply, {"success": "bool", "data": SESSION})["data"])

    def get_sessions_by_tenant(self, page: int, page_size: int) -> tuple[list[dict[str, Any]], int]:
        params = [("page", str(page)), ("page_size", str(page_size))]
        reply = self._do("GET", "/api/v1/sessions", params=params)
        shape = {"success": "bool", "data": [SESSION], "total": "int", "page": "int", "page_size": "int"}
        parsed = self._parse(reply, shape)
        return list(parsed["data"] or []), int(parsed["total"] or 0)

    def update_session(self, session_id: str, title: str, description: str) -> dict[str, Any]:
        reply = self._do("PUT", f"/api/v1/sessions/{session_id}", {"title": title, "description": description})
        return dict(self._parse(reply, {"success": "bool", "data": SESSION})["data"])

    def delete_session(self, session_id: str) -> None:
        self._parse(self._do("DELETE", f"/api/v1/sessions/{session_id}"), {"success": "bool", "message": "string"})

    def batch_delete_sessions(self, ids: list[str]) -> None:
        self._parse(
            self._do("DELETE", "/api/v1/sessions/batch", {"ids": ids}), {"success": "bool", "message": "string"}
        )

    def generate_title(self, session_id: str, messages: list[dict[str, Any]]) -> str:
        reply = self._do("POST", f"/api/v1/sessions/{session_id}/generate_title", {"messages": messages})
        return str(self._parse(reply, {"success": "bool", "data": "string"})["data"])

    def stop_session(self, session_id: str, message_id: str) -> None:
        reply = self._do("POST", f"/api/v1/sessions/{session_id}/stop", {"message_id": message_id})
        self._parse(reply, {"success": "bool", "message": "string"})

    def search_knowledge(self, query: str, kb_ids: list[str]) -> list[dict[str, Any]]:
        # SearchKnowledgeRequest: everything but the query is omitempty.
        body: dict[str, Any] = {"query": query}
        if kb_ids:
            body["knowledge_base_ids"] = kb_ids
        reply = self._do("POST", "/api/v1/knowledge-search", body)
        return list(self._parse(reply, {"success": "bool", "data": [SEARCH_RESULT]})["data"] or [])

    # Messages (message.go) -----------------------------------------------------------------------------------
    def load_messages(self, session_id: str, limit: int, before_time: str | None = None) -> list[dict[str, Any]]:
        params = [("limit", str(limit))]
        if before_time is not None:
            params.append(("before_time", before_time))
        reply = self._do("GET", f"/api/v1/messages/{session_id}/load", params=params)
        return list(self._parse(reply, {"success": "bool", "data": [MESSAGE]})["data"] or [])

    def get_recent_messages(self, session_id: str, limit: int) -> list[dict[str, Any]]:
        return self.load_messages(session_id, limit)

    # Streams (session.go) ------------------------------------------------------------------------------------
    def knowledge_qa_stream(
        self,
        session_id: str,
        query: str,
        callback: Callable[[dict[str, Any]], bool | None],
        *,
        knowledge_base_ids: list[str] | None = None,
        request_id: str | None = None,
    ) -> None:
        """``KnowledgeQAStream`` with a ``KnowledgeQARequest``: every ``data:`` frame reaches ``callback``
        (whatever its ``event:``). ``callback`` returning True ends the call (the Go callback's error)."""
        body = {
            "query": query,
            "knowledge_base_ids": knowledge_base_ids,
            "knowledge_ids": None,
            "agent_enabled": False,
            "agent_id": "",
            "web_search_enabled": False,
            "summary_model_id": "",
            "disable_title": False,
        }
        self._stream("POST", f"/api/v1/knowledge-chat/{session_id}", body, None, callback, False, request_id)

    def continue_stream(
        self, session_id: str, message_id: str, callback: Callable[[dict[str, Any]], bool | None]
    ) -> None:
        """``ContinueStream``: a frame counts only when the text after ``event:`` is exactly ``message``."""
        params = [("message_id", message_id)]
        self._stream("GET", f"/api/v1/sessions/continue-stream/{session_id}", None, params, callback, True, None)

    def _stream(
        self,
        method: str,
        path: str,
        body: Any,
        params: list[tuple[str, str]] | None,
        callback: Callable[[dict[str, Any]], bool | None],
        message_events_only: bool,
        request_id: str | None,
    ) -> None:
        content = None if body is None else json.dumps(body).encode()
        request = self.http.build_request(
            method, path, content=content, params=params, headers=self._headers(request_id)
        )
        self.sent.append(request)
        reply = self.http.send(request, stream=True)
        try:
            if not 200 <= reply.status_code < 300:
                reply.read()
                raise APIError(reply.status_code, reply.text)
            for frame in _go_frames(reply.iter_lines(), message_events_only):
                if callback(frame):
                    return
                if frame.get("response_type") == "error" and frame.get("done"):
                    raise SSEStreamError(str(frame.get("content")))
        finally:
            reply.close()


def _go_frames(lines: Iterator[str], message_events_only: bool) -> Iterator[dict[str, Any]]:
    """The Go client's scanner loop: ``event:``/``data:`` prefixes taken as written (no space stripped from
    the event name), a frame decoded into ``StreamResponse`` at each empty line."""
    data, event = "", ""
    for line in lines:
        if line == "":
            if data and (event == "message" or not message_events_only):
                yield decode(json.loads(data), STREAM_RESPONSE, "StreamResponse")
                data, event = "", ""
            continue
        if line.startswith("event:"):
            event = line[len("event:") :]
        if line.startswith("data:"):
            data = line[len("data:") :]


def knowledge_base_struct(**fields: Any) -> dict[str, Any]:
    """``json.Marshal(&KnowledgeBase{...})``: the whole struct, zero values and read-only fields included."""
    struct: dict[str, Any] = {
        "id": "",
        "name": "",
        "type": "",
        "is_temporary": False,
        "is_pinned": False,
        "description": "",
        "tenant_id": 0,
        "chunking_config": {"chunk_size": 0, "chunk_overlap": 0, "separators": None},
        "image_processing_config": {"model_id": ""},
        "faq_config": None,
        "embedding_model_id": "",
        "summary_model_id": "",
        "vlm_config": {"enabled": False, "model_id": ""},
        "storage_provider_config": None,
        "storage_config": {
            "secret_id": "",
            "secret_key": "",
            "region": "",
            "bucket_name": "",
            "app_id": "",
            "path_prefix": "",
            "provider": "",
        },
        "extract_config": None,
        "auto_tag_config": None,
        "created_at": "0001-01-01T00:00:00Z",
        "updated_at": "0001-01-01T00:00:00Z",
        "knowledge_count": 0,
        "chunk_count": 0,
        "is_processing": False,
        "processing_count": 0,
    }
    unknown = set(fields) - set(struct)
    assert not unknown, f"not fields of WeKnora's KnowledgeBase: {sorted(unknown)}"
    return {**struct, **fields}


@contextmanager
def go_client(base_url: str, **options: Any) -> Iterator[GoClient]:
    """``client.NewClient(base_url, options...)`` over one HTTP connection pool."""
    with httpx.Client(base_url=base_url, timeout=CLIENT_TIMEOUT) as http:
        yield GoClient(http, **options)
