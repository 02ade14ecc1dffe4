"""Pipeline state between steps: versioned ChatManage JSON in DynamoDB, or in S3 when it is too large.

Items in the state table (partition ``turn`` = the turn's stream key, sort ``item``):
- ``v#000003``: state version 3 (after the third state-changing step) with the outcome that produced it;
- ``claim#...``: the log offset a step starts writing at, fixed on its first attempt;
- ``branch#...``: one search branch's results, read by the reduce step;
- ``execution``: the workflow execution ARN, for StopExecution;
- ``stop``: present once the user stopped the turn.
"""

from __future__ import annotations

import json
import time
import uuid
import zlib
from typing import Any

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError
from pydantic import BaseModel

PARTITION = "turn"
SORT = "item"
TTL_ATTRIBUTE = "expires_at"
# A DynamoDB item holds 400 KB; leave room for the keys and the outcome.
MAX_INLINE_BYTES = 350_000
# First write of this item: versions and claims are written once and never overwritten.
ITEM_IS_NEW = "attribute_not_exists(#item)"


COMPRESSION_LEVEL = 6


def _unpack(data: bytes, compressed: bool) -> str:
    return (zlib.decompress(data) if compressed else data).decode("utf-8")


class StateRef(BaseModel):
    """The pointer a workflow carries instead of the state itself (Step Functions payloads cap at 256 KiB)."""

    turn: str
    version: int


def version_item(version: int) -> str:
    """The sort key of a state version (zero-padded, so versions sort as text)."""
    return f"v#{version:06d}"


