"""AnswerOwnership: one attempt owns a generating step's answer, in the StateTable of template.yaml (moto)."""

from __future__ import annotations

import asyncio

import pytest

from ragline.serverless.answer_owner import OWNER_ITEM_PREFIX, AnswerLease, AnswerOwnership, Claim

TURN = "sess#msg"
STEP = "9:chat_completion_stream:run"


@pytest.fixture
def table(aws):
    return aws.table("StateTable")


@pytest.fixture
def owners(table) -> AnswerOwnership:
    return AnswerOwnership(table, 3600, lease_s=10.0)


def expire(table, step: str = STEP) -> None:
    """The owner's lease as its expiry leaves it (no renewal since)."""
    table.update_item(
        Key={"turn": TURN, "item": OWNER_ITEM_PREFIX + step},
        UpdateExpression="SET lease_until_ms = :past",
        ExpressionAttributeValues={":past": 1},
    )


def test_the_first_attempt_owns_the_answer_and_the_others_see_it_held(owners):
    assert owners.acquire(TURN, STEP, "first").claim == Claim.OWNER
    second = owners.acquire(TURN, STEP, "second")
    assert (second.claim, second.owner) == (Claim.HELD, "first")
    assert owners.acquire(TURN, STEP, "first").claim == Claim.OWNER  # the owner asking again still owns it
    assert owners.acquire(TURN, "other-step", "second").claim == Claim.OWNER


def test_the_outcome_the_owner_stores_is_every_later_attempts_answer(owners):
    owners.acquire(TURN, STEP, "first")
    assert not owners.finish(TURN, STEP, "second", {"outcome": "completed"})  # not the owner's to store
    assert owners.finish(TURN, STEP, "first", {"outcome": "completed"})
    later = owners.acquire(TURN, STEP, "third")
    assert (later.claim, later.outcome) == (Claim.ENDED, {"outcome": "completed"})


def test_an_expired_lease_is_taken_over_once_and_its_owner_can_no_longer_renew(owners, table):
    owners.acquire(TURN, STEP, "dead")
    expire(table)
    taken = owners.acquire(TURN, STEP, "taker")
    assert (taken.claim, taken.previous_owner) == (Claim.TAKEN_OVER, "dead")
    assert owners.acquire(TURN, STEP, "late").claim == Claim.HELD  # the taker's lease is live
    assert owners.renew(TURN, STEP, "dead") is None
    assert owners.renew(TURN, STEP, "taker") is not None
    assert not owners.finish(TURN, STEP, "dead", {"outcome": "completed"})


def test_two_attempts_finding_the_same_expired_lease_take_it_over_once(owners, table, monkeypatch):
    owners.acquire(TURN, STEP, "dead")
    expire(table)
    # Both read the expired item before either writes: the conditional update lets one through.
    stale = owners.read(TURN, STEP)
    monkeypatch.setattr(owners, "read", lambda turn, step: stale)
    first = owners.acquire(TURN, STEP, "a")
    second = owners.acquire(TURN, STEP, "b")
    assert sorted([first.claim, second.claim]) == sorted([Claim.TAKEN_OVER, Claim.HELD])


def test_a_lease_lost_to_a_taker_stops_its_writes(owners, table):
    async def scenario() -> tuple[bool, bool]:
        owners.acquire(TURN, STEP, "owner")
        lease = AnswerLease(owners, TURN, STEP, "owner")
        before = await lease.writable()
        expire(table)
        owners.acquire(TURN, STEP, "taker")
        lease._valid_until = 0  # its own clock says the lease ran out: it renews before writing
        return before, await lease.writable()

    assert asyncio.run(scenario()) == (True, False)


def test_an_owner_late_to_renew_writes_on_when_nobody_took_over(owners, table):
    async def scenario() -> bool:
        owners.acquire(TURN, STEP, "owner")
        lease = AnswerLease(owners, TURN, STEP, "owner")
        expire(table)
        lease._valid_until = 0
        return await lease.writable()

    assert asyncio.run(scenario()) is True
    assert owners.acquire(TURN, STEP, "retry").claim == Claim.HELD  # renewed: no longer expired
