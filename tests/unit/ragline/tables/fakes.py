"""Fakes shared by the table tests and the DATA_ANALYSIS stage tests."""

from __future__ import annotations

import hashlib

import numpy as np

EMBEDDING_MODEL = "fake-hash"
DIMENSIONS = 16


class HashEmbedder:
    """Deterministic unit vectors from the text's hash: enough to store and index, no model to load."""

    model_id = EMBEDDING_MODEL
    dimensions = DIMENSIONS

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def _vector(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
        vector = np.random.default_rng(seed).standard_normal(DIMENSIONS).astype(np.float32)
        return vector / np.linalg.norm(vector)

    def embed_documents(self, texts):
        self.calls.append(list(texts))
        return np.vstack([self._vector(t) for t in texts]) if texts else np.zeros((0, DIMENSIONS), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)
