"""Test doubles of the memory tests: a concept embedder, a scripted chat model, an opted-in request."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from ragline.models.base import ModelCallError
from ragline.types import PipelineRequest
from tests.support.chat_models import ScriptedChatModel

# Words sharing a concept share a dimension: "cook" meets "vegetarian" by vector with no word in common.
CONCEPTS = {
    "work": 0,
    "job": 0,
    "employer": 0,
    "acme": 0,
    "office": 0,
    "cook": 1,
    "food": 1,
    "eat": 1,
    "restaurant": 1,
    "vegetarian": 1,
    "live": 2,
    "lives": 2,
    "city": 2,
    "berlin": 2,
    "visit": 2,
    "name": 3,
    "called": 3,
    "alice": 3,
}
DIMENSIONS = 16
_WORD = re.compile(r"\w+")


class ConceptEmbedder:
    """Deterministic unit vectors: concept words on their dimension, other words hashed onto the rest."""

    def __init__(self, model_id: str = "fake:concepts") -> None:
        self.model_id = model_id
        self.dimensions = DIMENSIONS
        self.calls: list[str] = []

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(DIMENSIONS, dtype=np.float32)
        for word in _WORD.findall(text.lower()):
            if word in CONCEPTS:
                vector[CONCEPTS[word]] += 3.0
            else:
                bucket = 4 + int(hashlib.md5(word.encode()).hexdigest(), 16) % (DIMENSIONS - 4)
                vector[bucket] += 0.2
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector

    def embed_query(self, text: str) -> np.ndarray:
        self.calls.append(text)
        return self._vector(text)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.extend(texts)
        return np.asarray([self._vector(t) for t in texts], dtype=np.float32)


class BrokenEmbedder(ConceptEmbedder):
    def embed_query(self, text: str) -> np.ndarray:
        raise ModelCallError("embedding endpoint down")

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        raise ModelCallError("embedding endpoint down")


def generative_model(reply: str = "[]", error: Exception | None = None) -> ScriptedChatModel:
    """A generative chat model for memory extraction, which assembles its stream (two pieces)."""
    return ScriptedChatModel(
        "fake:generative", reply=error if error is not None else reply, pieces=2, streams_only=True
    )


class MemoryRequest(PipelineRequest):
    """``PipelineRequest`` with the opt-in the lead adds (``memory_enabled``), on by default here."""

    memory_enabled: bool = True


def memory_request(**overrides: object) -> MemoryRequest:
    values: dict[str, object] = {
        "query": "Where do I work?",
        "request_id": "req-1",
        "session_id": "sess-1",
        "tenant_id": "t-1",
        "user_id": "alice",
        "user_message_id": "msg-user-1",
    }
    values.update(overrides)
    return MemoryRequest(**values)  # type: ignore[arg-type]
