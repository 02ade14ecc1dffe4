"""One generation per answer: the attempt that streams a turn's answer owns it, through a lease in the state table.

Step Functions retries the streaming step on Lambda's transient errors while the first attempt may still be
running (a RequestResponse invocation whose caller saw an error is not cancelled), and an EXPRESS workflow
delivers a task at least once. Two attempts that both ask the model write two different texts to the same log
offsets, where the log's conditional writes splice them. So, for a step that generates text:

- the first attempt claims the answer with a conditional write of its attempt id (the Lambda request id) and
  a lease, which it renews while it runs;
- any other attempt waits for the owner's outcome (stored in the same item when the owner ends) while the
  lease is live;
- once the lease has expired (the owner died), one attempt takes it over by a conditional update naming the
  dead owner: it answers when none of the owner's words reached the log, else it ends the turn with one error.

The owner writes only while its lease is live by its own clock, less a margin: a taker waits for the stored
expiry, so an owner stalled past its lease cannot write beside the taker (this relies on Lambda hosts' clocks
agreeing to well under the margin, as NTP keeps them). An owner that could not renew in time renews before its
next write, or, if another attempt took the answer meanwhile, stops writing and waits for that one's outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from botocore.exceptions import ClientError

from ragline.serverless.state_store import PARTITION, SORT, TTL_ATTRIBUTE

logger = logging.getLogger(__name__)

OWNER_ITEM_PREFIX = "owner#"
# How long an answer's lease lasts without renewal: a dead owner delays the turn by at most this.
LEASE_S = 10.0
# The owner renews this often (a share of the lease): two renewals may fail before its lease runs out.
RENEWALS_PER_LEASE = 3
# The owner stops writing this long before its lease runs out by its own clock (clock drift between hosts;
# at most a quarter of the lease).
FENCE_MARGIN_S = 2.0
# How often a waiting attempt reads the owner's item.
WAIT_POLL_S = 0.5

# The first write of the item: nobody owns this answer yet.
NOBODY_OWNS = "attribute_not_exists(#item)"
# This attempt still owns it (a taker replaces the attempt id).
STILL_MINE = "attempt = :me"
# The owner we found is the one whose lease we saw expire: nobody renewed it or took it over since.
STILL_EXPIRED = "attempt = :owner AND lease_until_ms = :until"


def _now_ms() -> int:
    return int(time.time() * 1000)


def _conditional_failure(error: ClientError) -> bool:
    return error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


class Claim(StrEnum):
    """What :meth:`AnswerOwnership.acquire` found."""

    OWNER = "owner"  # this attempt owns the answer, the first to ask
    TAKEN_OVER = "taken_over"  # this attempt owns it after the previous owner's lease expired
    HELD = "held"  # another attempt owns it and its lease is live
    ENDED = "ended"  # the owner ended; its outcome is stored


@dataclass(frozen=True)
class Acquired:
    """The answer's owner item as one attempt found (and maybe changed) it."""

    claim: Claim
    owner: str
    lease_until_ms: int = 0
    previous_owner: str = ""
    outcome: dict[str, Any] | None = None


