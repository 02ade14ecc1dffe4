"""DynamoDB adapters of the store ports (the AWS runtime).

Tables (defined in template.yaml):
- tenants: partition ``pk``: ``tenant#<id>`` (the tenant), ``key#<sha256>`` (an API key), ``name#<name>``;
- knowledge: partition ``pk`` / sort ``sk``, one table for knowledge bases, documents and chunks;
- sessions: partition ``tenant_id`` / sort ``id``; messages: partition ``session_id`` / sort ``id``.
Tenant isolation is in the keys or checked on every read: another tenant's id reads as absent.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

from boto3.dynamodb.conditions import Attr, Key
from botocore.exceptions import ClientError

from ragline.store.ids import new_id, utc_now
from ragline.store.models import (
    Chunk,
    Document,
    DocumentStatus,
    DocumentTotals,
    DuplicateName,
    KnowledgeBase,
    KnowledgeBaseSettings,
    Message,
    Session,
    SummaryStatus,
    Tag,
    Tenant,
    document_changes,
    generate_key,
    hash_key,
    new_session,
    new_tag,
    new_turn,
    retagged,
    tag_changes,
)

# The partition of the pending-document markers (see ``DynamoKnowledgeStore._pending_marker``).
_PENDING = "pending"
# The item does not exist yet: creating it cannot overwrite anyone's record.
ITEM_IS_NEW = "attribute_not_exists(pk)"
_BATCH_GET_LIMIT = 100


def _conditional_failure(error: ClientError) -> bool:
    code = error.response.get("Error", {}).get("Code")
    return code in {"ConditionalCheckFailedException", "TransactionCanceledException"}


def _query_all(table: Any, **kwargs: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    while True:
        page = table.query(**kwargs)
        items.extend(page.get("Items", []))
        if not page.get("LastEvaluatedKey"):
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _plain(item: dict[str, Any], *drop: str) -> dict[str, Any]:
    """An item without its key attributes, numbers back to int (DynamoDB returns Decimal)."""
    out: dict[str, Any] = {}
    for name, value in item.items():
        if name in drop:
            continue
        if type(value).__name__ == "Decimal":
            value = int(value) if value == int(value) else float(value)
        out[name] = value
    return out


class DynamoTenantStore:
    """Tenants in the knowledge table: ``tenant#<id>``, ``key#<sha256 of a key>`` and ``name#<name>`` items."""

    def __init__(self, table: Any) -> None:
        """Tenants kept in ``table`` (the knowledge table)."""
        self._table = table

    def create(self, name: str, api_key: str | None = None) -> tuple[Tenant, str]:
        """A new tenant and its key in one transaction; returns the key in clear text (only its hash is stored)."""
        key = api_key or generate_key()
        tenant = Tenant(id=new_id(), name=name, created_at=utc_now())
        client = self._table.meta.client
        table = self._table.name
        client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": table, "Item": _attrs({"pk": f"tenant#{tenant.id}", **tenant.model_dump()})}},
                {
                    "Put": {
                        "TableName": table,
                        "Item": _attrs({"pk": f"key#{hash_key(key)}", "tenant_id": tenant.id}),
                        "ConditionExpression": ITEM_IS_NEW,
                    }
                },
            ]
        )
        # Names are not unique: the first tenant of a name keeps it, as in the SQLite store.
        self._put_if_new({"pk": f"name#{name}", "tenant_id": tenant.id})
        return tenant, key

    def add_key(self, tenant_id: str, api_key: str) -> None:
        """A key belongs to the tenant that first registered it; it can never be moved to another tenant."""
        self._put_if_new({"pk": f"key#{hash_key(api_key)}", "tenant_id": tenant_id})

    def _put_if_new(self, item: dict[str, Any]) -> bool:
        try:
            self._table.put_item(Item=item, ConditionExpression=ITEM_IS_NEW)
        except ClientError as error:
            if _conditional_failure(error):
                return False
            raise
        return True

    def _tenant(self, tenant_id: str) -> Tenant | None:
        item = self._table.get_item(Key={"pk": f"tenant#{tenant_id}"}).get("Item")
        return Tenant(**_plain(item, "pk")) if item else None

    def for_key(self, api_key: str) -> Tenant | None:
        """The tenant an API key belongs to, or None for an unknown or empty key."""
        if not api_key:
            return None
        item = self._table.get_item(Key={"pk": f"key#{hash_key(api_key)}"}).get("Item")
        return self._tenant(str(item["tenant_id"])) if item else None

    def by_id(self, tenant_id: str) -> Tenant | None:
        """The tenant ``tenant_id``, or None."""
        return self._tenant(tenant_id)

    def by_name(self, name: str) -> Tenant | None:
        """The first tenant created under ``name``, or None (names are not unique)."""
        item = self._table.get_item(Key={"pk": f"name#{name}"}).get("Item")
        return self._tenant(str(item["tenant_id"])) if item else None


def _attrs(values: dict[str, Any]) -> dict[str, Any]:
    """Items for ``table.meta.client`` calls: that client converts Python values itself (as the table does)."""
    return values


