"""Sessions and messages, with the sparse index of open turns (the AWS runtime's session port)."""

from __future__ import annotations

import json
from collections.abc import Sequence
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
    Message,
    Session,
    new_session,
    new_turn,
)

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
        data = plain(item)
        data["options"] = json.loads(data.get("options") or "{}")
        data["knowledge_base_ids"] = list(data.get("knowledge_base_ids") or [])
        return Session(**data)

    def session(self, tenant_id: str, session_id: str) -> Session | None:
        """The tenant's session ``session_id``, or None when it is not the tenant's."""
        item = self._sessions.get_item(Key={"tenant_id": tenant_id, "id": session_id}).get("Item")
        return self._session(item) if item else None

    def sessions(self, tenant_id: str, limit: int = 100) -> list[Session]:
        """The tenant's sessions, most recently active first, at most ``limit``."""
        items = query_all(self._sessions, KeyConditionExpression=Key("tenant_id").eq(tenant_id))
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
            if conditional_failure(error):
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
            if conditional_failure(error):
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
            if not conditional_failure(error):
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
            if conditional_failure(error):
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
            if not conditional_failure(error):
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
            if conditional_failure(error):
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
                            "Item": attrs(self._message_item(m)),
                            "ConditionExpression": "attribute_not_exists(id)",
                        }
                    }
                    for m in (user, assistant)
                ),
                {
                    "Update": {
                        "TableName": self._sessions.name,
                        "Key": attrs({"tenant_id": session.tenant_id, "id": session.id}),
                        "UpdateExpression": "SET updated_at = :u",
                        "ExpressionAttributeValues": attrs({":u": user.created_at}),
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
        data = plain(item)
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
            if conditional_failure(error):
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
        items = query_all(self._messages, KeyConditionExpression=Key("session_id").eq(session_id), ConsistentRead=True)
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
            if conditional_failure(error):
                return False
            raise
        return True
