"""What the DynamoDB adapters share: conditional-write failures, paged queries, plain items, batches."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from botocore.exceptions import ClientError

# The partition of the pending-document markers (see ``DynamoKnowledgeStore._pending_marker``).
PENDING = "pending"
# The item does not exist yet: creating it cannot overwrite anyone's record.
ITEM_IS_NEW = "attribute_not_exists(pk)"
BATCH_GET_LIMIT = 100


def conditional_failure(error: ClientError) -> bool:
    """True when a write was refused by its condition (alone or in a transaction), not by a fault."""
    code = error.response.get("Error", {}).get("Code")
    return code in {"ConditionalCheckFailedException", "TransactionCanceledException"}


def query_all(table: Any, **kwargs: Any) -> list[dict[str, Any]]:
    """Every item of a query, page after page."""
    items: list[dict[str, Any]] = []
    while True:
        page = table.query(**kwargs)
        items.extend(page.get("Items", []))
        if not page.get("LastEvaluatedKey"):
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def plain(item: dict[str, Any], *drop: str) -> dict[str, Any]:
    """An item without its key attributes, numbers back to int (DynamoDB returns Decimal)."""
    out: dict[str, Any] = {}
    for name, value in item.items():
        if name in drop:
            continue
        if type(value).__name__ == "Decimal":
            value = int(value) if value == int(value) else float(value)
        out[name] = value
    return out


def attrs(values: dict[str, Any]) -> dict[str, Any]:
    """Items for ``table.meta.client`` calls: that client converts Python values itself (as the table does)."""
    return values


def batches(keys: list[dict[str, str]]) -> Iterator[list[dict[str, str]]]:
    """``keys`` in runs of at most ``BATCH_GET_LIMIT``, what one BatchGetItem takes."""
    for start in range(0, len(keys), BATCH_GET_LIMIT):
        yield keys[start : start + BATCH_GET_LIMIT]
