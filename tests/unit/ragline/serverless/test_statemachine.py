"""The committed state machine is the generator's output, and reads as the pipeline."""

from __future__ import annotations

import json
from pathlib import Path

from ragline.runtime.plan import FULL_STAGE_ORDER
from ragline.serverless.statemachine import (
    build_definition,
    guard_blocks,
    guard_groups,
    guarded_stages,
    possible_plans,
    render,
)
from ragline.types import EventType

ROOT = Path(__file__).resolve().parents[4]


def test_committed_definition_is_current():
    committed = (ROOT / "statemachine" / "pipeline.asl.json").read_text()
    assert committed == render(), "statemachine/pipeline.asl.json is stale: run `make asl`"


def test_every_plan_is_an_ordered_subset_of_the_full_stage_list():
    for plan in possible_plans():
        positions = [FULL_STAGE_ORDER.index(stage) for stage in plan]
        assert positions == sorted(positions)


def test_one_task_per_stage_named_after_it():
    states = build_definition()["States"]
    for stage in FULL_STAGE_ORDER:
        assert states[stage.value]["Type"] == "Task"
        assert states[stage.value]["Parameters"]["Payload"]["stage"] == stage.value


def test_only_droppable_stages_are_guarded_one_choice_per_block():
    states = build_definition()["States"]
    heads = {name[:-1] for name, state in states.items() if state["Type"] == "Choice"}
    groups = guard_groups()
    assert heads == {group[0].value for group in groups}
    assert sorted(s for group in groups for s in group) == sorted(guarded_stages())
    assert guard_blocks()
    # A narrower stage inside a block skips itself only (the block's head decided the rest).
    assert states["web_fetch?"]["Default"] == "chunk_merge"
    for group in groups:
        for plan in possible_plans():
            assert len({stage in plan for stage in group}) == 1  # a block is kept or dropped as one
    always = [s for s in FULL_STAGE_ORDER if s not in guarded_stages()]
    assert always  # some stages run in every plan and carry no guard
    for stage in always:
        assert f"{stage.value}?" not in states


def test_the_rag_stages_share_one_guard():
    groups = [[s.value for s in group] for group in guard_groups()]
    assert ["memory_recall"] in groups  # opted in per request: a guard of its own
    assert ["web_fetch"] in groups  # only with web search: a guard inside the RAG block
    assert [
        "query_understand",
        "chunk_search_parallel",
        "chunk_rerank",
        "chunk_merge",
        "filter_top_k",
        "into_chat_message",  # plain chat sends the question itself, as the reference's plan does
    ] in groups


def test_the_last_stage_ends_the_workflow():
    states = build_definition()["States"]
    assert states[FULL_STAGE_ORDER[-1].value].get("End") is True
    assert states["fallback"].get("End") is True


def test_parallel_search_is_plan_map_reduce():
    states = build_definition()["States"]
    assert states["chunk_search_parallel"]["Next"] == "chunk_search_parallel.branches"
    mapped = states["chunk_search_parallel.branches"]
    assert mapped["Type"] == "Map"
    assert mapped["ItemProcessor"]["ProcessorConfig"]["Mode"] == "INLINE"
    assert mapped["Next"] == "chunk_search_parallel.reduce"


def test_outcomes_route_by_catch_not_by_choice():
    states = build_definition()["States"]
    choices = [s for s in states.values() if s["Type"] == "Choice"]
    assert len(choices) == len(guard_groups())
    for stage in FULL_STAGE_ORDER:
        catches = {tuple(c["ErrorEquals"]): c["Next"] for c in states[stage.value]["Catch"]}
        assert catches[("SearchNothing",)] == "fallback"
        assert catches[("Stopped",)] == "stopped"
        assert catches[("States.ALL",)] == "fail_turn"


def test_retries_cover_only_lambda_transients_and_timeouts():
    """Besides the generating steps' AnswerInProgress (an attempt that waited for the answer's owner until its
    own time ran out), which no other step raises."""
    states = build_definition()["States"]
    allowed = {
        "Lambda.ServiceException",
        "Lambda.AWSLambdaException",
        "Lambda.SdkClientException",
        "Lambda.TooManyRequestsException",
        "Sandbox.Timedout",
        "States.Timeout",
    }
    waiting = {
        name for name, state in states.items() for r in state.get("Retry", []) if "AnswerInProgress" in r["ErrorEquals"]
    }
    assert waiting == {"chat_completion_stream", "fallback"}
    for state in states.values():
        for retry in state.get("Retry", []):
            assert set(retry["ErrorEquals"]) <= allowed | {"AnswerInProgress"}
    streaming = states["chat_completion_stream"]["Retry"]
    assert all("States.Timeout" not in r["ErrorEquals"] for r in streaming)


def test_definition_is_valid_json_with_reachable_states():
    definition = json.loads(render())
    states = definition["States"]
    reachable = {definition["StartAt"]}
    frontier = [definition["StartAt"]]
    while frontier:
        state = states[frontier.pop()]
        targets = [state.get("Next"), state.get("Default")]
        targets += [c["Next"] for c in state.get("Choices", [])] + [c["Next"] for c in state.get("Catch", [])]
        for target in filter(None, targets):
            if target not in reachable:
                reachable.add(target)
                frontier.append(target)
    assert reachable == set(states)


def walk(definition, plan_flags):
    """The stages an execution runs for a plan: Choices evaluated, Tasks recorded (the parallel search's
    plan/Map/reduce counted once), until the workflow ends."""
    states = definition["States"]
    name, ran, transitions = definition["StartAt"], [], 0
    while True:
        transitions += 1
        state = states[name]
        if state["Type"] == "Choice":
            name = next(
                (
                    c["Next"]
                    for c in state["Choices"]
                    if plan_flags[c["Variable"].removeprefix("$.plan.")] is c["BooleanEquals"]
                ),
                state["Default"],
            )
            continue
        stage = state.get("Parameters", {}).get("Payload", {}).get("stage") if state["Type"] == "Task" else None
        if stage and stage not in ran:
            ran.append(stage)
        if state["Type"] == "Map":
            transitions += 1  # one branch
        if state.get("End") or state["Type"] in ("Succeed", "Fail"):
            return ran, transitions
        name = state["Next"]


def test_every_plan_runs_exactly_its_stages_in_order():
    definition = build_definition()
    for plan in possible_plans():
        flags = {stage.value: stage in plan for stage in FULL_STAGE_ORDER}
        ran, _ = walk(definition, flags)
        assert ran == [stage.value for stage in plan]


def test_a_typical_rag_turn_enters_few_states():
    """Billed transitions of a Standard workflow, for history + search without memory, web or analysis."""
    plan = next(
        p
        for p in possible_plans()
        if EventType.LOAD_HISTORY in p
        and EventType.CHUNK_SEARCH_PARALLEL in p
        and EventType.MEMORY_RECALL not in p
        and EventType.WEB_FETCH not in p
        and EventType.DATA_ANALYSIS not in p
    )
    _, transitions = walk(build_definition(), {stage.value: stage in plan for stage in FULL_STAGE_ORDER})
    assert transitions <= 15
