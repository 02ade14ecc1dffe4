"""DynamoDB adapters of the store ports (the AWS runtime), a module per port as on the SQLite side.

Tables (defined in template.yaml):
- tenants: partition ``pk``: ``tenant#<id>`` (the tenant), ``key#<sha256>`` (an API key), ``name#<name>``;
- knowledge: partition ``pk`` / sort ``sk``, one table for knowledge bases, documents and chunks;
- sessions: partition ``tenant_id`` / sort ``id``; messages: partition ``session_id`` / sort ``id``.
Tenant isolation is in the keys or checked on every read: another tenant's id reads as absent.
"""

from ragline.store.dynamodb.citations import DynamoCitationHistory
from ragline.store.dynamodb.items import ITEM_IS_NEW
from ragline.store.dynamodb.knowledge import DynamoKnowledgeStore
from ragline.store.dynamodb.sessions import OPEN_TURN_ATTRIBUTE, DynamoSessionStore
from ragline.store.dynamodb.tags import DynamoTagStore
from ragline.store.dynamodb.tenants import DynamoTenantStore

__all__ = [
    "ITEM_IS_NEW",
    "OPEN_TURN_ATTRIBUTE",
    "DynamoCitationHistory",
    "DynamoKnowledgeStore",
    "DynamoSessionStore",
    "DynamoTagStore",
    "DynamoTenantStore",
]
