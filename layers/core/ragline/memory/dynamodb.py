"""Memories in DynamoDB, in the knowledge table (template.yaml defines no table of their own).

One partition per user: ``pk`` = ``memory#<tenant>#<user>``, ``sk`` = ``mem#<id>``. The tenant and user
in the key are the isolation: no read can reach another user's partition. Tenant ids never contain ``#``,
so a user id containing one cannot make two users share a partition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from ragline.memory.models import Memory
from ragline.memory.store import LOAD_LIMIT, Memories, MemoryStore, vector_bytes, vector_from_bytes

# The memory exists: deleting an absent id reports "not found" instead of succeeding silently.
MEMORY_EXISTS = "attribute_exists(sk)"
_SORT_PREFIX = "mem#"


def memory_partition(tenant_id: str, user_id: str) -> str:
    """The partition key of one user's memories in the knowledge table."""
    return f"memory#{tenant_id}#{user_id}"


def _key(tenant_id: str, user_id: str, memory_id: str) -> dict[str, str]:
    return {"pk": memory_partition(tenant_id, user_id), "sk": f"{_SORT_PREFIX}{memory_id}"}


def _memory(item: dict[str, Any]) -> Memory:
    raw = item.get("vector")
    return Memory(
        id=str(item["id"]),
        tenant_id=str(item["tenant_id"]),
        user_id=str(item["user_id"]),
        content=str(item["content"]),
        source_session_id=str(item.get("source_session_id", "")),
        source_message_id=str(item.get("source_message_id", "")),
        created_at=str(item["created_at"]),
        updated_at=str(item.get("updated_at", item["created_at"])),
        embedding_model=str(item.get("embedding_model", "")),
        # boto3 returns binary attributes as ``Binary``, which converts with bytes().
        vector=vector_from_bytes(bytes(raw)) if raw is not None else None,
    )


class DynamoMemoryStore(MemoryStore):
    """The user's partition of the knowledge table.

    Writes are not transactional: two concurrent adds of the same new fact can both land, and the next add of it merges
    into one of them.
    """

    def __init__(self, table: Any) -> None:
        """Memories kept in ``table`` (the knowledge table)."""
        self._table = table

    def _query(self, tenant_id: str, user_id: str, limit: int | None, **extra: Any) -> list[dict[str, Any]]:
        condition = Key("pk").eq(memory_partition(tenant_id, user_id)) & Key("sk").begins_with(_SORT_PREFIX)
        kwargs: dict[str, Any] = {"KeyConditionExpression": condition, **extra}
        items: list[dict[str, Any]] = []
        while limit is None or len(items) < limit:
            page = self._table.query(**kwargs)
            items.extend(page.get("Items", []))
            if not page.get("LastEvaluatedKey"):
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return items if limit is None else items[:limit]

    def _load(self, tenant_id: str, user_id: str) -> Memories:
        return [_memory(item) for item in self._query(tenant_id, user_id, LOAD_LIMIT)]

    def _put(self, memory: Memory) -> None:
        item: dict[str, Any] = {
            **_key(memory.tenant_id, memory.user_id, memory.id),
            "id": memory.id,
            "tenant_id": memory.tenant_id,
            "user_id": memory.user_id,
            "content": memory.content,
            "source_session_id": memory.source_session_id,
            "source_message_id": memory.source_message_id,
            "created_at": memory.created_at,
            "updated_at": memory.updated_at,
            "embedding_model": memory.embedding_model,
        }
        if memory.vector is not None:
            item["vector"] = vector_bytes(memory.vector)
        self._table.put_item(Item=item)

    def _remove(self, tenant_id: str, user_id: str, memory_ids: Sequence[str]) -> None:
        with self._table.batch_writer() as batch:
            for memory_id in memory_ids:
                batch.delete_item(Key=_key(tenant_id, user_id, memory_id))

    def delete(self, tenant_id: str, user_id: str, memory_id: str) -> bool:
        """Delete one memory of this user; False when there is none with that id."""
        try:
            self._table.delete_item(Key=_key(tenant_id, user_id, memory_id), ConditionExpression=MEMORY_EXISTS)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def delete_all(self, tenant_id: str, user_id: str) -> int:
        """Delete every memory of this user, however many; returns how many were deleted."""
        # Unbounded, unlike a read: "forget everything" must not leave memories behind.
        keys = self._query(tenant_id, user_id, None, ProjectionExpression="#id", ExpressionAttributeNames={"#id": "id"})
        ids = [str(item["id"]) for item in keys]
        self._remove(tenant_id, user_id, ids)
        return len(ids)
