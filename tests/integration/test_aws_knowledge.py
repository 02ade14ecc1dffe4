"""Knowledge-base turns through the deployed AWS stack, searched by the real OpenSearch (make test's live node):
documents uploaded through API Gateway → ingest_turn, then the indexing function (embedded with MiniLM, indexed
with SigV4-signed requests under its own role), questions answered by the workflow's pipeline_step tasks, which
search the same index."""

from __future__ import annotations

from tests.support.lambdas import ServiceError
from tests.support.scripted_model import Script
from tests.support.sse import answer_text

DOCS = {
    "Coffee brewing": (
        "# Coffee brewing\n\n## Water\n\nBrew coffee with water between 90 and 96 degrees Celsius. "
        "Boiling water extracts bitter compounds.\n\n## Grind\n\nEspresso needs a fine grind."
    ),
    "Tea basics": "# Tea\n\nGreen tea is brewed at 70 to 80 degrees Celsius for two to three minutes.",
}


def _types(events):
    return [e.type.value for e in events]


def _steps(aws, ids, with_errors=False):
    found = []
    for invoked in aws.stack.lambdas.invocations:
        turn = invoked.event.get("turn", {})
        if (
            invoked.function == "PipelineStepFunction"
            and turn.get("assistant_message_id") == ids["assistant_message_id"]
        ):
            step = (invoked.event["stage"], invoked.event.get("phase", "run"))
            found.append((*step, invoked.error) if with_errors else step)
    return found


def test_a_rag_turn_is_searched_by_opensearch_through_the_deployed_functions(aws, aws_search, scripted):
    since = len(aws.stack.calls())
    kb = aws.kb(DOCS)
    session = aws.session([kb])
    scripted.queue(Script.answer("Use 90 to 96 °C ", '<ref id="c1"/>', "water."))
    ids = aws.ask(session, "What water temperature for coffee?")
    frames = aws.frames(ids)
    assert frames[-1].type == "complete"
    assert aws.wait(ids)["status"] == "SUCCEEDED"
    types = [f.type for f in frames]
    assert types.index("references") < types.index("answer")
    references = next(f for f in frames if f.type == "references").data["knowledge_references"]
    assert "Coffee brewing" in {r["knowledge_title"] for r in references}
    assert "<kb doc=" in answer_text(frames)
    events = aws.log(ids)
    assert [e.seq for e in events] == list(range(len(events)))
    steps = [s for s in _steps(aws, ids) if s[1] != "branch"]
    assert ("chunk_search_parallel", "plan") in steps
    assert ("chunk_search_parallel", "reduce") in steps
    assert ("filter_top_k", "run") in steps
    # The indexing function indexed and pipeline_step searched, each signing for its own role, each request
    # checked.
    opensearch = [c for c in aws.stack.calls()[since:] if c.action.startswith("es:")]
    assert {"IndexDocumentFunction", "PipelineStepFunction"} <= {c.function for c in opensearch}
    assert {c.function for c in opensearch} <= {"IngestTurnFunction", "IndexDocumentFunction", "PipelineStepFunction"}
    assert all(c.allowed for c in opensearch)
    assert any(c.function == "PipelineStepFunction" and c.resource.endswith("/_search") for c in opensearch)


def test_a_question_nothing_matches_goes_to_the_fallback(aws, aws_search, scripted):
    kb = aws.kb({"Gardening": "# Roses\n\nPrune roses in late winter, just above an outward-facing bud."})
    session = aws.session([kb])
    scripted.queue(Script.answer("Nothing in the knowledge base covers that."))
    ids = aws.ask(session, "Who won the 1930 football world cup in Uruguay?")
    assert aws.wait(ids)["status"] == "SUCCEEDED"
    events = aws.log(ids)
    assert _types(events)[-1] == "complete"
    answers = [e for e in events if e.type.value == "answer"]
    assert answers
    assert all(e.data.get("is_fallback") for e in answers)
    assert ("fallback", "fallback") in _steps(aws, ids)


def test_a_search_step_retried_after_a_lambda_failure_writes_no_duplicate_events(aws, aws_search, scripted):
    kb = aws.kb(DOCS)
    session = aws.session([kb])
    failed = []

    def fail_once_after_running(event, run):
        result = run()
        if event["stage"] == "filter_top_k" and not failed:
            failed.append(event)
            raise ServiceException()
        return result

    def ServiceException():
        return ServiceError("ServiceException", "Lambda is having a bad day")

    aws.stack.lambdas.around("PipelineStepFunction", fail_once_after_running)
    ids = aws.ask(session, "What water temperature for coffee?")
    assert aws.wait(ids)["status"] == "SUCCEEDED"
    steps = _steps(aws, ids, with_errors=True)
    assert steps.count(("filter_top_k", "run", "ServiceException")) == 1
    assert steps.count(("filter_top_k", "run", None)) == 1
    events = aws.log(ids)
    types = _types(events)
    assert types.count("references") == 1
    assert types.count("complete") == 1
    assert [e.seq for e in events] == list(range(len(events)))


def test_a_search_step_that_timed_out_after_writing_events_rewrites_the_same_offsets(aws, aws_search, scripted):
    """filter_top_k's sandbox dies after it wrote the search window's events, before it saved its state: the
    retry runs it again in a fresh sandbox and its events land on the offsets the first attempt claimed."""
    kb = aws.kb(DOCS)
    session = aws.session([kb])
    state_table = aws.stack.refs["StateTable"]
    # The claim of filter_top_k's first log offset names the stage; its next state-version write is the save.
    with aws.stack.fault(
        "PipelineStepFunction", "dynamodb:PutItem", resource=state_table, params='"v#', after=":filter_top_k:run"
    ):
        ids = aws.ask(session, "What water temperature for coffee?")
        assert aws.wait(ids)["status"] == "SUCCEEDED"
    steps = _steps(aws, ids, with_errors=True)
    assert ("filter_top_k", "run", "Sandbox.Timedout") in steps
    events = aws.log(ids)
    types = _types(events)
    assert types.count("complete") == 1
    assert types.count("references") == 1
    assert [e.seq for e in events] == list(range(len(events)))