class StateStore:
    """The turn's state versions, branch results, stop flag and execution in the state table, large ones in S3."""

    def __init__(self, table: Any, s3: Any, bucket: str, ttl_seconds: int) -> None:
        """A store on ``table`` and, for states too large for an item, ``bucket``; items expire after ``ttl_seconds``."""
        self._table = table
        self._s3 = s3
        self._bucket = bucket
        self._ttl = ttl_seconds

    @property
    def table(self) -> Any:
        """The state table (indexing leases and upload records live there too)."""
        return self._table

    def _put_new(self, item: dict[str, Any]) -> bool:
        try:
            self._table.put_item(
                Item={**item, TTL_ATTRIBUTE: int(time.time()) + self._ttl},
                ConditionExpression=ITEM_IS_NEW,
                ExpressionAttributeNames={"#item": SORT},
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def _get(self, turn: str, item: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self._table.get_item(Key={PARTITION: turn, SORT: item}, ConsistentRead=True).get(
            "Item"
        )
        return found

    # State versions -------------------------------------------------------------------------------------
    def save(self, ref: StateRef, state_json: str, outcome: dict[str, Any]) -> bool:
        """Save a version once; False when it already exists (a retried step: keep the first).

        The JSON is stored zlib-compressed: every stage writes a version, and DynamoDB bills writes per KB
        (search results and history compress several times over).
        """
        item: dict[str, Any] = {PARTITION: ref.turn, SORT: version_item(ref.version), "outcome": json.dumps(outcome)}
        packed = zlib.compress(state_json.encode("utf-8"), COMPRESSION_LEVEL)
        if len(packed) > MAX_INLINE_BYTES:
            # One object per attempt: a retry that loses the conditional write must not overwrite the state
            # the first attempt saved (its own object is left to the bucket's expiry rule).
            key = f"state/{ref.turn}/{version_item(ref.version)}-{uuid.uuid4().hex}.json.z"
            self._s3.put_object(Bucket=self._bucket, Key=key, Body=packed)
            item["s3_key"] = key
        else:
            item["state_z"] = packed
        return self._put_new(item)

    def load(self, ref: StateRef) -> tuple[str, dict[str, Any]] | None:
        """The state of version ``ref`` and the outcome saved with it; None when there is no such version."""
        item = self._get(ref.turn, version_item(ref.version))
        if item is None:
            return None
        return self._state_of(item), json.loads(item.get("outcome") or "{}")

    def _state_of(self, item: dict[str, Any]) -> str:
        if "s3_key" in item:
            body: bytes = self._s3.get_object(Bucket=self._bucket, Key=item["s3_key"])["Body"].read()
            return _unpack(body, compressed=str(item["s3_key"]).endswith(".z"))
        if "state_z" in item:
            return _unpack(bytes(item["state_z"].value if hasattr(item["state_z"], "value") else item["state_z"]), True)
        return str(item["state"])

    def latest(self, turn: str) -> tuple[StateRef, str] | None:
        """The newest version of the turn's state and its reference; None before the first."""
        page = self._table.query(
            KeyConditionExpression=Key(PARTITION).eq(turn) & Key(SORT).begins_with("v#"),
            ScanIndexForward=False,
            Limit=1,
            ConsistentRead=True,
        )
        items = page.get("Items", [])
        if not items:
            return None
        item = items[0]
        return StateRef(turn=turn, version=int(str(item[SORT])[2:])), self._state_of(item)

    # Claims, branches, execution ------------------------------------------------------------------------
    def claim(self, turn: str, name: str, value: int) -> int:
        """The first claimed value wins; every later call (a retry) reads it back."""
        if self._put_new({PARTITION: turn, SORT: f"claim#{name}", "value": value}):
            return value
        existing = self._get(turn, f"claim#{name}")
        assert existing is not None
        return int(existing["value"])

    def claimed(self, turn: str, name: str) -> int | None:
        """The value claimed under ``name``, or None while nothing claimed it."""
        existing = self._get(turn, f"claim#{name}")
        return None if existing is None else int(existing["value"])

    def save_branch(self, turn: str, name: str, payload: str) -> str:
        """Save a parallel branch's result (in S3 when too large for an item); the item name to load it by."""
        item_name = f"branch#{name}"
        if len(payload.encode("utf-8")) > MAX_INLINE_BYTES:
            key = f"branch/{turn}/{name}.json"
            self._s3.put_object(Bucket=self._bucket, Key=key, Body=payload.encode("utf-8"))
            self._table.put_item(
                Item={PARTITION: turn, SORT: item_name, "s3_key": key, TTL_ATTRIBUTE: int(time.time()) + self._ttl}
            )
        else:
            self._table.put_item(
                Item={PARTITION: turn, SORT: item_name, "state": payload, TTL_ATTRIBUTE: int(time.time()) + self._ttl}
            )
        return item_name

    def load_branch(self, turn: str, item_name: str) -> str:
        """A branch result saved by :meth:`save_branch`; :class:`LookupError` when it is gone."""
        item = self._get(turn, item_name)
        if item is None:
            raise LookupError(f"branch result {item_name} of {turn} not found")
        return self._state_of(item)

    def request_stop(self, turn: str) -> None:
        """The flag a running step polls: StopExecution does not interrupt a Lambda already running."""
        self._table.put_item(
            Item={PARTITION: turn, SORT: "stop", "requested": True, TTL_ATTRIBUTE: int(time.time()) + self._ttl}
        )

    def stop_requested(self, turn: str) -> bool:
        """True once a stop was asked for the turn."""
        return self._get(turn, "stop") is not None

    def set_execution(self, turn: str, execution_arn: str) -> None:
        """Record the turn's execution ARN."""
        now = time.time()
        self._table.put_item(
            Item={
                PARTITION: turn,
                SORT: "execution",
                "arn": execution_arn,
                # When it started: an EXPRESS execution cannot be described, only aged.
                "started_at": int(now),
                TTL_ATTRIBUTE: int(now) + self._ttl,
            }
        )

    def execution(self, turn: str) -> str | None:
        """The turn's execution ARN, or None before it was recorded."""
        item = self._get(turn, "execution")
        return str(item["arn"]) if item else None

    def execution_record(self, turn: str) -> tuple[str, float] | None:
        """The execution ARN and its start (epoch seconds; 0 when an older launcher did not record it)."""
        item = self._get(turn, "execution")
        return (str(item["arn"]), float(item.get("started_at", 0))) if item else None
