"""Stores: tenants and keys, knowledge bases and documents, sessions and messages."""

from ragline.store.db import Database
from ragline.store.knowledge import Chunk, Document, KnowledgeBase, KnowledgeStore
from ragline.store.sessions import Message, Session, SessionStore
from ragline.store.tenants import Tenant, TenantStore

__all__ = [
    "Chunk",
    "Database",
    "Document",
    "KnowledgeBase",
    "KnowledgeStore",
    "Message",
    "Session",
    "SessionStore",
    "Tenant",
    "TenantStore",
]
