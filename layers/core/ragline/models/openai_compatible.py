"""OpenAI-compatible endpoints (OpenAI, Ollama, vLLM, llama.cpp server) for chat and embeddings, over httpx.

Not through the OpenAI SDK: its pydantic model per streamed token was the event loop's largest CPU cost, and it
was 9 MiB of a Lambda layer that must stay under 250 MiB with its bytecode.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt

from ragline.models.base import ChatChunk, ChatMessage, ChatResponse, ModelCallError, collect
from ragline.models.http import MAX_RETRIES, LoopClients, retry_delay, retryable
from ragline.types import ChatOptions


def _message(message: ChatMessage) -> dict[str, Any]:
    """A message in the Chat Completions shape: text, or text and ``image_url`` parts when it has images."""
    if not message.images:
        return {"role": message.role, "content": message.content}
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}]
    parts.extend({"type": "image_url", "image_url": {"url": url}} for url in message.images)
    return {"role": message.role, "content": parts}


_ERROR_EXCERPT_CHARS = 200


def _choices(line: str) -> list[dict[str, Any]] | None:
    """The ``choices`` of one SSE line of a chat completions stream; None at ``[DONE]``, [] for other lines.

    Parsed with ``json.loads`` into plain dicts: building the SDK's pydantic models for every token cost the event
    loop more CPU than anything else it did while answers streamed (bench/mixed_load.py, py-spy).
    """
    if not line.startswith("data:"):
        return []  # blank separators, ``:`` comments, ``event:`` and ``id:`` fields
    data = line[5:].strip()
    if data == "[DONE]":
        return None
    try:
        payload = json.loads(data)
    except ValueError as exc:
        raise ModelCallError(f"malformed stream chunk: {data[:_ERROR_EXCERPT_CHARS]}") from exc
    if not isinstance(payload, dict):
        raise ModelCallError(f"malformed stream chunk: {data[:_ERROR_EXCERPT_CHARS]}")
    if payload.get("error"):
        raise ModelCallError(f"model error mid-stream: {str(payload['error'])[:_ERROR_EXCERPT_CHARS]}")
    choices = payload.get("choices") or []
    return [c for c in choices if isinstance(c, dict)]


# After [DONE], at most this much more of a body is read, for at most this long, so that its connection serves the
# next answer.
_AFTER_DONE_MAX_BYTES = 64 * 1024
_AFTER_DONE_MAX_S = 1.0


async def _read_to_end(pieces: AsyncIterator[bytes]) -> None:
    """Read what follows [DONE] (normally only the chunked body's last, empty chunk) to the body's end.

    A response closed before its body ended takes its connection with it: every answer had opened a new one (a TLS
    handshake each, with a hosted model). Read to the end, the connection goes back to the pool. A server that goes
    on sending past the limits, holds the body open, or fails, only loses its connection.
    """
    left = _AFTER_DONE_MAX_BYTES
    try:
        async with asyncio.timeout(_AFTER_DONE_MAX_S):
            async for piece in pieces:
                left -= len(piece)
                if left < 0:
                    return
    except (TimeoutError, httpx.HTTPError):
        return


class _LineSplitter:
    """The complete lines of an SSE body fed in network pieces, cut on CRLF, LF or a lone CR as the SSE spec says.

    Not httpx's ``aiter_lines``: it splits as ``str.splitlines`` does, at U+2028, U+2029 and U+0085 too, which JSON
    strings may hold raw, and such a token failed the turn. Bytes are cut here and only complete lines decoded, so
    a character split across pieces comes out whole (a LF byte is never inside a UTF-8 sequence).
    """

    def __init__(self) -> None:
        self._rest: list[bytes] = []  # the line begun in earlier pieces (joined once it ends: no quadratic copy)

    def feed(self, piece: bytes) -> list[str]:
        """The lines completed by ``piece``, blank ones included."""
        if b"\n" not in piece and b"\r" not in piece:
            self._rest.append(piece)
            return []
        if self._rest:
            piece = b"".join((*self._rest, piece))
            self._rest = []
        if b"\r" in piece:
            # A CR at the end of a piece may be the first half of a CRLF: made LF, the LF opening the next piece
            # adds a blank line, and blank lines are only separators here.
            piece = piece.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        end = piece.rfind(b"\n")
        if end + 1 < len(piece):
            self._rest.append(piece[end + 1 :])
        return piece[:end].decode("utf-8", "replace").split("\n")

    def flush(self) -> list[str]:
        """The last line, when the body ended without a line ending after it."""
        rest, self._rest = b"".join(self._rest), []
        return [rest.decode("utf-8", "replace")] if rest else []


class OpenAICompatibleChatModel:
    """Streams ``delta.content`` as answer and ``delta.reasoning_content`` (vLLM, DeepSeek) as thinking."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 120.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """``model`` at ``base_url``, a server speaking OpenAI's chat completions API."""
        self.model_id = f"{model}@{base_url}"
        self._model = model
        self._url = base_url.rstrip("/") + "/chat/completions"
        headers = {"Authorization": f"Bearer {api_key or 'not-needed'}", "Accept": "text/event-stream"}
        self._clients = LoopClients(headers, timeout, transport)

    def _request(self, messages: Sequence[ChatMessage], options: ChatOptions) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self._model,
            "messages": [_message(m) for m in messages],
            "temperature": options.temperature,
            "max_tokens": options.max_tokens,
            "stream": True,
        }
        if options.top_p is not None:
            body["top_p"] = options.top_p
        return body

    async def release_loop(self) -> None:
        """Close the client of the running loop (a serverless step's loop ends with its invocation)."""
        await self._clients.release()

    @asynccontextmanager
    async def _open(self, body: dict[str, Any]) -> AsyncIterator[httpx.Response]:
        """The streaming response, retried as the SDK retries until a 200 arrives; a refusal is a ModelCallError."""
        client = self._clients.get()
        for attempt in range(MAX_RETRIES + 1):
            response: httpx.Response | None = None
            try:
                async with client.stream("POST", self._url, json=body) as response:
                    if response.status_code == 200:
                        yield response
                        return
                    detail = (await response.aread()).decode("utf-8", "replace")[:_ERROR_EXCERPT_CHARS]
                    if not retryable(response.status_code) or attempt == MAX_RETRIES:
                        raise ModelCallError(f"chat model HTTP {response.status_code}: {detail}")
            except httpx.HTTPError as exc:
                if response is not None or attempt == MAX_RETRIES:
                    raise ModelCallError(f"{type(exc).__name__}: {exc}") from exc
            await asyncio.sleep(retry_delay(attempt, response))

    async def chat_stream(self, messages: Sequence[ChatMessage], options: ChatOptions) -> AsyncIterator[ChatChunk]:
        """Stream the reply's answer and reasoning text; the HTTP stream closes when the reader stops."""
        finish: str | None = None
        # Closed however the caller stops reading (a stop closes this generator): the HTTP stream ends now, not
        # when the garbage collector gets to it, and the model stops generating.
        async with self._open(self._request(messages, options)) as response:
            pieces = response.aiter_bytes()  # not aiter_raw: a gzip or deflate body is decoded here
            splitter = _LineSplitter()
            ended = False
            done = False  # [DONE] came: what follows is at most the body's end
            while not ended:
                try:
                    lines = splitter.feed(await anext(pieces))
                except StopAsyncIteration:
                    lines = splitter.flush()  # the connection ended without [DONE]: what came is the answer
                    ended = True
                except httpx.HTTPError as exc:
                    raise ModelCallError(f"stream cut: {type(exc).__name__}: {exc}") from exc
                for line in lines:
                    choices = _choices(line)
                    if choices is None:
                        ended = done = True
                        break
                    for choice in choices:
                        delta = choice.get("delta") or {}
                        reasoning = delta.get("reasoning_content")
                        if reasoning:
                            yield ChatChunk("thinking", reasoning)
                        if delta.get("content"):
                            yield ChatChunk("answer", delta["content"])
                        if choice.get("finish_reason"):
                            finish = choice["finish_reason"]
            if done:
                await _read_to_end(pieces)
        yield ChatChunk("end", finish_reason=finish)

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        """The whole reply, assembled from the stream."""
        return await collect(self, messages, options)


