"""Whether the sweep takes a turn's execution for alive: STANDARD asks Step Functions, EXPRESS goes by its
5-minute limit, a turn whose execution was never recorded by its age."""

from __future__ import annotations

import asyncio

from ragline.runtime.recovery import OpenTurn
from ragline.serverless.sweep import UNRECORDED_GRACE_S, ExecutionRunnerLiveness
from ragline.serverless.watch import EXPRESS_GRACE_S, EXPRESS_LIMIT_S, ExecutionLiveness

NOW = 1_000_000.0


class FakeState:
    def __init__(self, records):
        self.records = records

    def execution_record(self, turn):
        return self.records.get(turn)


class FakeSfn:
    def __init__(self, statuses):
        self.statuses = statuses
        self.asked = []

    def describe_execution(self, executionArn):
        self.asked.append(executionArn)
        return {"status": self.statuses[executionArn]}


def _alive(workflow_type, records, statuses, turn):
    sfn = FakeSfn(statuses)
    liveness = ExecutionRunnerLiveness(
        ExecutionLiveness(sfn, FakeState(records), workflow_type, clock=lambda: NOW), clock=lambda: NOW
    )
    return asyncio.run(liveness.alive(turn)), sfn.asked


def test_standard_asks_the_execution_status():
    turn = OpenTurn("s", "m", created_at=NOW - 3600)
    records = {turn.key: ("arn:run", NOW - 3600)}
    assert _alive("STANDARD", records, {"arn:run": "RUNNING"}, turn) == (True, ["arn:run"])
    for status in ("SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"):
        assert _alive("STANDARD", records, {"arn:run": status}, turn) == (False, ["arn:run"])


def test_express_goes_by_its_time_limit_without_asking():
    turn = OpenTurn("s", "m", created_at=NOW - 3600)
    young = {turn.key: ("arn:x", NOW - EXPRESS_LIMIT_S)}
    old = {turn.key: ("arn:x", NOW - EXPRESS_LIMIT_S - EXPRESS_GRACE_S - 1)}
    assert _alive("EXPRESS", young, {}, turn) == (True, [])
    assert _alive("EXPRESS", old, {}, turn) == (False, [])


def test_a_turn_never_recorded_is_alive_within_the_grace_of_an_accept_request():
    assert _alive("STANDARD", {}, {}, OpenTurn("s", "m", created_at=NOW - 5))[0] is True
    assert _alive("STANDARD", {}, {}, OpenTurn("s", "m", created_at=NOW - UNRECORDED_GRACE_S - 1))[0] is False
    # Without a creation time (a log found without its message) it is taken for gone.
    assert _alive("EXPRESS", {}, {}, OpenTurn("s", "m"))[0] is False
