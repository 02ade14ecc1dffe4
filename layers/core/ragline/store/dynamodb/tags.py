"""Tags of a knowledge base in the knowledge table (the AWS runtime's tag port)."""

from __future__ import annotations

from typing import Any

from boto3.dynamodb.conditions import Attr, Key
from botocore.exceptions import ClientError

from ragline.store.dynamodb.items import (
    attrs,
    conditional_failure,
    plain,
    query_all,
)
from ragline.store.ids import utc_now
from ragline.store.models import (
    DuplicateName,
    Tag,
    new_tag,
    tag_changes,
)


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
            if conditional_failure(error):
                raise DuplicateName(name) from None
            raise

    def _put(self, tag: Tag) -> dict[str, Any]:
        item = {"pk": f"kb#{tag.knowledge_base_id}", "sk": f"tag#{tag.id}", **tag.model_dump()}
        return {"Put": {"TableName": self._table.name, "Item": attrs(item)}}

    def _claim(self, tag: Tag, name: str) -> dict[str, Any]:
        item = {"pk": f"kb#{tag.knowledge_base_id}", "sk": f"tagname#{name}", "tag_id": tag.id}
        return {
            "Put": {
                "TableName": self._table.name,
                "Item": attrs(item),
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
        return Tag(**plain(item, "pk", "sk"))

    def tags(self, tenant_id: str, kb_id: str) -> list[Tag]:
        """The knowledge base's tags by ``sort_order``, then name."""
        items = query_all(
            self._table,
            KeyConditionExpression=Key("pk").eq(f"kb#{kb_id}") & Key("sk").begins_with("tag#"),
            FilterExpression=Attr("tenant_id").eq(tenant_id),
        )
        return sorted((Tag(**plain(i, "pk", "sk")) for i in items), key=lambda t: (t.sort_order, t.name))

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
                {"Delete": {"TableName": self._table.name, "Key": attrs(release)}},
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
