"""Builders for merge tests: search results, stored chunks and an in-memory chunk lookup."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ragline.store.models import Chunk
from ragline.types import SearchResult


class DictLookup:
    """A ``ChunkLookup`` over a dict that records every call, so tests can count store reads."""

    def __init__(self) -> None:
        self.chunks: dict[str, Chunk] = {}
        self.calls: list[list[str]] = []

    def add(self, *chunks: Chunk) -> DictLookup:
        for chunk in chunks:
            self.chunks[chunk.id] = chunk
        return self

    def __call__(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        self.calls.append(list(chunk_ids))
        return [self.chunks[i] for i in chunk_ids if i in self.chunks]


@pytest.fixture
def lookup() -> DictLookup:
    return DictLookup()


@pytest.fixture
def make_result():
    def factory(id: str, content: str = "", **fields) -> SearchResult:
        values = {"knowledge_id": "doc", "score": 0.5}
        values.update(fields)
        return SearchResult(id=id, content=content or f"content of {id}", **values)

    return factory


@pytest.fixture
def make_chunk():
    def factory(id: str, content: str, **fields) -> Chunk:
        values = {"tenant_id": "t", "knowledge_base_id": "kb", "knowledge_id": "doc", "chunk_index": 0}
        values.update(fields)
        return Chunk(id=id, content=content, **values)

    return factory
