"""Ports for the models the pipeline calls."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt

from ragline.types import ChatOptions

Vector = npt.NDArray[np.float32]

# finish_reason values that mean "cut by the output limit" across providers.
TRUNCATION_REASONS = frozenset({"length", "max_tokens", "max_output_tokens"})


class ModelCallError(Exception):
    """A model could not be reached or answered with an error."""


@dataclass(frozen=True)
class ChatMessage:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class ChatChunk:
    """A piece of a streamed reply: answer text, reasoning text, or the end with its finish reason."""

    type: Literal["answer", "thinking", "end"]
    content: str = ""
    finish_reason: str | None = None


@dataclass(frozen=True)
class ChatResponse:
    content: str
    thinking: str = ""
    finish_reason: str | None = None


class ChatModel(Protocol):
    model_id: str

    def chat_stream(self, messages: Sequence[ChatMessage], options: ChatOptions) -> AsyncIterator[ChatChunk]:
        """Streams chunks; raises :class:`ModelCallError` on failure (also mid-stream)."""
        ...

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse: ...


def is_generative(model: ChatModel) -> bool:
    """Whether the model writes text of its own.

    A model that only quotes its context (the extractive answerer) says ``generative = False``; it is asked for no
    title, SQL or graph extraction.
    """
    return bool(getattr(model, "generative", True))


async def collect(model: ChatModel, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
    """A non-streaming reply assembled from a model's stream."""
    answer: list[str] = []
    thinking: list[str] = []
    finish: str | None = None
    async for chunk in model.chat_stream(messages, options):
        if chunk.type == "answer":
            answer.append(chunk.content)
        elif chunk.type == "thinking":
            thinking.append(chunk.content)
        else:
            finish = chunk.finish_reason
    return ChatResponse("".join(answer), "".join(thinking), finish)


class Embedder(Protocol):
    """Turns text into L2-normalised vectors. ``model_id`` identifies the vector space (name + endpoint)."""

    model_id: str
    dimensions: int

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...

    def embed_query(self, text: str) -> Vector: ...