class AnswerOwnership:
    """Owner items (``owner#<step>``) of the turns' generating steps, in the state table."""

    def __init__(self, table: Any, ttl_seconds: int, lease_s: float = LEASE_S) -> None:
        """Owner items in ``table`` (the state table), expiring with the turn's state after ``ttl_seconds``."""
        self._table = table
        self._ttl = ttl_seconds
        self.lease_s = lease_s

    def _key(self, turn: str, step: str) -> dict[str, str]:
        return {PARTITION: turn, SORT: f"{OWNER_ITEM_PREFIX}{step}"}

    def read(self, turn: str, step: str) -> Acquired | None:
        """The owner item as stored, or None before any attempt claimed the answer."""
        item = self._table.get_item(Key=self._key(turn, step), ConsistentRead=True).get("Item")
        if item is None:
            return None
        outcome = json.loads(item["outcome"]) if "outcome" in item else None
        claim = Claim.ENDED if outcome is not None else Claim.HELD
        return Acquired(claim, str(item["attempt"]), int(item["lease_until_ms"]), outcome=outcome)

    def acquire(self, turn: str, step: str, attempt: str) -> Acquired:
        """Claim the answer for ``attempt``, take over an expired lease, or report the live owner or its outcome."""
        until = _now_ms() + int(self.lease_s * 1000)
        try:
            self._table.put_item(
                Item={
                    **self._key(turn, step),
                    "attempt": attempt,
                    "lease_until_ms": until,
                    TTL_ATTRIBUTE: int(time.time()) + self._ttl,
                },
                ConditionExpression=NOBODY_OWNS,
                ExpressionAttributeNames={"#item": SORT},
            )
            return Acquired(Claim.OWNER, attempt, until)
        except ClientError as error:
            if not _conditional_failure(error):
                raise
        found = self.read(turn, step)
        if found is None:  # the item expired between the two calls: a turn a week old
            return self.acquire(turn, step, attempt)
        if found.claim == Claim.ENDED:
            return found
        if found.owner == attempt:
            return Acquired(Claim.OWNER, attempt, found.lease_until_ms)
        if found.lease_until_ms >= _now_ms():
            return found
        try:
            self._table.update_item(
                Key=self._key(turn, step),
                UpdateExpression="SET attempt = :me, lease_until_ms = :new, previous_attempt = :owner",
                ConditionExpression=STILL_EXPIRED,
                ExpressionAttributeValues={
                    ":me": attempt,
                    ":new": until,
                    ":owner": found.owner,
                    ":until": found.lease_until_ms,
                },
            )
        except ClientError as error:
            if not _conditional_failure(error):
                raise
            # Renewed by its owner, or taken over by another attempt, since we read it.
            return self.read(turn, step) or found
        logger.warning(
            "answer taken over", extra={"turn": turn, "step": step, "attempt": attempt, "previous": found.owner}
        )
        return Acquired(Claim.TAKEN_OVER, attempt, until, previous_owner=found.owner)

    def renew(self, turn: str, step: str, attempt: str) -> int | None:
        """Extend ``attempt``'s lease; its new expiry (epoch ms), or None when another attempt took the answer."""
        until = _now_ms() + int(self.lease_s * 1000)
        try:
            self._table.update_item(
                Key=self._key(turn, step),
                UpdateExpression="SET lease_until_ms = :until",
                ConditionExpression=STILL_MINE,
                ExpressionAttributeValues={":me": attempt, ":until": until},
            )
        except ClientError as error:
            if _conditional_failure(error):
                return None
            raise
        return until

    def finish(self, turn: str, step: str, attempt: str, outcome: dict[str, Any]) -> bool:
        """Store the owner's outcome, which every waiting or later attempt returns; False when no longer the owner."""
        try:
            self._table.update_item(
                Key=self._key(turn, step),
                UpdateExpression="SET outcome = :outcome",
                ConditionExpression=STILL_MINE,
                ExpressionAttributeValues={":me": attempt, ":outcome": json.dumps(outcome)},
            )
        except ClientError as error:
            if _conditional_failure(error):
                return False
            raise
        return True


class AnswerLease:
    """The owner's side of a lease: renewed in the background, checked before every write."""

    def __init__(self, ownership: AnswerOwnership, turn: str, step: str, attempt: str) -> None:
        """The lease of ``attempt`` on ``step`` of ``turn``, just acquired."""
        self._ownership = ownership
        self._turn = turn
        self._step = step
        self.attempt = attempt
        self._live_s = ownership.lease_s - min(FENCE_MARGIN_S, ownership.lease_s / 4)
        self._valid_until = time.monotonic() + self._live_s
        self.lost = False
        self._task: asyncio.Task[None] | None = None

    async def _renew(self) -> bool:
        asked = time.monotonic()
        until = await asyncio.to_thread(self._ownership.renew, self._turn, self._step, self.attempt)
        if until is None:
            if not self.lost:
                logger.warning("answer lost to another attempt", extra={"turn": self._turn, "attempt": self.attempt})
            self.lost = True
            return False
        # Measured from before the call: the stored expiry is at least this far away.
        self._valid_until = asked + self._live_s
        return True

    async def _keep(self) -> None:
        while not self.lost:
            await asyncio.sleep(self._ownership.lease_s / RENEWALS_PER_LEASE)
            try:
                await self._renew()
            except Exception:  # a failed renewal is tried again; writes wait for one that succeeds
                logger.warning("answer lease renewal failed", exc_info=True, extra={"turn": self._turn})

    def start(self) -> None:
        """Renew the lease in the background until :meth:`close`."""
        self._task = asyncio.create_task(self._keep())

    async def close(self) -> None:
        """Stop renewing."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def writable(self) -> bool:
        """True while this attempt may write: its lease is live, renewed now if it had run out by our clock."""
        if self.lost:
            return False
        if time.monotonic() < self._valid_until:
            return True
        return await self._renew()

    async def finish(self, outcome: dict[str, Any]) -> bool:
        """Store the outcome for the other attempts; False when the answer was lost meanwhile."""
        if self.lost:
            return False
        return await asyncio.to_thread(self._ownership.finish, self._turn, self._step, self.attempt, outcome)
