"""Knowledge bases, documents and chunks in the knowledge table (the AWS runtime's knowledge port)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from boto3.dynamodb.conditions import Attr, Key
from botocore.exceptions import ClientError

from ragline.store.dynamodb.items import (
    PENDING,
    attrs,
    batches,
    conditional_failure,
    plain,
    query_all,
)
from ragline.store.ids import new_id, utc_now
from ragline.store.models import (
    Chunk,
    Document,
    DocumentStatus,
    DocumentTotals,
    DuplicateName,
    KnowledgeBase,
    KnowledgeBaseSettings,
    SummaryStatus,
    document_changes,
    retagged,
)


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
                            "Item": attrs({"pk": f"tenant#{tenant_id}", "sk": f"kbname#{name}", "kb_id": kb.id}),
                            "ConditionExpression": "attribute_not_exists(sk)",
                        }
                    },
                    {
                        "Put": {
                            "TableName": table,
                            "Item": attrs({"pk": f"tenant#{tenant_id}", "sk": f"kb#{kb.id}", **kb.model_dump()}),
                        }
                    },
                    {
                        "Put": {
                            "TableName": table,
                            "Item": attrs({"pk": f"kbid#{kb.id}", "sk": "meta", "tenant_id": tenant_id}),
                        }
                    },
                ]
            )
        except ClientError as error:
            if conditional_failure(error):
                raise DuplicateName(name) from None
            raise
        return kb

    def knowledge_base(self, tenant_id: str, kb_id: str) -> KnowledgeBase | None:
        """The tenant's knowledge base ``kb_id``, or None when it is not the tenant's."""
        item = self._table.get_item(Key={"pk": f"tenant#{tenant_id}", "sk": f"kb#{kb_id}"}).get("Item")
        return KnowledgeBase(**plain(item, "pk", "sk")) if item else None

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
            if conditional_failure(error):
                return None
            raise
        return KnowledgeBase(**plain(reply["Attributes"], "pk", "sk"))

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
        items = query_all(
            self._table, KeyConditionExpression=Key("pk").eq(f"tenant#{tenant_id}") & Key("sk").begins_with("kb#")
        )
        return sorted((KnowledgeBase(**plain(i, "pk", "sk")) for i in items), key=lambda kb: kb.created_at)

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
                    "Item": attrs({"pk": f"tenant#{tenant_id}", "sk": f"kb#{kb.id}", **updated.model_dump()}),
                }
            }
        ]
        if "name" in changes:
            # The new name is claimed and the old one released in the same transaction as the record.
            writes += [
                {
                    "Put": {
                        "TableName": table,
                        "Item": attrs({"pk": f"tenant#{tenant_id}", "sk": f"kbname#{name}", "kb_id": kb.id}),
                        "ConditionExpression": "attribute_not_exists(sk)",
                    }
                },
                {
                    "Delete": {
                        "TableName": table,
                        "Key": attrs({"pk": f"tenant#{tenant_id}", "sk": f"kbname#{kb.name}"}),
                    }
                },
            ]
        try:
            client.transact_write_items(TransactItems=writes)
        except ClientError as error:
            if conditional_failure(error):
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
            for item in query_all(self._table, KeyConditionExpression=Key("pk").eq(f"kb#{kb_id}")):
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
            if conditional_failure(error):
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
        old = query_all(
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
            self._table.delete_item(Key={"pk": PENDING, "sk": f"{stored.created_at}#{stored.id}"})
        return True

    def delete_document(self, tenant_id: str, document_id: str) -> bool:
        """Remove the document and its chunks; False when it is not this tenant's."""
        document = self.document(tenant_id, document_id)
        if document is None:
            return False
        items = query_all(self._table, KeyConditionExpression=Key("pk").eq(f"doc#{document_id}"))
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
        return Document(**plain(item, "pk", "sk"))

    def documents(self, tenant_id: str, kb_id: str, limit: int = 1000, offset: int = 0) -> list[Document]:
        """One page of a knowledge base's documents, oldest first."""
        items = query_all(
            self._table,
            KeyConditionExpression=Key("pk").eq(f"kb#{kb_id}") & Key("sk").begins_with("doc#"),
            FilterExpression=Attr("tenant_id").eq(tenant_id),
        )
        return [Document(**plain(i, "pk", "sk")) for i in items[offset : offset + limit]]

    def document_totals(self, tenant_id: str, kb_id: str) -> DocumentTotals:
        """Every document of the knowledge base counted, however many (not one page of them)."""
        items = query_all(
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
            "pk": PENDING,
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
            self._table.delete_item(Key={"pk": PENDING, "sk": f"{current.created_at}#{document_id}"})
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
                if conditional_failure(error):
                    return False
                raise
        return True

    def pending_documents(self, limit: int = 100, updated_before: str = "") -> list[Document]:
        """Documents of every tenant still waiting for their vectors, oldest first (indexing worker and recovery)."""
        items = query_all(self._table, KeyConditionExpression=Key("pk").eq(PENDING))
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
        data = plain(item, "pk", "sk")
        data["metadata"] = json.loads(data.get("metadata") or "{}")
        return Chunk(**data)

    def chunks_of_document(self, tenant_id: str, document_id: str) -> list[Chunk]:
        """The document's chunks (parents and FAQ entries included), in document order."""
        items = query_all(
            self._table, KeyConditionExpression=Key("pk").eq(f"doc#{document_id}") & Key("sk").begins_with("chunk#")
        )
        chunks = [self._chunk(i) for i in items if i.get("tenant_id") == tenant_id]
        return sorted(chunks, key=lambda c: (c.chunk_type != "text", c.chunk_type, c.chunk_index))

    def chunks(self, tenant_id: str, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The tenant's chunks among ``chunk_ids``, in the order asked; unknown ones are left out."""
        found: dict[str, Chunk] = {}
        client = self._table.meta.client
        for keys in batches([{"pk": f"chunk#{i}", "sk": "meta"} for i in dict.fromkeys(chunk_ids)]):
            request: dict[str, Any] = {self._table.name: {"Keys": keys}}
            while request:
                reply = client.batch_get_item(RequestItems=request)
                for item in reply.get("Responses", {}).get(self._table.name, []):
                    chunk = self._chunk(item)
                    if chunk.tenant_id == tenant_id:
                        found[chunk.id] = chunk
                request = reply.get("UnprocessedKeys") or {}
        return [found[i] for i in chunk_ids if i in found]
