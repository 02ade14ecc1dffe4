"""Generates the Step Functions definition from the pipeline's stage list.

One Task state per stage, named after it, so the console graph reads as the pipeline. Only stages that
some plan leaves out get a Choice guard. ``chunk_search_parallel`` becomes a plan step, an inline Map
over the search branches and a reduce step. Outcomes route by typed errors raised by ``pipeline_step``
(``SearchNothing`` → fallback, ``Stopped`` → end, anything else → the state that writes the ``error``
event), never by a Choice after every stage: a Standard workflow bills every transition.

Run ``python -m ragline.serverless.statemachine`` to print it; ``statemachine/pipeline.asl.json`` is the
committed output and a test fails when it is stale.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from ragline.runtime.plan import FULL_STAGE_ORDER, build_plan
from ragline.types import EventType, PipelineRequest

FUNCTION_ARN = "${PipelineStepFunctionArn}"
STEP_TIMEOUT_S = 300

# Lambda's own transient failures; the function did not run (or not to the end) and is safe to re-run.
LAMBDA_TRANSIENT = [
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
]
TIMEOUTS = ["Sandbox.Timedout", "States.Timeout"]
# Streaming text is not re-generated after a timeout: a second model call would not write the same words.
NO_TIMEOUT_RETRY = frozenset({EventType.CHAT_COMPLETION_STREAM})
# A retry of a generating step that waited for the attempt owning the answer until its own time ran out
# (serverless/step.py): a fresh attempt waits on (the owner ends, or its lease expires, within one more).
ANSWER_IN_PROGRESS = {"ErrorEquals": ["AnswerInProgress"], "IntervalSeconds": 1, "MaxAttempts": 2}

FALLBACK = "fallback"
STOPPED = "stopped"
FAIL_TURN = "fail_turn"
FAILED = "failed"


def possible_plans() -> list[list[EventType]]:
    """Every plan the builder can produce, over every combination of the flags it reads."""
    plans: list[list[EventType]] = []
    flags = itertools.product((True, False), (True, False), (0, 5), (True, False), (True, False))
    for has_kb, web, rounds, memory, analysis in flags:
        request = PipelineRequest(
            query="q",
            request_id="r",
            session_id="s",
            tenant_id="t",
            knowledge_base_ids=("kb",) if has_kb else (),
            web_search_enabled=web,
            max_rounds=rounds,
            memory_enabled=memory,
            data_analysis_enabled=analysis,
        )
        plan = build_plan(request)
        if plan not in plans:
            plans.append(plan)
    return plans


def guarded_stages() -> list[EventType]:
    """Stages absent from at least one plan: these need a Choice; the others always run."""
    plans = possible_plans()
    return [stage for stage in FULL_STAGE_ORDER if not all(stage in plan for plan in plans)]


def _presence(stage: EventType, plans: list[list[EventType]]) -> tuple[bool, ...]:
    return tuple(stage in plan for plan in plans)


def _implies(narrow: tuple[bool, ...], wide: tuple[bool, ...]) -> bool:
    return all(w or not n for n, w in zip(narrow, wide, strict=True))


def guard_blocks() -> list[list[EventType]]:
    """Optional stages in blocks.

    A block opens at a guarded stage and takes the following guarded stages that only ever run when it runs. A Standard
    workflow bills every state entered, so one Choice at the block's head decides the whole block (the RAG stages are
    kept or dropped together); a stage inside it with a narrower condition (web_fetch, only with web search) adds a
    Choice of its own.
    """
    plans = possible_plans()
    guarded = set(guarded_stages())
    blocks: list[list[EventType]] = []
    for index, stage in enumerate(FULL_STAGE_ORDER):
        if stage not in guarded:
            continue
        previous = FULL_STAGE_ORDER[index - 1] if index else None
        if blocks and previous in blocks[-1] and _implies(_presence(stage, plans), _presence(blocks[-1][0], plans)):
            blocks[-1].append(stage)
        else:
            blocks.append([stage])
    return blocks


def choice_stages() -> list[EventType]:
    """The stages reached through a Choice: block heads, and stages narrower than their block."""
    plans = possible_plans()
    chosen: list[EventType] = []
    for block in guard_blocks():
        head = _presence(block[0], plans)
        chosen.extend(stage for stage in block if stage == block[0] or _presence(stage, plans) != head)
    return chosen


def guard_groups() -> list[list[EventType]]:
    """Each Choice and the stages it decides.

    A block head with the stages that share its condition, or a narrower stage alone.
    """
    plans = possible_plans()
    groups: list[list[EventType]] = []
    for block in guard_blocks():
        head = _presence(block[0], plans)
        head_group = [block[0]]
        groups.append(head_group)
        for stage in block[1:]:
            if _presence(stage, plans) == head:
                head_group.append(stage)
            else:
                groups.append([stage])
    return groups


def _payload(stage: EventType, phase: str, **extra: str) -> dict[str, Any]:
    return {
        "stage": stage.value,
        "phase": phase,
        "turn.$": "$.turn",
        "plan.$": "$.plan",
        "state_ref.$": "$.result.state_ref",
        **extra,
    }


def _retry(stage: EventType) -> list[dict[str, Any]]:
    retry: list[dict[str, Any]] = [
        {"ErrorEquals": LAMBDA_TRANSIENT, "IntervalSeconds": 1, "MaxAttempts": 3, "BackoffRate": 2.0}
    ]
    if stage not in NO_TIMEOUT_RETRY:
        retry.append({"ErrorEquals": TIMEOUTS, "IntervalSeconds": 1, "MaxAttempts": 1})
    else:
        retry.append(ANSWER_IN_PROGRESS)
    return retry


def _catch() -> list[dict[str, Any]]:
    return [
        {"ErrorEquals": ["SearchNothing"], "ResultPath": "$.error", "Next": FALLBACK},
        {"ErrorEquals": ["Stopped"], "ResultPath": "$.error", "Next": STOPPED},
        {"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": FAIL_TURN},
    ]


def _task(
    stage: EventType, phase: str, next_state: str | None, payload: dict[str, Any], selector: dict[str, str]
) -> dict[str, Any]:
    state: dict[str, Any] = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {"FunctionName": FUNCTION_ARN, "Payload": payload},
        "ResultSelector": selector,
        "ResultPath": "$.result",
        "TimeoutSeconds": STEP_TIMEOUT_S,
        "Retry": _retry(stage),
        "Catch": _catch(),
    }
    if next_state is None:
        state["End"] = True
    else:
        state["Next"] = next_state
    return state


def _stage_states(stage: EventType, next_state: str | None, is_last: bool) -> tuple[str, dict[str, dict[str, Any]]]:
    """The states of one stage and the name of its entry state."""
    state_ref = {"state_ref.$": "$.Payload.state_ref"}
    # After the last stage the step itself writes ``complete``: the workflow ends there, with no state more.
    after = None if is_last else next_state
    if stage != EventType.CHUNK_SEARCH_PARALLEL:
        return stage.value, {stage.value: _task(stage, "run", after, _payload(stage, "run"), state_ref)}
    name = stage.value
    branches, reduce = f"{name}.branches", f"{name}.reduce"
    branch_task = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {
            "FunctionName": FUNCTION_ARN,
            "Payload": {
                "stage": name,
                "phase": "branch",
                "turn.$": "$.turn",
                "plan.$": "$.plan",
                "state_ref.$": "$.state_ref",
                "branch.$": "$.branch",
            },
        },
        "ResultSelector": {"branch_ref.$": "$.Payload.branch_ref"},
        "TimeoutSeconds": STEP_TIMEOUT_S,
        "Retry": _retry(stage),
        "End": True,
    }
    states = {
        name: _task(
            stage,
            "plan",
            branches,
            _payload(stage, "plan"),
            {"state_ref.$": "$.Payload.state_ref", "branches.$": "$.Payload.branches"},
        ),
        branches: {
            "Type": "Map",
            "ItemsPath": "$.result.branches",
            "ItemSelector": {
                "turn.$": "$.turn",
                "plan.$": "$.plan",
                "state_ref.$": "$.result.state_ref",
                "branch.$": "$$.Map.Item.Value",
            },
            "ItemProcessor": {
                "ProcessorConfig": {"Mode": "INLINE"},
                "StartAt": f"{name}.branch",
                "States": {f"{name}.branch": branch_task},
            },
            "ResultPath": "$.result.branch_results",
            "Next": reduce,
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": FAIL_TURN}],
        },
        reduce: _task(
            stage,
            "reduce",
            after,
            _payload(stage, "reduce", **{"branch_results.$": "$.result.branch_results"}),
            state_ref,
        ),
    }
    return name, states


def _terminal_task(phase: str, next_state: str | None, catch_to: str | None) -> dict[str, Any]:
    state: dict[str, Any] = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {
            "FunctionName": FUNCTION_ARN,
            "Payload": {"stage": phase, "phase": phase, "turn.$": "$.turn", "plan.$": "$.plan", "error.$": "$.error"},
        },
        "ResultPath": None,
        "TimeoutSeconds": STEP_TIMEOUT_S,
        "Retry": [{"ErrorEquals": LAMBDA_TRANSIENT, "IntervalSeconds": 1, "MaxAttempts": 3, "BackoffRate": 2.0}],
    }
    if phase == FALLBACK:
        state["Retry"].append(ANSWER_IN_PROGRESS)
    if next_state is None:
        state["End"] = True
    else:
        state["Next"] = next_state
    if catch_to is not None:
        state["Catch"] = [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": catch_to}]
    return state


def build_definition(stages: tuple[EventType, ...] = FULL_STAGE_ORDER) -> dict[str, Any]:
    """The Amazon States Language definition of the turn workflow for ``stages``."""
    blocks = {block[0]: block for block in guard_blocks()}
    block_of = {stage: block for block in blocks.values() for stage in block}
    chosen = set(choice_stages())

    def entry(index: int) -> str | None:
        """The state a stage is reached through from before it: its Choice, when it has one."""
        if index >= len(stages):
            return None
        stage = stages[index]
        return f"{stage.value}?" if stage in chosen else stage.value

    def after(stage: EventType) -> str | None:
        """Where a Choice goes when its stage does not run.

        Past the whole block for a head, else on to the next stage (which the block's head already decided).
        """
        last = block_of[stage][-1] if stage in blocks else stage
        return entry(stages.index(last) + 1)

    states: dict[str, dict[str, Any]] = {}
    for index, stage in enumerate(stages):
        next_entry = entry(index + 1)
        name, stage_states = _stage_states(stage, next_entry, is_last=index + 1 == len(stages))
        if stage in chosen:
            skip_to = after(stage)
            if skip_to is None:
                raise ValueError("a plan cannot end with an optional stage: the workflow would end in a Choice")
            decided = [s.value for s in block_of[stage]] if stage in blocks else [stage.value]
            states[f"{stage.value}?"] = {
                "Type": "Choice",
                "Comment": f"Runs {', '.join(decided)} when the plan has them." if stage in blocks else None,
                "Choices": [{"Variable": f"$.plan.{stage.value}", "BooleanEquals": True, "Next": name}],
                "Default": skip_to,
            }
            if stage not in blocks:
                states[f"{stage.value}?"]["Comment"] = f"Runs {stage.value} when the plan has it."
        states.update(stage_states)
    first = entry(0)
    assert first is not None
    _merge_choice_chains(states, first)
    states[FALLBACK] = _terminal_task("fallback", None, FAIL_TURN)
    states[FAIL_TURN] = _terminal_task("fail", FAILED, None)
    states[STOPPED] = {"Type": "Succeed", "Comment": "Stopped by the user; the stop route saved the answer."}
    states[FAILED] = {"Type": "Fail", "Error": "TurnFailed", "Cause": "A stage failed; the error event is in the log."}
    return {
        "Comment": "ragline: one turn of the RAG pipeline, one Task per stage (generated; do not edit).",
        "StartAt": first,
        "States": states,
    }


def _merge_choice_chains(states: dict[str, dict[str, Any]], start: str) -> None:
    """Merge chains of Choices so skipping several optional blocks costs one billed transition.

    A Choice whose default is another Choice takes that Choice's rules after its own (evaluated only when its own fail,
    exactly as entering the next Choice would), so skipping several optional blocks in a row costs one billed
    transition, not one per block. A Choice no longer reached is removed.
    """
    for state in states.values():
        if state["Type"] != "Choice":
            continue
        while states[state["Default"]]["Type"] == "Choice":
            following = states[state["Default"]]
            state["Choices"] = [*state["Choices"], *following["Choices"]]
            state["Default"] = following["Default"]
        state.pop("Comment", None)
    targets = {
        target
        for state in states.values()
        for target in [state.get("Next"), state.get("Default"), *(c["Next"] for c in state.get("Choices", []))]
        if target
    }
    for name in [n for n, st in states.items() if st["Type"] == "Choice" and n not in targets and n != start]:
        del states[name]


def render() -> str:
    """The definition as the JSON file the template reads."""
    return json.dumps(build_definition(), indent=2) + "\n"


if __name__ == "__main__":
    print(render(), end="")
