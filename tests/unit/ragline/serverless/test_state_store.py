"""StateStore: versioned pipeline state in the StateTable of template.yaml, large states in S3 (moto)."""

from __future__ import annotations

import json
import random
import time

import pytest
from boto3.dynamodb.conditions import Key

from ragline.serverless.state_store import (
    MAX_INLINE_BYTES,
    PARTITION,
    SORT,
    TTL_ATTRIBUTE,
    StateRef,
    StateStore,
    version_item,
)

TURN = "sess#msg"
TTL_SECONDS = 3600


@pytest.fixture
def table(aws):
    return aws.table("StateTable")


@pytest.fixture
def store(aws, table) -> StateStore:
    return StateStore(table, aws.client("s3"), aws.bucket, TTL_SECONDS)


def state(marker: str, size: int = 0) -> str:
    """A ChatManage-like JSON document, padded to at least ``size`` bytes (padding that compresses well)."""
    return json.dumps({"request": {"query": f"q {marker} 中文"}, "state": {"pad": "p" * size}})


def large_state(marker: str) -> str:
    """Larger than the inline limit even compressed: random text does not compress."""
    noise = random.Random(marker).randbytes(MAX_INLINE_BYTES + 1000).hex()
    return json.dumps({"request": {"query": f"q {marker} 中文"}, "state": {"pad": noise}})


def bucket_keys(aws) -> list[str]:
    listed = aws.client("s3").list_objects_v2(Bucket=aws.bucket)
    return sorted(o["Key"] for o in listed.get("Contents", []))


# Versions ----------------------------------------------------------------------------------------------------
def test_save_and_load_round_trip(store):
    ref = StateRef(turn=TURN, version=0)
    assert store.save(ref, state("v0"), {"outcome": "accepted", "branches": [{"kind": "chunk"}]}) is True
    assert store.load(ref) == (state("v0"), {"outcome": "accepted", "branches": [{"kind": "chunk"}]})
    assert store.load(StateRef(turn=TURN, version=1)) is None
    assert store.load(StateRef(turn="other#turn", version=0)) is None


def test_a_second_save_of_a_version_keeps_the_first(store):
    ref = StateRef(turn=TURN, version=3)
    assert store.save(ref, state("first"), {"outcome": "continue"}) is True
    assert store.save(ref, state("retry"), {"outcome": "failed"}) is False
    assert store.load(ref) == (state("first"), {"outcome": "continue"})


def test_a_large_state_goes_to_s3_and_loads_back_identical(aws, store, table):
    ref = StateRef(turn=TURN, version=2)
    big = large_state("big")
    assert len(big.encode()) > MAX_INLINE_BYTES
    assert store.save(ref, big, {"outcome": "continue"}) is True
    item = table.get_item(Key={PARTITION: TURN, SORT: version_item(2)})["Item"]
    assert "state" not in item  # the item holds the pointer, not the state
    assert "state_z" not in item
    assert bucket_keys(aws) == [item["s3_key"]]
    assert store.load(ref) == (big, {"outcome": "continue"})


def test_a_state_that_compresses_below_the_limit_stays_in_dynamodb_compressed(aws, store, table):
    ref = StateRef(turn=TURN, version=0)
    repetitive = state("edge", MAX_INLINE_BYTES * 3)  # three times the limit as text, a few KB compressed
    store.save(ref, repetitive, {})
    item = table.get_item(Key={PARTITION: TURN, SORT: version_item(0)})["Item"]
    assert "state" not in item
    assert len(bytes(item["state_z"].value)) < len(repetitive.encode()) / 50
    assert bucket_keys(aws) == []
    assert store.load(ref) == (repetitive, {})


def test_a_second_save_of_a_large_version_keeps_the_first(store):
    ref = StateRef(turn=TURN, version=1)
    first, retry = large_state("first"), large_state("retry")
    assert store.save(ref, first, {"outcome": "continue"}) is True
    assert store.save(ref, retry, {"outcome": "continue"}) is False
    assert store.load(ref) == (first, {"outcome": "continue"})


