"""Stores: tenants and keys, knowledge bases and documents, sessions and messages.

Ports in :mod:`ragline.store.base`; adapters named after their backend (``Sqlite*`` here, ``Dynamo*`` in
:mod:`ragline.store.dynamodb`).
"""

from ragline.store.base import KnowledgeStore, SessionStore, TenantStore
from ragline.store.db import Database
from ragline.store.knowledge import SqliteKnowledgeStore
from ragline.store.models import Chunk, Document, KnowledgeBase, Message, Session, Tenant
from ragline.store.sessions import SqliteSessionStore
from ragline.store.tenants import SqliteTenantStore

__all__ = [
    "Chunk",
    "Database",
    "Document",
    "KnowledgeBase",
    "KnowledgeStore",
    "Message",
    "Session",
    "SessionStore",
    "SqliteKnowledgeStore",
    "SqliteSessionStore",
    "SqliteTenantStore",
    "Tenant",
    "TenantStore",
]
