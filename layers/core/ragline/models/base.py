"""Ports for the models the pipeline calls."""

from __future__ import annotations

import base64
import binascii
import re
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
    """One message of a conversation as a chat model reads it.

    ``images``: ``data:`` URLs sent beside the text to a model that can see them (an OpenAI-compatible
    ``image_url`` part, a Bedrock image block); a text-only adapter reads ``content`` alone.
    """

    role: Literal["system", "user", "assistant"]
    content: str
    images: tuple[str, ...] = ()


_THINK_TAGS = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL | re.IGNORECASE)


def strip_think_tags(text: str) -> str:
    """``text`` without its ``<think>`` blocks (an unclosed one runs to the end), trimmed.

    What a reasoning model writes before its reply; every reader of a reply drops it.
    """
    return _THINK_TAGS.sub("", text).strip()


def data_url(raw: bytes, media_type: str) -> str:
    """``raw`` as a ``data:`` URL."""
    return f"data:{media_type};base64,{base64.b64encode(raw).decode('ascii')}"


def data_url_bytes(url: str) -> tuple[bytes, str] | None:
    """The bytes and media type of a base64 ``data:`` URL; None for anything else or unreadable base64."""
    if not url.startswith("data:") or ";base64," not in url:
        return None
    media_type, _, payload = url[5:].partition(";base64,")
    try:
        return base64.b64decode(payload, validate=True), media_type
    except (binascii.Error, ValueError):
        return None


@dataclass(frozen=True)
class ChatChunk:
    """A piece of a streamed reply: answer text, reasoning text, or the end with its finish reason."""

    type: Literal["answer", "thinking", "end"]
    content: str = ""
    finish_reason: str | None = None


@dataclass(frozen=True)
class ChatResponse:
    """A whole (non-streamed) reply: the answer text, any reasoning text, and why generation stopped."""

    content: str
    thinking: str = ""
    finish_reason: str | None = None


class ChatModel(Protocol):
    """A chat model; ``model_id`` names it in logs and in the models list."""

    model_id: str

    def chat_stream(self, messages: Sequence[ChatMessage], options: ChatOptions) -> AsyncIterator[ChatChunk]:
        """Streams chunks; raises :class:`ModelCallError` on failure (also mid-stream)."""
        ...

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        """The whole reply, assembled from the stream; raises :class:`ModelCallError` on failure."""
        ...


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

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One L2-normalised vector per text, as rows of a float32 matrix."""
        ...

    def embed_query(self, text: str) -> Vector:
        """The L2-normalised vector of a search query (models that prefix queries do so here)."""
        ...