def test_latest_is_the_highest_version(store):
    assert store.latest(TURN) is None
    for version in (0, 2, 1, 9):
        store.save(StateRef(turn=TURN, version=version), state(f"v{version}"), {})
    # Claims, branches and the execution share the partition; they are not versions.
    store.claim(TURN, "10:filter_top_k:run", 4)
    store.save_branch(TURN, "3:abc", "{}")
    store.set_execution(TURN, "arn:aws:states:us-east-1:123456789012:execution:m:e")
    assert store.latest(TURN) == (StateRef(turn=TURN, version=9), state("v9"))
    store.save(StateRef(turn=TURN, version=10), state("v10"), {})  # 10 sorts after 9
    assert store.latest(TURN) == (StateRef(turn=TURN, version=10), state("v10"))
    assert store.latest("other#turn") is None


def test_latest_loads_a_large_state_from_s3(store):
    store.save(StateRef(turn=TURN, version=0), state("small"), {})
    big = large_state("latest")
    store.save(StateRef(turn=TURN, version=1), big, {})
    assert store.latest(TURN) == (StateRef(turn=TURN, version=1), big)


def test_items_carry_a_ttl_in_the_future(aws, store, table):
    before = int(time.time())
    store.save(StateRef(turn=TURN, version=0), state("v0"), {})
    store.claim(TURN, "c", 1)
    store.save_branch(TURN, "b", "{}")
    store.set_execution(TURN, "arn")
    after = int(time.time())
    items = table.query(KeyConditionExpression=Key(PARTITION).eq(TURN))["Items"]
    assert len(items) == 4
    for item in items:
        assert before + TTL_SECONDS <= int(item[TTL_ATTRIBUTE]) <= after + TTL_SECONDS
    described = aws.client("dynamodb").describe_time_to_live(TableName=aws.tables["StateTable"])
    assert described["TimeToLiveDescription"]["AttributeName"] == TTL_ATTRIBUTE


# Claims, branches, execution ---------------------------------------------------------------------------------
def test_claim_first_value_wins(store):
    assert store.claim(TURN, "2:filter_top_k:run", 7) == 7
    assert store.claim(TURN, "2:filter_top_k:run", 12) == 7  # a retry reads the first claim back
    assert store.claim(TURN, "3:into_chat_message:run", 12) == 12
    assert store.claim("other#turn", "2:filter_top_k:run", 0) == 0
    assert store.claim(TURN, "2:filter_top_k:run", 0) == 7


def test_branches_save_and_load(store):
    small = json.dumps({"kind": "chunk", "results": [{"id": "c1"}]})
    name = store.save_branch(TURN, "1:abcdef", small)
    assert name == "branch#1:abcdef"
    assert store.load_branch(TURN, name) == small
    with pytest.raises(LookupError):
        store.load_branch(TURN, "branch#missing")
    with pytest.raises(LookupError):
        store.load_branch("other#turn", name)


def test_a_large_branch_goes_to_s3_and_loads_back_identical(aws, store, table):
    big = json.dumps({"kind": "chunk", "results": [{"id": f"c{i}", "content": "w" * 1000} for i in range(400)]})
    assert len(big.encode()) > MAX_INLINE_BYTES
    name = store.save_branch(TURN, "1:large", big)
    item = table.get_item(Key={PARTITION: TURN, SORT: name})["Item"]
    assert "state" not in item
    assert bucket_keys(aws) == [item["s3_key"]]
    assert store.load_branch(TURN, name) == big


def test_execution_arn_set_and_get(store):
    assert store.execution(TURN) is None
    arn = "arn:aws:states:us-east-1:123456789012:execution:ragline-pipeline:turn-abc"
    store.set_execution(TURN, arn)
    assert store.execution(TURN) == arn
    assert store.execution("other#turn") is None
