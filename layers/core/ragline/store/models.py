"""Stored records, shared by every store adapter (SQLite, DynamoDB)."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from pydantic import BaseModel, Field

from ragline.store.ids import utc_now


class Tenant(BaseModel):
    id: str
    name: str
    created_at: str


def hash_key(api_key: str) -> str:
    return hashlib.sha256(api_key.encode("utf-8")).hexdigest()


def generate_key() -> str:
    return "rl-" + secrets.token_urlsafe(24)


class KnowledgeBase(BaseModel):
    id: str
    tenant_id: str
    name: str
    description: str = ""
    embedding_model: str
    created_at: str


class Document(BaseModel):
    id: str
    tenant_id: str
    knowledge_base_id: str
    title: str
    filename: str = ""
    file_type: str = "text"
    description: str = ""
    source: str = ""
    content_hash: str = ""
    chunk_count: int = 0
    enabled: bool = True
    created_at: str = Field(default_factory=utc_now)


class Chunk(BaseModel):
    id: str
    tenant_id: str
    knowledge_base_id: str
    knowledge_id: str
    chunk_index: int
    chunk_type: str = "text"
    content: str
    header: str = ""
    parent_chunk_id: str = ""
    pre_chunk_id: str = ""
    next_chunk_id: str = ""
    start_at: int = 0
    end_at: int = 0
    metadata: dict[str, object] = Field(default_factory=dict)
    # Parent chunks carry context for their children; they are not matched directly.
    searchable: bool = True
    enabled: bool = True


class DuplicateName(Exception):
    pass


class Session(BaseModel):
    id: str
    tenant_id: str
    title: str = ""
    knowledge_base_ids: list[str] = Field(default_factory=list)
    options: dict[str, Any] = Field(default_factory=dict)
    created_at: str
    updated_at: str


class Message(BaseModel):
    id: str
    session_id: str
    tenant_id: str
    request_id: str
    role: str
    content: str = ""
    knowledge_references: list[dict[str, Any]] = Field(default_factory=list)
    is_completed: bool = False
    stop_reason: str = ""
    created_at: str
    updated_at: str
