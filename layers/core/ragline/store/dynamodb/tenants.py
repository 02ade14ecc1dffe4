"""Tenants and their API keys in the knowledge table (the AWS runtime's tenant port)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from ragline.store.dynamodb.items import (
    ITEM_IS_NEW,
    attrs,
    conditional_failure,
    plain,
)
from ragline.store.ids import new_id, utc_now
from ragline.store.models import (
    Tenant,
    generate_key,
    hash_key,
)


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
                {"Put": {"TableName": table, "Item": attrs({"pk": f"tenant#{tenant.id}", **tenant.model_dump()})}},
                {
                    "Put": {
                        "TableName": table,
                        "Item": attrs({"pk": f"key#{hash_key(key)}", "tenant_id": tenant.id}),
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
            if conditional_failure(error):
                return False
            raise
        return True

    def _tenant(self, tenant_id: str) -> Tenant | None:
        item = self._table.get_item(Key={"pk": f"tenant#{tenant_id}"}).get("Item")
        return Tenant(**plain(item, "pk")) if item else None

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
