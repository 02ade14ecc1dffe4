"""A scripted OpenAI-compatible chat server: tests queue replies and read back the requests it received.

Each reply is a :class:`Script`: answer and reasoning pieces with delays, a finish reason, or an HTTP error.
Unqueued requests get the default reply, so concurrent turns need no scripting.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from tests.support.streaming import ClosingStreamingResponse


@dataclass
class Piece:
    content: str = ""
    reasoning: str = ""
    delay: float = 0.0


@dataclass
class Script:
    pieces: list[Piece] = field(default_factory=list)
    finish_reason: str = "stop"
    status: int = 200
    # Break the stream (connection closed without [DONE]) after this many pieces.
    break_after: int | None = None

    @classmethod
    def answer(cls, *texts: str, delay: float = 0.0, finish_reason: str = "stop") -> Script:
        return cls([Piece(content=t, delay=delay) for t in texts], finish_reason=finish_reason)


@dataclass
class Received:
    body: dict[str, Any]
    pieces_sent: int = 0
    completed: bool = False
    started_at: float = field(default_factory=time.monotonic)
    # A streamed reply the client closed before its end: when the server saw it (time.monotonic()).
    closed_early_at: float | None = None
    # Set while streaming to cut the connection mid-reply (a dying network or process).
    break_now: bool = False

    @property
    def closed_early(self) -> bool:
        return self.closed_early_at is not None

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def system(self) -> str:
        return next((m["content"] for m in self.messages if m["role"] == "system"), "")


def _echo_understanding(messages: list[dict[str, Any]]) -> Script:
    """The latest user message returned unchanged as the rewrite, intent kb_search."""
    text = str(messages[-1].get("content", ""))
    marker = "Latest message:"
    query = text[text.rfind(marker) + len(marker) :].strip() if marker in text else text.strip()
    return Script.answer(json.dumps({"rewrite_query": query, "intent": "kb_search"}))


class ScriptedModel:
    """Queued scripts answer requests that carry a system prompt (answers, fallbacks); requests without one
    (session titles) get ``title`` and never consume a queued script."""

    def __init__(self, default: Script | None = None) -> None:
        self._lock = threading.Lock()
        self._queue: deque[Script] = deque()
        self.default = default or Script.answer("The ", "answer ", "is ", "42.")
        self.title = Script.answer("Scripted title")
        self.memory_extraction = Script.answer("[]")
        self.entity_extraction = Script.answer("[]")
        self.graph_extraction = Script.answer('{"entities": [], "relations": []}')
        self.sql = Script.answer("NONE")
        # Ingestion enrichment (ragline.ingest.enrichment): nothing generated unless a test scripts it.
        self.questions: Script | Callable[[str], Script] = Script.answer("")
        self.summary = Script.answer("")
        self.kb_description = Script.answer("")
        self.keywords = Script.answer("")
        self.caption = Script.answer("")
        # Query understanding requests: queued replies, else the question itself as a kb_search.
        self.understanding: deque[Script] = deque()
        self.received: list[Received] = []
        # /v1/embeddings: statuses answered (one per request) before vectors are; the batches received.
        self.embedding_failures: deque[int] = deque()
        self.embedding_batches: list[list[str]] = []
        self.app = self._build()

    @property
    def answers(self) -> list[Received]:
        """The requests for answers (a system prompt that is not query understanding), in arrival order."""
        return [r for r in self.received if r.system and '"rewrite_query"' not in r.system]

    @property
    def understandings(self) -> list[Received]:
        return [r for r in self.received if '"rewrite_query"' in r.system]

    def queue(self, *scripts: Script) -> None:
        with self._lock:
            self._queue.extend(scripts)

    def clear(self) -> None:
        """Drop the queued scripts no request took (a test that queued one more than it should be asked for)."""
        with self._lock:
            self._queue.clear()

    def _next(self, body: dict[str, Any]) -> Script:
        messages = body.get("messages", [])
        text = " ".join(str(m.get("content", "")) for m in messages)
        if "notebook about the person" in text:
            return self.memory_extraction
        if "named entities" in text and "question below is about" in text:
            return self.entity_extraction
        if "relations between them" in text:
            return self.graph_extraction
        if "You write SQL for DuckDB" in text:
            return self.sql
        if "questions that it answers directly" in text:
            return self.questions(text) if callable(self.questions) else self.questions
        if "Summarise the document below" in text:
            return self.summary
        if "describing what the knowledge base covers" in text:
            return self.kb_description
        if "keywords or key phrases" in text:
            return self.keywords
        if "Describe this image in one or two sentences" in text:
            return self.caption
        if not any(m.get("role") == "system" for m in messages):
            return self.title
        if any('"rewrite_query"' in str(m.get("content", "")) for m in messages if m.get("role") == "system"):
            with self._lock:
                if self.understanding:
                    return self.understanding.popleft()
            return _echo_understanding(messages)
        with self._lock:
            return self._queue.popleft() if self._queue else self.default

    def _build(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/embeddings")
        async def embeddings(request: Request) -> Any:
            body = await request.json()
            with self._lock:
                status = self.embedding_failures.popleft() if self.embedding_failures else 200
                if status == 200:
                    self.embedding_batches.append(list(body["input"]))
            if status != 200:
                return JSONResponse({"error": {"message": "scripted failure", "type": "server_error"}}, status)
            # Eight numbers from the text's digest: the same text, the same vector; served in reverse order, as
            # a server may, each with its index.
            data = [
                {
                    "object": "embedding",
                    "index": i,
                    "embedding": [b - 128.0 for b in hashlib.sha256(t.encode()).digest()[:8]],
                }
                for i, t in enumerate(body["input"])
            ]
            return {"object": "list", "data": data[::-1], "model": body.get("model", "scripted")}

        @app.post("/v1/chat/completions")
        async def completions(request: Request) -> Any:
            body = await request.json()
            script = self._next(body)
            received = Received(body)
            with self._lock:
                self.received.append(received)
            if script.status != 200:
                return JSONResponse({"error": {"message": "scripted failure", "type": "server_error"}}, script.status)
            if not body.get("stream"):
                text = "".join(p.content for p in script.pieces)
                received.completed = True
                return {
                    "id": "cmpl-1",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "scripted"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": script.finish_reason,
                        }
                    ],
                }

            async def stream() -> Any:
                def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
                    payload = {
                        "id": "chunk-1",
                        "object": "chat.completion.chunk",
                        "created": int(time.time()),
                        "model": body.get("model", "scripted"),
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                    }
                    return f"data: {json.dumps(payload)}\n\n"

                try:
                    yield chunk({"role": "assistant", "content": ""})
                    for index, piece in enumerate(script.pieces):
                        if script.break_after is not None and index >= script.break_after:
                            return
                        if piece.delay:
                            await asyncio.sleep(piece.delay)
                        if received.break_now:
                            raise ConnectionAbortedError("the scripted model cut the connection")
                        delta: dict[str, Any] = {}
                        if piece.reasoning:
                            delta["reasoning_content"] = piece.reasoning
                        if piece.content:
                            delta["content"] = piece.content
                        yield chunk(delta)
                        received.pieces_sent = index + 1
                    yield chunk({}, script.finish_reason)
                    yield "data: [DONE]\n\n"
                    received.completed = True
                finally:
                    # Cancelled by the client's disconnect (or closed) before the end: the stream was closed.
                    if not received.completed and script.break_after is None and not received.break_now:
                        received.closed_early_at = time.monotonic()

            return ClosingStreamingResponse(stream(), media_type="text/event-stream")

        return app
