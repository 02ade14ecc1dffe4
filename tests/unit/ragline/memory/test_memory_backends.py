"""What is specific to each memory backend: where DynamoDB puts the items, SQLite's own table."""

from __future__ import annotations

from ragline.memory.dynamodb import DynamoMemoryStore
from ragline.memory.models import new_memory
from ragline.memory.sqlite import SqliteMemoryStore
from ragline.store.db import Database


def test_dynamodb_items_live_in_the_user_partition_of_the_knowledge_table(aws):
    table = aws.table("KnowledgeTable")
    store = DynamoMemoryStore(table)
    memory = store.add(new_memory("t-1", "alice", "The user works at Acme."), [0.6, 0.8])
    item = table.get_item(Key={"pk": "memory#t-1#alice", "sk": f"mem#{memory.id}"})["Item"]
    assert item["content"] == "The user works at Acme."
    assert len(bytes(item["vector"])) == 2 * 4  # float32


def test_dynamodb_memory_without_vector_has_no_vector_attribute(aws):
    table = aws.table("KnowledgeTable")
    memory = DynamoMemoryStore(table).add(new_memory("t-1", "alice", "The user likes hiking."))
    item = table.get_item(Key={"pk": "memory#t-1#alice", "sk": f"mem#{memory.id}"})["Item"]
    assert "vector" not in item


def test_sqlite_table_is_created_once_and_survives_reopening(tmp_path):
    path = tmp_path / "ragline.db"
    db = Database(path)
    stored = SqliteMemoryStore(db).add(new_memory("t-1", "alice", "The user works at Acme."), [1.0, 0.0])
    SqliteMemoryStore(db)  # the schema statements are idempotent
    db.close()
    reopened = Database(path)
    try:
        [loaded] = SqliteMemoryStore(reopened).list("t-1", "alice")
        assert loaded.id == stored.id
        assert loaded.vector == [1.0, 0.0]
    finally:
        reopened.close()
