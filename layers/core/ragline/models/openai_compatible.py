"""OpenAI-compatible endpoints (OpenAI, Ollama, vLLM, llama.cpp server) for chat and embeddings."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ragline.models.base import ChatChunk, ChatMessage, ChatResponse, ModelCallError, collect
from ragline.types import ChatOptions


def _message(message: ChatMessage) -> dict[str, Any]:
    """A message in the Chat Completions shape: text, or text and ``image_url`` parts when it has images."""
    if not message.images:
        return {"role": message.role, "content": message.content}
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}]
    parts.extend({"type": "image_url", "image_url": {"url": url}} for url in message.images)
    return {"role": message.role, "content": parts}


class OpenAICompatibleChatModel:
    """Streams ``delta.content`` as answer and ``delta.reasoning_content`` (vLLM, DeepSeek) as thinking."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 120.0) -> None:
        """``model`` at ``base_url``, a server speaking OpenAI's chat completions API."""
        self.model_id = f"{model}@{base_url}"
        self._model = model
        self._base_url = base_url
        self._api_key = api_key or "not-needed"
        self._timeout = timeout
        self._clients: dict[int, Any] = {}

    def _client(self) -> Any:
        """One client per event loop.

        Its connection pool is bound to the loop that created it, and a warm Lambda runs each invocation on a new loop.
        """
        from openai import AsyncOpenAI

        loop = asyncio.get_running_loop()
        client = self._clients.get(id(loop))
        if client is None or client[0] is not loop:
            self._clients = {k: v for k, v in self._clients.items() if not v[0].is_closed()}
            client = (loop, AsyncOpenAI(base_url=self._base_url, api_key=self._api_key, timeout=self._timeout))
            self._clients[id(loop)] = client
        return client[1]

    def _request(self, messages: Sequence[ChatMessage], options: ChatOptions) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self._model,
            "messages": [_message(m) for m in messages],
            "temperature": options.temperature,
            "max_tokens": options.max_tokens,
        }
        if options.top_p is not None:
            body["top_p"] = options.top_p
        return body

    async def release_loop(self) -> None:
        """Close the client of the running loop (a serverless step's loop ends with its invocation)."""
        client = self._clients.pop(id(asyncio.get_running_loop()), None)
        if client is not None:
            await client[1].close()

    async def chat_stream(self, messages: Sequence[ChatMessage], options: ChatOptions) -> AsyncIterator[ChatChunk]:
        """Stream the reply's answer and reasoning text; the HTTP stream closes when the reader stops."""
        from openai import OpenAIError

        finish: str | None = None
        try:
            stream = await self._client().chat.completions.create(**self._request(messages, options), stream=True)
            # Closed however the caller stops reading (a stop closes this generator): the HTTP stream ends
            # now, not when the garbage collector gets to it, and the model stops generating.
            async with stream:
                async for event in stream:
                    for choice in event.choices:
                        delta = choice.delta
                        reasoning = getattr(delta, "reasoning_content", None) or (
                            (delta.model_extra or {}).get("reasoning_content") if delta.model_extra else None
                        )
                        if reasoning:
                            yield ChatChunk("thinking", reasoning)
                        if delta.content:
                            yield ChatChunk("answer", delta.content)
                        if choice.finish_reason:
                            finish = choice.finish_reason
        except OpenAIError as exc:
            raise ModelCallError(f"{type(exc).__name__}: {exc}") from exc
        yield ChatChunk("end", finish_reason=finish)

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        """The whole reply, assembled from the stream."""
        return await collect(self, messages, options)


class OpenAICompatibleEmbedder:
    """Embeddings from ``/v1/embeddings``; the vector space is identified by model name and base URL."""

    def __init__(
        self, base_url: str, model: str, api_key: str | None = None, dimensions: int = 0, batch_size: int = 64
    ) -> None:
        """``model`` at ``base_url``, a server speaking OpenAI's embeddings API; ``dimensions`` known after the first call."""
        from openai import OpenAI

        self.model_id = f"{model}@{base_url}"
        self.dimensions = dimensions
        self._model = model
        self._batch_size = batch_size
        self._client = OpenAI(base_url=base_url, api_key=api_key or "not-needed")

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Vectors in batches of ``batch_size`` texts, normalised here (servers do not all normalise)."""
        from openai import OpenAIError

        rows: list[list[float]] = []
        try:
            for start in range(0, len(texts), self._batch_size):
                reply = self._client.embeddings.create(
                    model=self._model, input=list(texts[start : start + self._batch_size])
                )
                rows.extend(item.embedding for item in sorted(reply.data, key=lambda d: d.index))
        except OpenAIError as exc:
            raise ModelCallError(f"{type(exc).__name__}: {exc}") from exc
        matrix = np.asarray(rows, dtype=np.float32)
        if matrix.size:
            self.dimensions = matrix.shape[1]
            matrix /= np.clip(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12, None)
        return matrix

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """The query's vector (embedded as a document: the API has no query mode)."""
        vector: npt.NDArray[np.float32] = self.embed_documents([text])[0]
        return vector
