"""The messages table's sparse index of open turns (DynamoDB): an assistant message is in it until it is
completed, and the sweep reads it instead of scanning the table."""

from __future__ import annotations

from boto3.dynamodb.conditions import Key

from ragline.store.dynamodb import OPEN_TURN_ATTRIBUTE, DynamoSessionStore


def test_an_assistant_message_is_in_the_open_turns_index_until_completed(aws):
    messages = aws.table("MessagesTable")
    store = DynamoSessionStore(aws.table("SessionsTable"), messages, open_index="OpenTurns")
    session = store.create_session("t1", [])
    user, assistant = store.create_turn(session, "req-1", "q")

    def indexed():
        items = messages.query(IndexName="OpenTurns", KeyConditionExpression=Key(OPEN_TURN_ATTRIBUTE).eq("open"))
        return [item["id"] for item in items["Items"]]

    assert indexed() == [assistant.id]  # the user's message never is
    assert store.complete_assistant_message(session.id, assistant.id, "answer", []) is True
    assert indexed() == []
    item = messages.get_item(Key={"session_id": session.id, "id": assistant.id})["Item"]
    assert OPEN_TURN_ATTRIBUTE not in item
    assert store.message("t1", session.id, assistant.id).is_completed is True
    assert store.message("t1", session.id, user.id).content == "q"