class DynamoKnowledgeStore:
    """Knowledge bases, their names, documents, content hashes and chunks in the knowledge table.

    Knowledge bases (``tenant#<t>`` / ``kb#<id>``), their names (``tenant#<t>`` / ``kbname#<name>``), documents
    (``kb#<kb>`` / ``doc#<created>#<id>`` and ``doc#<id>`` / ``meta``), content hashes (``kb#<kb>`` / ``hash#<sha>``)
    and chunks (``doc#<id>`` / ``chunk#<type>#<index>`` and ``chunk#<id>`` / ``meta``).
    """

    def __init__(self, table: Any) -> None:
        """Knowledge kept in ``table`` (the knowledge table)."""
        self._table = table

    def atomic(self) -> AbstractContextManager[object]:
        """No scope: DynamoDB has no transaction spanning the search index, so ingestion writes the index last."""
        # DynamoDB has no transaction spanning the index (OpenSearch); ingestion writes the index last.
        return contextlib.nullcontext()

    def create_knowledge_base(
        self,
        tenant_id: str,
        name: str,
        embedding_model: str,
        description: str = "",
        wiki_enabled: bool = False,
        graph_extraction_enabled: bool = False,
        embedding_model_auto: bool = False,
        settings: KnowledgeBaseSettings | None = None,
    ) -> KnowledgeBase:
        """A new knowledge base of the tenant; a name the tenant already uses raises :class:`DuplicateName`."""
        kb = KnowledgeBase(
            id=new_id(),
            tenant_id=tenant_id,
            name=name,
            description=description,
            embedding_model=embedding_model,
            created_at=utc_now(),
            wiki_enabled=wiki_enabled,
            graph_extraction_enabled=graph_extraction_enabled,
            embedding_model_auto=embedding_model_auto,
            settings=settings or KnowledgeBaseSettings(),
        )
        client, table = self._table.meta.client, self._table.name
        try:
            client.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": table,
                            "Item": _attrs({"pk": f"tenant#{tenant_id}", "sk": f"kbname#{name}", "kb_id": kb.id}),
                            "ConditionExpression": "attribute_not_exists(sk)",
                        }
                    },
                    {
                        "Put": {
                            "TableName": table,
                            "Item": _attrs({"pk": f"tenant#{tenant_id}", "sk": f"kb#{kb.id}", **kb.model_dump()}),
                        }
                    },
                    {
                        "Put": {
                            "TableName": table,
                            "Item": _attrs({"pk": f"kbid#{kb.id}", "sk": "meta", "tenant_id": tenant_id}),
                        }
                    },
                ]
            )
        except ClientError as error:
            if _conditional_failure(error):
                raise DuplicateName(name) from None
            raise
        return kb

    def knowledge_base(self, tenant_id: str, kb_id: str) -> KnowledgeBase | None:
        """The tenant's knowledge base ``kb_id``, or None when it is not the tenant's."""
        item = self._table.get_item(Key={"pk": f"tenant#{tenant_id}", "sk": f"kb#{kb_id}"}).get("Item")
        return KnowledgeBase(**_plain(item, "pk", "sk")) if item else None

    def set_embedding_model(
        self, tenant_id: str, kb_id: str, embedding_model: str, *, language: str | None = None, auto: bool | None = None
    ) -> KnowledgeBase | None:
        """Set the model the knowledge base's vectors are made with; None when it is not this tenant's."""
        names = {"#m": "embedding_model"}
        values: dict[str, Any] = {":m": embedding_model}
        sets = ["#m = :m"]
        if language is not None:
            names["#l"], values[":l"] = "language", language
            sets.append("#l = :l")
        if auto is not None:
            names["#a"], values[":a"] = "embedding_model_auto", auto
            sets.append("#a = :a")
        try:
            reply = self._table.update_item(
                Key={"pk": f"tenant#{tenant_id}", "sk": f"kb#{kb_id}"},
                UpdateExpression="SET " + ", ".join(sets),
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if _conditional_failure(error):
                return None
            raise
        return KnowledgeBase(**_plain(reply["Attributes"], "pk", "sk"))

    def knowledge_bases(self, tenant_id: str, kb_ids: Iterable[str]) -> list[KnowledgeBase]:
        """The tenant's knowledge bases among ``kb_ids`` (each once, unknown ones left out)."""
        found = [self.knowledge_base(tenant_id, kb_id) for kb_id in dict.fromkeys(kb_ids)]
        return [kb for kb in found if kb is not None]

    def knowledge_base_any_tenant(self, kb_id: str) -> KnowledgeBase | None:
        """The knowledge base by id whoever owns it, for internal settings lookups only."""
        item = self._table.get_item(Key={"pk": f"kbid#{kb_id}", "sk": "meta"}).get("Item")
        return self.knowledge_base(str(item["tenant_id"]), kb_id) if item else None

    def knowledge_base_by_name(self, tenant_id: str, name: str) -> KnowledgeBase | None:
        """The tenant's knowledge base called ``name``, or None."""
        item = self._table.get_item(Key={"pk": f"tenant#{tenant_id}", "sk": f"kbname#{name}"}).get("Item")
        return self.knowledge_base(tenant_id, str(item["kb_id"])) if item else None

    def list_knowledge_bases(self, tenant_id: str) -> list[KnowledgeBase]:
        """The tenant's knowledge bases, oldest first."""
        items = _query_all(
            self._table, KeyConditionExpression=Key("pk").eq(f"tenant#{tenant_id}") & Key("sk").begins_with("kb#")
        )
        return sorted((KnowledgeBase(**_plain(i, "pk", "sk")) for i in items), key=lambda kb: kb.created_at)

    def document_counts(self, kb_ids: Sequence[str]) -> dict[str, int]:
        """How many documents each knowledge base holds; knowledge bases without any are left out."""
        counts: dict[str, int] = {}
        for kb_id in kb_ids:
            kwargs: dict[str, Any] = {
                "KeyConditionExpression": Key("pk").eq(f"kb#{kb_id}") & Key("sk").begins_with("doc#"),
                "Select": "COUNT",
            }
            total = 0
            while True:  # a count is paged like any query (1 MB of items read per page)
                page = self._table.query(**kwargs)
                total += int(page.get("Count", 0))
                if not page.get("LastEvaluatedKey"):
                    break
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
            if total:
                counts[kb_id] = total
        return counts

    def update_knowledge_base(
        self,
        tenant_id: str,
        kb_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        pinned: bool | None = None,
        settings: KnowledgeBaseSettings | None = None,
    ) -> KnowledgeBase | None:
        """Rename, re-describe, pin, unpin or re-set (``settings``, replaced whole) a knowledge base.

        None when it is not this tenant's.
        """
        kb = self.knowledge_base(tenant_id, kb_id)
        if kb is None:
            return None
        changes: dict[str, str | None] = {}
        if pinned is not None and pinned != (kb.pinned_at is not None):
            changes["pinned_at"] = utc_now() if pinned else None
        if name is not None and name != kb.name:
            changes["name"] = name
        if description is not None and description != kb.description:
            changes["description"] = description
        if not changes and (settings is None or settings == kb.settings):
            return kb
        updated = kb.model_copy(update={**changes, **({"settings": settings} if settings is not None else {})})
        client, table = self._table.meta.client, self._table.name
        writes: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": table,
                    "Item": _attrs({"pk": f"tenant#{tenant_id}", "sk": f"kb#{kb.id}", **updated.model_dump()}),
                }
            }
        ]
        if "name" in changes:
            # The new name is claimed and the old one released in the same transaction as the record.
            writes += [
                {
                    "Put": {
                        "TableName": table,
                        "Item": _attrs({"pk": f"tenant#{tenant_id}", "sk": f"kbname#{name}", "kb_id": kb.id}),
                        "ConditionExpression": "attribute_not_exists(sk)",
                    }
                },
                {
                    "Delete": {
                        "TableName": table,
                        "Key": _attrs({"pk": f"tenant#{tenant_id}", "sk": f"kbname#{kb.name}"}),
                    }
                },
            ]
        try:
            client.transact_write_items(TransactItems=writes)
        except ClientError as error:
            if _conditional_failure(error):
                raise DuplicateName(str(name)) from None
            raise
        return updated

    def delete_knowledge_base(self, tenant_id: str, kb_id: str) -> bool:
        """Remove the knowledge base with its documents and chunks; False when it is not this tenant's."""
        kb = self.knowledge_base(tenant_id, kb_id)
        if kb is None:
            return False
        for document in self.documents(tenant_id, kb_id, limit=1_000_000):
            self.delete_document(tenant_id, document.id)
        with self._table.batch_writer() as batch:
            # Whatever else is kept under the knowledge base's partition (hashes, markers) goes too.
            for item in _query_all(self._table, KeyConditionExpression=Key("pk").eq(f"kb#{kb_id}")):
                batch.delete_item(Key={"pk": item["pk"], "sk": item["sk"]})
            batch.delete_item(Key={"pk": f"tenant#{tenant_id}", "sk": f"kbname#{kb.name}"})
            batch.delete_item(Key={"pk": f"tenant#{tenant_id}", "sk": f"kb#{kb_id}"})
            batch.delete_item(Key={"pk": f"kbid#{kb_id}", "sk": "meta"})
        return True

    @staticmethod
    def _document_keys(document: Document) -> list[dict[str, str]]:
        """A document is kept twice: its listing under the knowledge base and its own item."""
        return [
            {"pk": f"kb#{document.knowledge_base_id}", "sk": f"doc#{document.created_at}#{document.id}"},
            {"pk": f"doc#{document.id}", "sk": "meta"},
        ]

    def _set_document(self, document: Document, values: dict[str, Any]) -> None:
        self._set(self._document_keys(document), values)

    def _set(self, keys: list[dict[str, str]], values: dict[str, Any]) -> None:
        """The same fields set on every copy of a record (never creating one that is gone)."""
        names = {f"#f{i}": name for i, name in enumerate(values)}
        assignments = ", ".join(f"#f{i} = :v{i}" for i in range(len(values)))
        for key in keys:
            self._table.update_item(
                Key=key,
                UpdateExpression=f"SET {assignments}",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={f":v{i}": value for i, value in enumerate(values.values())},
            )

    @staticmethod
    def _chunk_keys(chunk: Chunk) -> list[dict[str, str]]:
        """A chunk is kept twice: under its document (in reading order) and on its own."""
        return [
            {"pk": f"doc#{chunk.knowledge_id}", "sk": f"chunk#{chunk.chunk_type}#{chunk.chunk_index:08d}"},
            {"pk": f"chunk#{chunk.id}", "sk": "meta"},
        ]

    def _set_chunk(self, chunk: Chunk, values: dict[str, Any]) -> None:
        self._set(self._chunk_keys(chunk), values)

    def update_chunk(
        self,
        tenant_id: str,
        chunk_id: str,
        *,
        content: str | None = None,
        enabled: bool | None = None,
        metadata: dict[str, object] | None = None,
        searchable: bool | None = None,
    ) -> Chunk | None:
        """Change a chunk's text, enabled flag or metadata; None when it is not this tenant's."""
        found = self.chunks(tenant_id, [chunk_id])
        if not found:
            return None
        changes: dict[str, Any] = {}
        if content is not None:
            changes["content"] = content
        if enabled is not None:
            changes["enabled"] = enabled
        if metadata is not None:
            changes["metadata"] = metadata
        if searchable is not None:
            changes["searchable"] = searchable
        if changes:
            stored = {
                **changes,
                **({"metadata": json.dumps(metadata, ensure_ascii=False)} if metadata is not None else {}),
            }
            self._set_chunk(found[0], stored)
        return found[0].model_copy(update=changes)

    def delete_chunk(self, tenant_id: str, chunk_id: str) -> bool:
        """Remove one chunk, relinking its neighbours; False when it is not this tenant's."""
        found = self.chunks(tenant_id, [chunk_id])
        if not found:
            return False
        chunk = found[0]
        with self._table.batch_writer() as batch:
            for key in self._chunk_keys(chunk):
                batch.delete_item(Key=key)
        neighbours = {c.id: c for c in self.chunks(tenant_id, [chunk.pre_chunk_id, chunk.next_chunk_id]) if c}
        if chunk.pre_chunk_id in neighbours:
            self._set_chunk(neighbours[chunk.pre_chunk_id], {"next_chunk_id": chunk.next_chunk_id})
        if chunk.next_chunk_id in neighbours:
            self._set_chunk(neighbours[chunk.next_chunk_id], {"pre_chunk_id": chunk.pre_chunk_id})
        for child in self.chunks_of_document(tenant_id, chunk.knowledge_id):
            if child.parent_chunk_id == chunk.id:
                self._set_chunk(child, {"parent_chunk_id": ""})
        document = self.document(tenant_id, chunk.knowledge_id)
        if document is not None and chunk.searchable:
            self._set_document(document, {"chunk_count": max(0, document.chunk_count - 1)})
        return True

    def update_document(
        self,
        tenant_id: str,
        document_id: str,
        *,
        title: str | None = None,
        description: str | None = None,
        tags: Sequence[str] | None = None,
    ) -> Document | None:
        """Change a document's title, description or tags; None when it is not this tenant's."""
        document = self.document(tenant_id, document_id)
        if document is None:
            return None
        changes = document_changes(document, title=title, description=description, tags=tags)
        if not changes:
            return document
        changes["updated_at"] = utc_now()
        try:
            self._set_document(document, changes)
        except ClientError as error:
            if _conditional_failure(error):
                return None  # deleted meanwhile
            raise
        return document.model_copy(update=changes)

    def replace_document_tag(self, tenant_id: str, kb_id: str, old: str, new: str | None) -> int:
        """Every document of the knowledge base carrying ``old`` carries ``new`` instead; how many changed."""
        changed = 0
        for document in self.documents(tenant_id, kb_id, limit=1_000_000):
            if old not in document.tags:
                continue
            self._set_document(document, {"tags": retagged(document.tags, old, new)})
            changed += 1
        return changed

    def replace_document(self, document: Document, chunks: Sequence[Chunk]) -> bool:
        """Replace a document's record and chunks so a reader never finds it without chunks.

        The new chunks and record written first (a chunk's place in its document is its key, so the new overwrite the
        old at the same places), then what is left of the old removed: a reader never finds the document without chunks.
        """
        current = self.document(document.tenant_id, document.id)
        if current is None or current.knowledge_base_id != document.knowledge_base_id:
            return False
        old = _query_all(
            self._table, KeyConditionExpression=Key("pk").eq(f"doc#{document.id}") & Key("sk").begins_with("chunk#")
        )
        stored = document.model_copy(update={"created_at": current.created_at, "updated_at": utc_now()})
        self.insert_document(stored, chunks)
        kept_places = {f"chunk#{c.chunk_type}#{c.chunk_index:08d}" for c in chunks}
        kept_ids = {c.id for c in chunks}
        kb_partition = f"kb#{document.knowledge_base_id}"
        with self._table.batch_writer() as batch:
            for item in old:
                if "id" in item and item["id"] not in kept_ids:
                    batch.delete_item(Key={"pk": f"chunk#{item['id']}", "sk": "meta"})
                if item["sk"] not in kept_places:
                    batch.delete_item(Key={"pk": item["pk"], "sk": item["sk"]})
            if current.content_hash and current.content_hash != stored.content_hash:
                held = self._table.get_item(Key={"pk": kb_partition, "sk": f"hash#{current.content_hash}"}).get("Item")
                if held is not None and held.get("doc_id") == document.id:
                    batch.delete_item(Key={"pk": kb_partition, "sk": f"hash#{current.content_hash}"})
        if stored.status != DocumentStatus.PENDING:
            self._table.delete_item(Key={"pk": _PENDING, "sk": f"{stored.created_at}#{stored.id}"})
        return True

    def delete_document(self, tenant_id: str, document_id: str) -> bool:
        """Remove the document and its chunks; False when it is not this tenant's."""
        document = self.document(tenant_id, document_id)
        if document is None:
            return False
        items = _query_all(self._table, KeyConditionExpression=Key("pk").eq(f"doc#{document_id}"))
        with self._table.batch_writer() as batch:
            for item in items:
                if str(item["sk"]).startswith("chunk#") and "id" in item:
                    batch.delete_item(Key={"pk": f"chunk#{item['id']}", "sk": "meta"})
                batch.delete_item(Key={"pk": item["pk"], "sk": item["sk"]})
            kb_partition = f"kb#{document.knowledge_base_id}"
            batch.delete_item(Key={"pk": kb_partition, "sk": f"doc#{document.created_at}#{document.id}"})
            if document.content_hash:
                held = self._table.get_item(Key={"pk": kb_partition, "sk": f"hash#{document.content_hash}"}).get("Item")
                if held is not None and held.get("doc_id") == document.id:
                    batch.delete_item(Key={"pk": kb_partition, "sk": f"hash#{document.content_hash}"})
        return True

    def insert_document(self, document: Document, chunks: Sequence[Chunk]) -> None:
        """Store a new document and its chunks (a pending one is also listed for the indexing worker)."""
        stored = document.model_copy(
            update={
                "chunk_count": len([c for c in chunks if c.searchable]),
                "updated_at": document.updated_at or document.created_at,
            }
        )
        data = stored.model_dump(mode="json")
        with self._table.batch_writer() as batch:
            if stored.status == DocumentStatus.PENDING:
                batch.put_item(Item=self._pending_marker(stored))
            batch.put_item(
                Item={
                    "pk": f"kb#{document.knowledge_base_id}",
                    "sk": f"doc#{document.created_at}#{document.id}",
                    **data,
                }
            )
            batch.put_item(Item={"pk": f"doc#{document.id}", "sk": "meta", **data})
            if document.content_hash:
                batch.put_item(
                    Item={
                        "pk": f"kb#{document.knowledge_base_id}",
                        "sk": f"hash#{document.content_hash}",
                        "doc_id": document.id,
                    }
                )
            for chunk in chunks:
                record = chunk.model_dump()
                record["metadata"] = json.dumps(chunk.metadata, ensure_ascii=False)
                batch.put_item(
                    Item={
                        "pk": f"doc#{document.id}",
                        "sk": f"chunk#{chunk.chunk_type}#{chunk.chunk_index:08d}",
                        **record,
                    }
                )
                batch.put_item(Item={"pk": f"chunk#{chunk.id}", "sk": "meta", **record})

    def document(self, tenant_id: str, document_id: str) -> Document | None:
        """The tenant's document ``document_id``, or None when it is not the tenant's."""
        item = self._table.get_item(Key={"pk": f"doc#{document_id}", "sk": "meta"}).get("Item")
        if item is None or item.get("tenant_id") != tenant_id:
            return None
        return Document(**_plain(item, "pk", "sk"))

    def documents(self, tenant_id: str, kb_id: str, limit: int = 1000, offset: int = 0) -> list[Document]:
        """One page of a knowledge base's documents, oldest first."""
        items = _query_all(
            self._table,
            KeyConditionExpression=Key("pk").eq(f"kb#{kb_id}") & Key("sk").begins_with("doc#"),
            FilterExpression=Attr("tenant_id").eq(tenant_id),
        )
        return [Document(**_plain(i, "pk", "sk")) for i in items[offset : offset + limit]]

    def document_totals(self, tenant_id: str, kb_id: str) -> DocumentTotals:
        """Every document of the knowledge base counted, however many (not one page of them)."""
        items = _query_all(
            self._table,
            KeyConditionExpression=Key("pk").eq(f"kb#{kb_id}") & Key("sk").begins_with("doc#"),
            FilterExpression=Attr("tenant_id").eq(tenant_id),
            ProjectionExpression="chunk_count, #status",
            ExpressionAttributeNames={"#status": "status"},
        )
        return DocumentTotals(
            documents=len(items),
            chunks=sum(int(i.get("chunk_count", 0)) for i in items),
            processing=sum(1 for i in items if i.get("status") == DocumentStatus.PENDING),
        )

    @staticmethod
    def _pending_marker(document: Document) -> dict[str, Any]:
        """One item per pending document under one partition: the recovery sweep's work list."""
        return {
            "pk": _PENDING,
            "sk": f"{document.created_at}#{document.id}",
            "doc_id": document.id,
            "tenant_id": document.tenant_id,
            "updated_at": document.updated_at or document.created_at,
        }

    def set_document_status(
        self,
        tenant_id: str,
        document_id: str,
        status: DocumentStatus,
        *,
        reason: str = "",
        embedded_count: int | None = None,
        embedding_model: str | None = None,
    ) -> Document | None:
        """Set a document's status, failure reason and progress; None when it is not this tenant's."""
        current = self.document(tenant_id, document_id)
        if current is None:
            return None
        updated = current.model_copy(
            update={
                "status": status,
                "reason": reason,
                "embedded_count": current.embedded_count if embedded_count is None else embedded_count,
                "embedding_model": current.embedding_model if embedding_model is None else embedding_model,
                "updated_at": utc_now(),
            }
        )
        values = {
            ":s": updated.status.value,
            ":r": updated.reason,
            ":e": updated.embedded_count,
            ":m": updated.embedding_model,
            ":u": updated.updated_at,
        }
        expression = "SET #s = :s, reason = :r, embedded_count = :e, embedding_model = :m, updated_at = :u"
        if not self._update_document_items(current, expression, values, {"#s": "status"}):
            return None
        if updated.status == DocumentStatus.PENDING:
            self._table.put_item(Item=self._pending_marker(updated))
        else:
            self._table.delete_item(Key={"pk": _PENDING, "sk": f"{current.created_at}#{document_id}"})
        return updated

    def set_summary_status(self, tenant_id: str, document_id: str, status: SummaryStatus) -> Document | None:
        """The status on both of the document's items (its record and its knowledge base's listing)."""
        current = self.document(tenant_id, document_id)
        if current is None or not self._update_document_items(current, "SET summary_status = :s", {":s": status.value}):
            return None
        return current.model_copy(update={"summary_status": status})

    def _update_document_items(
        self, document: Document, expression: str, values: dict[str, Any], names: dict[str, str] | None = None
    ) -> bool:
        """One update of both of a document's items: its record and its knowledge base's listing.

        False when the document was deleted meanwhile, which stays deleted: an update never creates a partial item.
        """
        for key in (
            {"pk": f"doc#{document.id}", "sk": "meta"},
            {"pk": f"kb#{document.knowledge_base_id}", "sk": f"doc#{document.created_at}#{document.id}"},
        ):
            try:
                self._table.update_item(
                    Key=key,
                    UpdateExpression=expression,
                    ConditionExpression="attribute_exists(pk)",
                    ExpressionAttributeValues=values,
                    **({"ExpressionAttributeNames": names} if names else {}),
                )
            except ClientError as error:
                if _conditional_failure(error):
                    return False
                raise
        return True

    def pending_documents(self, limit: int = 100, updated_before: str = "") -> list[Document]:
        """Documents of every tenant still waiting for their vectors, oldest first (indexing worker and recovery)."""
        items = _query_all(self._table, KeyConditionExpression=Key("pk").eq(_PENDING))
        found: list[Document] = []
        for item in items:
            if updated_before and str(item.get("updated_at", "")) >= updated_before:
                continue
            document = self.document(str(item["tenant_id"]), str(item["doc_id"]))
            if document is not None and document.status == DocumentStatus.PENDING:
                found.append(document)
            if len(found) >= limit:
                break
        return found

    def documents_by_hash(self, tenant_id: str, kb_id: str, content_hash: str) -> Document | None:
        """The tenant's document of this knowledge base with this content hash (a duplicate upload), or None."""
        item = self._table.get_item(Key={"pk": f"kb#{kb_id}", "sk": f"hash#{content_hash}"}).get("Item")
        return self.document(tenant_id, str(item["doc_id"])) if item else None

    def document_ids_with_tags(self, tenant_id: str, kb_id: str, tags: Sequence[str]) -> list[str]:
        """Ids of the knowledge base's documents that carry any of ``tags``."""
        wanted = set(tags)
        return [d.id for d in self.documents(tenant_id, kb_id, limit=1_000_000) if wanted & set(d.tags)]

    @staticmethod
    def _chunk(item: dict[str, Any]) -> Chunk:
        data = _plain(item, "pk", "sk")
        data["metadata"] = json.loads(data.get("metadata") or "{}")
        return Chunk(**data)

    def chunks_of_document(self, tenant_id: str, document_id: str) -> list[Chunk]:
        """The document's chunks (parents and FAQ entries included), in document order."""
        items = _query_all(
            self._table, KeyConditionExpression=Key("pk").eq(f"doc#{document_id}") & Key("sk").begins_with("chunk#")
        )
        chunks = [self._chunk(i) for i in items if i.get("tenant_id") == tenant_id]
        return sorted(chunks, key=lambda c: (c.chunk_type != "text", c.chunk_type, c.chunk_index))

    def chunks(self, tenant_id: str, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The tenant's chunks among ``chunk_ids``, in the order asked; unknown ones are left out."""
        found: dict[str, Chunk] = {}
        client = self._table.meta.client
        for keys in _batches([{"pk": f"chunk#{i}", "sk": "meta"} for i in dict.fromkeys(chunk_ids)]):
            request: dict[str, Any] = {self._table.name: {"Keys": keys}}
            while request:
                reply = client.batch_get_item(RequestItems=request)
                for item in reply.get("Responses", {}).get(self._table.name, []):
                    chunk = self._chunk(item)
                    if chunk.tenant_id == tenant_id:
                        found[chunk.id] = chunk
                request = reply.get("UnprocessedKeys") or {}
        return [found[i] for i in chunk_ids if i in found]


def _batches(keys: list[dict[str, str]]) -> Iterator[list[dict[str, str]]]:
    for start in range(0, len(keys), _BATCH_GET_LIMIT):
        yield keys[start : start + _BATCH_GET_LIMIT]


# An assistant message not completed yet carries this attribute (the partition of the messages table's sparse
# index of open turns); completing the message removes it, so the index holds the open turns alone.
OPEN_TURN_ATTRIBUTE = "open_turn"
_OPEN = "open"


class DynamoSessionStore:
    """Sessions and messages.

    ``open_index`` names the messages table's sparse index of open turns (``OPEN_TURN_ATTRIBUTE`` as its partition key,
    ``created_at`` as its sort key), which a scheduled sweep queries; without one the sweep scans the table.
    """

    def __init__(self, sessions: Any, messages: Any, open_index: str = "") -> None:
        """Sessions in ``sessions`` and messages in ``messages``; ``open_index`` is the sparse index of open turns."""
        self._sessions = sessions
        self._messages = messages
        self._open_index = open_index

    def create_session(
        self,
        tenant_id: str,
        knowledge_base_ids: Sequence[str],
        title: str = "",
        options: dict[str, Any] | None = None,
        description: str = "",
    ) -> Session:
        """A new session of the tenant over ``knowledge_base_ids``."""
        session = new_session(tenant_id, knowledge_base_ids, title, options, description)
        item = session.model_dump()
        item["options"] = json.dumps(session.options)
        self._sessions.put_item(Item=item)
        return session

    @staticmethod
    def _session(item: dict[str, Any]) -> Session:
        data = _plain(item)
        data["options"] = json.loads(data.get("options") or "{}")
        data["knowledge_base_ids"] = list(data.get("knowledge_base_ids") or [])
        return Session(**data)

    def session(self, tenant_id: str, session_id: str) -> Session | None:
        """The tenant's session ``session_id``, or None when it is not the tenant's."""
        item = self._sessions.get_item(Key={"tenant_id": tenant_id, "id": session_id}).get("Item")
        return self._session(item) if item else None

    def sessions(self, tenant_id: str, limit: int = 100) -> list[Session]:
        """The tenant's sessions, most recently active first, at most ``limit``."""
        items = _query_all(self._sessions, KeyConditionExpression=Key("tenant_id").eq(tenant_id))
        sessions = sorted((self._session(i) for i in items), key=lambda s: s.updated_at, reverse=True)
        return sessions[:limit]

    def update_session(
        self,
        tenant_id: str,
        session_id: str,
        *,
        title: str | None = None,
        description: str | None = None,
        pinned: bool | None = None,
    ) -> Session | None:
        """Change a session's title, description or pin; the session as stored after, or None."""
        changes: dict[str, Any] = {}
        if title is not None:
            changes["title"] = title
            changes["title_provisional"] = False
        if description is not None:
            changes["description"] = description
        if changes:
            changes["updated_at"] = utc_now()
        if pinned is not None:
            changes["pinned_at"] = utc_now() if pinned else None
        if not changes:
            return self.session(tenant_id, session_id)
        names = {f"#f{i}": name for i, name in enumerate(changes)}
        values = {f":v{i}": value for i, value in enumerate(changes.values())}
        try:
            reply = self._sessions.update_item(
                Key={"tenant_id": tenant_id, "id": session_id},
                UpdateExpression="SET " + ", ".join(f"#f{i} = :v{i}" for i in range(len(changes))),
                # Only an existing session of this tenant: an update must never create a partial item.
                ConditionExpression="attribute_exists(id)",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if _conditional_failure(error):
                return None
            raise
        return self._session(reply["Attributes"])

    def delete_session(self, tenant_id: str, session_id: str) -> bool:
        """Remove the session and its messages; False when there is no such session of this tenant's."""
        # The messages first: a delete interrupted half-way leaves a session that a repeated delete finishes,
        # never messages no session leads to.
        if self.session(tenant_id, session_id) is None:
            return False
        self.clear_messages(tenant_id, session_id)
        try:
            self._sessions.delete_item(
                Key={"tenant_id": tenant_id, "id": session_id}, ConditionExpression="attribute_exists(id)"
            )
        except ClientError as error:
            if _conditional_failure(error):
                return False
            raise
        return True

    def clear_messages(self, tenant_id: str, session_id: str) -> int:
        """Remove every message of this tenant's session and keep the session; how many were removed."""
        mine = [m for m in self._all(session_id) if m.tenant_id == tenant_id]
        with self._messages.batch_writer() as batch:
            for message in mine:
                batch.delete_item(Key={"session_id": session_id, "id": message.id})
        return len(mine)

    def set_title(self, tenant_id: str, session_id: str, title: str) -> None:
        """Store the generated title (no longer provisional); an update is activity (``updated_at``)."""
        try:
            self._sessions.update_item(
                Key={"tenant_id": tenant_id, "id": session_id},
                UpdateExpression="SET title = :t, title_provisional = :f, updated_at = :u",
                # Only an existing session of this tenant: an update must never create a partial item.
                ConditionExpression="attribute_exists(id)",
                ExpressionAttributeValues={":t": title, ":f": False, ":u": utc_now()},
            )
        except ClientError as error:
            if not _conditional_failure(error):
                raise

    def set_provisional_title(self, tenant_id: str, session_id: str, title: str) -> bool:
        """Title a session that has no title yet with a provisional ``title``; False when it has one."""
        try:
            self._sessions.update_item(
                Key={"tenant_id": tenant_id, "id": session_id},
                UpdateExpression="SET title = :t, title_provisional = :p",
                # An existing session of this tenant's without a title: a title given meanwhile stays.
                ConditionExpression="attribute_exists(id) AND (attribute_not_exists(title) OR title = :empty)",
                ExpressionAttributeValues={":t": title, ":p": True, ":empty": ""},
            )
        except ClientError as error:
            if _conditional_failure(error):
                return False
            raise
        return True

    def add_messages(self, messages: Sequence[Message]) -> None:
        """Store messages as they are (a forked session's copies)."""
        with self._messages.batch_writer() as batch:
            for message in messages:
                batch.put_item(Item=self._message_item(message))

    def delete_messages(self, tenant_id: str, session_id: str, message_ids: Sequence[str]) -> int:
        """Remove the named messages of this tenant's session; how many were removed."""
        return sum(1 for message_id in message_ids if self.delete_message(tenant_id, session_id, message_id))

    def set_image_description(self, session_id: str, message_id: str, text: str) -> None:
        """The description becomes the first image's caption (read, then one conditional update)."""
        item = self._messages.get_item(Key={"session_id": session_id, "id": message_id}, ConsistentRead=True).get(
            "Item"
        )
        images = json.loads(str(item.get("images") or "[]")) if item else []
        if not images:
            return
        images[0]["caption"] = text
        try:
            self._messages.update_item(
                Key={"session_id": session_id, "id": message_id},
                UpdateExpression="SET images = :i",
                ConditionExpression="attribute_exists(id)",
                ExpressionAttributeValues={":i": json.dumps(images, ensure_ascii=False)},
            )
        except ClientError as error:
            if not _conditional_failure(error):
                raise

    def set_feedback(
        self, tenant_id: str, session_id: str, message_id: str, rating: str, comment: str
    ) -> Message | None:
        """Store the reader's rating and comment on a message; the message as stored after, or None."""
        try:
            reply = self._messages.update_item(
                Key={"session_id": session_id, "id": message_id},
                UpdateExpression="SET feedback = :r, feedback_comment = :c",
                # Only this tenant's existing message: never a partial item, never another tenant's.
                ConditionExpression="attribute_exists(id) AND tenant_id = :t",
                ExpressionAttributeValues={":r": rating, ":c": comment, ":t": tenant_id},
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if _conditional_failure(error):
                return None
            raise
        return self._message(reply["Attributes"])

    def create_turn(
        self,
        session: Session,
        request_id: str,
        query: str,
        alternative_of: str = "",
        user_id: str = "",
        images: Sequence[dict[str, str]] = (),
    ) -> tuple[Message, Message]:
        """Store a turn's user and assistant messages together and mark the session active."""
        user, assistant = new_turn(session, request_id, query, alternative_of, user_id, images)
        client = self._messages.meta.client
        client.transact_write_items(
            TransactItems=[
                *(
                    {
                        "Put": {
                            "TableName": self._messages.name,
                            "Item": _attrs(self._message_item(m)),
                            "ConditionExpression": "attribute_not_exists(id)",
                        }
                    }
                    for m in (user, assistant)
                ),
                {
                    "Update": {
                        "TableName": self._sessions.name,
                        "Key": _attrs({"tenant_id": session.tenant_id, "id": session.id}),
                        "UpdateExpression": "SET updated_at = :u",
                        "ExpressionAttributeValues": _attrs({":u": user.created_at}),
                    }
                },
            ]
        )
        return user, assistant

    @staticmethod
    def _message_item(message: Message) -> dict[str, Any]:
        item = message.model_dump()
        item["knowledge_references"] = json.dumps(message.knowledge_references, ensure_ascii=False)
        item["images"] = json.dumps(message.images, ensure_ascii=False)
        if message.role == "assistant" and not message.is_completed:
            item[OPEN_TURN_ATTRIBUTE] = _OPEN
        return item

    @staticmethod
    def _message(item: dict[str, Any]) -> Message:
        data = _plain(item)
        data["knowledge_references"] = json.loads(data.get("knowledge_references") or "[]")
        data["images"] = json.loads(data.get("images") or "[]")
        return Message(**data)

    def complete_assistant_message(
        self, session_id: str, message_id: str, content: str, references: list[dict[str, Any]], stop_reason: str = ""
    ) -> bool:
        """Complete a pending assistant message once; False when it was already completed (or is not one)."""
        try:
            self._messages.update_item(
                Key={"session_id": session_id, "id": message_id},
                UpdateExpression="SET content = :c, knowledge_references = :r, is_completed = :t, stop_reason = :s,"
                f" updated_at = :u REMOVE {OPEN_TURN_ATTRIBUTE}",
                # Completed once: the end of the stream and a stop may race; the first one wins.
                ConditionExpression="attribute_exists(id) AND #role = :assistant AND is_completed = :f",
                ExpressionAttributeNames={"#role": "role"},
                ExpressionAttributeValues={
                    ":c": content,
                    ":r": json.dumps(references, ensure_ascii=False),
                    ":t": True,
                    ":f": False,
                    ":s": stop_reason,
                    ":u": utc_now(),
                    ":assistant": "assistant",
                },
            )
        except ClientError as error:
            if _conditional_failure(error):
                return False
            raise
        return True

    def message(self, tenant_id: str, session_id: str, message_id: str) -> Message | None:
        """The tenant's message ``message_id`` of the session, or None."""
        item = self._messages.get_item(Key={"session_id": session_id, "id": message_id}, ConsistentRead=True).get(
            "Item"
        )
        if item is None or item.get("tenant_id") != tenant_id:
            return None
        return self._message(item)

    def _all(self, session_id: str) -> list[Message]:
        items = _query_all(self._messages, KeyConditionExpression=Key("session_id").eq(session_id), ConsistentRead=True)
        return [self._message(i) for i in items]

    def messages(self, tenant_id: str, session_id: str, limit: int = 1000) -> list[Message]:
        """The session's messages, oldest first, a turn's question before its answer."""
        messages = [m for m in self._all(session_id) if m.tenant_id == tenant_id]
        messages.sort(key=lambda m: (m.created_at, m.role != "user"))
        return messages[:limit]

    def recent_messages(self, session_id: str, limit: int) -> list[Message]:
        """Newest first; within one turn the assistant before the user, as the SQLite store orders them."""
        messages = sorted(self._all(session_id), key=lambda m: m.role)
        messages.sort(key=lambda m: m.created_at, reverse=True)
        return messages[:limit]

    def incomplete_assistant_messages(self, limit: int = 1000) -> list[Message]:
        """The open turns' messages, oldest first.

        A Query of the sparse index of open turns (it reads those alone, whatever the table's size), else a filtered
        Scan of the table. The index is eventually consistent: a message completed a moment ago may still be listed
        (recovery reads its log first).
        """
        if self._open_index:
            found: list[Message] = []
            query: dict[str, Any] = {
                "IndexName": self._open_index,
                "KeyConditionExpression": Key(OPEN_TURN_ATTRIBUTE).eq(_OPEN),
                "Limit": min(limit, 1000),
            }
            while len(found) < limit:
                page = self._messages.query(**query)
                found.extend(
                    m
                    for m in (self._message(item) for item in page.get("Items", []))
                    if m.role == "assistant" and not m.is_completed
                )
                if not page.get("LastEvaluatedKey"):
                    break
                query["ExclusiveStartKey"] = page["LastEvaluatedKey"]
            return found[:limit]
        kwargs: dict[str, Any] = {
            "FilterExpression": Attr("role").eq("assistant") & Attr("is_completed").eq(False),
            "ConsistentRead": True,
        }
        scanned: list[Message] = []
        while len(scanned) < limit:
            page = self._messages.scan(**kwargs)
            scanned.extend(self._message(item) for item in page.get("Items", []))
            if not page.get("LastEvaluatedKey"):
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        scanned.sort(key=lambda m: m.created_at)
        return scanned[:limit]

    def message_by_request(self, tenant_id: str, session_id: str, request_id: str) -> tuple[Message, Message] | None:
        """The (user, assistant) pair of an earlier turn with this request id, or None."""
        pair = {m.role: m for m in self._all(session_id) if m.request_id == request_id and m.tenant_id == tenant_id}
        if "user" in pair and "assistant" in pair:
            return pair["user"], pair["assistant"]
        return None

    def delete_message(self, tenant_id: str, session_id: str, message_id: str) -> bool:
        """Remove one message of the session; False when there is no such message of this tenant's."""
        try:
            self._messages.delete_item(
                Key={"session_id": session_id, "id": message_id},
                # Only this tenant's message: another tenant's id must read as absent, never be deleted.
                ConditionExpression="tenant_id = :t",
                ExpressionAttributeValues={":t": tenant_id},
            )
        except ClientError as error:
            if _conditional_failure(error):
                return False
            raise
        return True


class DynamoCitationHistory:
    """Documents cited by a caller's past answers (memory affinity), from the tenant's most recent sessions.

    Messages are keyed by session, so the scan is bounded by sessions rather than messages: the newest
    ``max_sessions`` sessions of the tenant. As in the SQLite version, an answer counts once per document.
    """

    def __init__(self, sessions: DynamoSessionStore, max_sessions: int) -> None:
        """Citation counts over the messages of the tenant's newest ``max_sessions`` sessions."""
        self._sessions = sessions
        self._max_sessions = max_sessions

    def cited_documents(self, tenant_id: str, user_id: str, limit: int) -> dict[str, int]:
        """Document id → how many of this user's recent answers cited it, the most cited first, at most ``limit``."""
        counts: dict[str, int] = {}
        for session in self._sessions.sessions(tenant_id, limit=self._max_sessions):
            for message in self._sessions.messages(tenant_id, session.id):
                if message.role != "assistant" or message.user_id != user_id:
                    continue
                for knowledge_id in {
                    r.get("knowledge_id") for r in message.knowledge_references if isinstance(r, dict)
                }:
                    if isinstance(knowledge_id, str) and knowledge_id:
                        counts[knowledge_id] = counts.get(knowledge_id, 0) + 1
        return dict(sorted(counts.items(), key=lambda item: -item[1])[:limit])


class DynamoTagStore:
    """Tags of a knowledge base in the knowledge table.

    ``kb#<kb>`` / ``tag#<id>`` (the tag) and ``kb#<kb>`` / ``tagname#<name>`` (its name, unique within the knowledge
    base).
    """

    def __init__(self, table: Any) -> None:
        """Tags kept in ``table`` (the knowledge table)."""
        self._table = table

    def _write(self, writes: list[dict[str, Any]], name: str) -> None:
        try:
            self._table.meta.client.transact_write_items(TransactItems=writes)
        except ClientError as error:
            if _conditional_failure(error):
                raise DuplicateName(name) from None
            raise

    def _put(self, tag: Tag) -> dict[str, Any]:
        item = {"pk": f"kb#{tag.knowledge_base_id}", "sk": f"tag#{tag.id}", **tag.model_dump()}
        return {"Put": {"TableName": self._table.name, "Item": _attrs(item)}}

    def _claim(self, tag: Tag, name: str) -> dict[str, Any]:
        item = {"pk": f"kb#{tag.knowledge_base_id}", "sk": f"tagname#{name}", "tag_id": tag.id}
        return {
            "Put": {
                "TableName": self._table.name,
                "Item": _attrs(item),
                "ConditionExpression": "attribute_not_exists(sk)",
            }
        }

    def create_tag(
        self, tenant_id: str, kb_id: str, name: str, *, color: str = "", sort_order: int = 0, tag_id: str = ""
    ) -> Tag:
        """A new tag (``tag_id`` to register one under a given id); a taken name raises :class:`DuplicateName`."""
        tag = new_tag(tenant_id, kb_id, name, color=color, sort_order=sort_order, tag_id=tag_id)
        put = self._put(tag)
        put["Put"]["ConditionExpression"] = "attribute_not_exists(sk)"
        self._write([put, self._claim(tag, name)], name)
        return tag

    def tag(self, tenant_id: str, kb_id: str, tag_id: str) -> Tag | None:
        """The knowledge base's tag ``tag_id``, or None when it is not this tenant's."""
        item = self._table.get_item(Key={"pk": f"kb#{kb_id}", "sk": f"tag#{tag_id}"}).get("Item")
        if item is None or item.get("tenant_id") != tenant_id:
            return None
        return Tag(**_plain(item, "pk", "sk"))

    def tags(self, tenant_id: str, kb_id: str) -> list[Tag]:
        """The knowledge base's tags by ``sort_order``, then name."""
        items = _query_all(
            self._table,
            KeyConditionExpression=Key("pk").eq(f"kb#{kb_id}") & Key("sk").begins_with("tag#"),
            FilterExpression=Attr("tenant_id").eq(tenant_id),
        )
        return sorted((Tag(**_plain(i, "pk", "sk")) for i in items), key=lambda t: (t.sort_order, t.name))

    def update_tag(
        self,
        tenant_id: str,
        kb_id: str,
        tag_id: str,
        *,
        name: str | None = None,
        color: str | None = None,
        sort_order: int | None = None,
    ) -> Tag | None:
        """Rename, recolour or reorder a tag; the tag as stored after, or None when it is not this tenant's."""
        tag = self.tag(tenant_id, kb_id, tag_id)
        if tag is None:
            return None
        changes = tag_changes(tag, name=name, color=color, sort_order=sort_order)
        if not changes:
            return tag
        updated = tag.model_copy(update={**changes, "updated_at": utc_now()})
        writes = [self._put(updated)]
        if "name" in changes:
            release = {"pk": f"kb#{kb_id}", "sk": f"tagname#{tag.name}"}
            writes += [
                self._claim(updated, updated.name),
                {"Delete": {"TableName": self._table.name, "Key": _attrs(release)}},
            ]
        self._write(writes, updated.name)
        return updated

    def delete_tag(self, tenant_id: str, kb_id: str, tag_id: str) -> bool:
        """Remove a tag's registration (documents keep the string); False when it is not this tenant's."""
        tag = self.tag(tenant_id, kb_id, tag_id)
        if tag is None:
            return False
        with self._table.batch_writer() as batch:
            batch.delete_item(Key={"pk": f"kb#{kb_id}", "sk": f"tag#{tag_id}"})
            batch.delete_item(Key={"pk": f"kb#{kb_id}", "sk": f"tagname#{tag.name}"})
        return True