class OpenAICompatibleEmbedder:
    """Embeddings from ``/v1/embeddings``; the vector space is identified by model name and base URL."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        dimensions: int = 0,
        batch_size: int = 64,
        timeout: float = 120.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        """``model`` at ``base_url``, a server speaking OpenAI's embeddings API; ``dimensions`` known after the first call."""
        self.model_id = f"{model}@{base_url}"
        self.dimensions = dimensions
        self._model = model
        self._url = base_url.rstrip("/") + "/embeddings"
        self._batch_size = batch_size
        # httpx.Client is thread-safe: indexing threads share its connection pool.
        self._client = httpx.Client(
            headers={"Authorization": f"Bearer {api_key or 'not-needed'}"},
            timeout=httpx.Timeout(timeout),
            transport=transport,
        )

    def _post(self, texts: list[str]) -> list[list[float]]:
        """One batch's vectors in input order, retried as the chat call is; a refusal is a ModelCallError."""
        for attempt in range(MAX_RETRIES + 1):
            response: httpx.Response | None = None
            try:
                response = self._client.post(self._url, json={"model": self._model, "input": texts})
            except httpx.HTTPError as exc:
                if attempt == MAX_RETRIES:
                    raise ModelCallError(f"{type(exc).__name__}: {exc}") from exc
            else:
                if response.status_code == 200:
                    break
                if not retryable(response.status_code) or attempt == MAX_RETRIES:
                    detail = response.text[:_ERROR_EXCERPT_CHARS]
                    raise ModelCallError(f"embedding model HTTP {response.status_code}: {detail}")
            time.sleep(retry_delay(attempt, response))
        assert response is not None
        try:
            items = sorted(response.json()["data"], key=lambda item: item["index"])
            rows = [list(item["embedding"]) for item in items]
        except (ValueError, KeyError, TypeError) as exc:
            raise ModelCallError(f"embedding reply: {response.text[:_ERROR_EXCERPT_CHARS]}") from exc
        if len(rows) != len(texts):
            raise ModelCallError(f"embedding reply has {len(rows)} vectors for {len(texts)} texts")
        return rows

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Vectors in batches of ``batch_size`` texts, normalised here (servers do not all normalise)."""
        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            rows.extend(self._post(list(texts[start : start + self._batch_size])))
        matrix = np.asarray(rows, dtype=np.float32)
        if matrix.size:
            self.dimensions = matrix.shape[1]
            matrix /= np.clip(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12, None)
        return matrix

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """The query's vector (embedded as a document: the API has no query mode)."""
        vector: npt.NDArray[np.float32] = self.embed_documents([text])[0]
        return vector
