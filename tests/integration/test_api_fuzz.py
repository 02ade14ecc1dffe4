"""schemathesis against the OpenAPI spec the embedded server publishes: no input gets a 5xx.

Every operation of ``/openapi.json`` is called over real HTTP with inputs generated from its schema — valid
ones and ones the schema refuses (negative cases). Half the cases name real resources of the tenant (a
knowledge base with a document, a session with a finished turn), so validation past the 404 is exercised
too; the rest use whatever schemathesis generated. The budget is small (``FUZZ_EXAMPLES`` per operation,
``RAGLINE_FUZZ_EXAMPLES`` to change it) so ``make test`` stays fast; the counts are printed at the end.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from tests.conftest import Ragline, start_ragline
from tests.support.scripted_model import Script

FUZZ_EXAMPLES = int(os.environ.get("RAGLINE_FUZZ_EXAMPLES", "6"))
# Operations whose cases run the pipeline or the embedder: a smaller share of the budget keeps the run fast.
SLOW = {"knowledge-chat", "agent-chat", "questions", "documents", "faq", "knowledge/file", "knowledge/manual"}
DOCS = {"Guide": "# Guide\n\nThe reactor cools with heavy water. Heavy water slows neutrons down."}

STATS: dict[str, Counter[str]] = {}


@pytest.fixture(scope="module")
def world(tmp_path_factory: Any, shared_models: Any, scripted: Any) -> Any:
    server, ragline = start_ragline(tmp_path_factory.mktemp("fuzz") / "data", shared_models)
    kb = ragline.create_kb("fuzz", DOCS)
    session = ragline.session([kb])
    scripted.queue(Script.answer("Heavy ", "water."))
    turn = ragline.ask(session, "How does the reactor cool?")
    ragline.events(session, turn["assistant_message_id"])
    document = ragline.client.get(f"/api/v1/knowledge-bases/{kb}/documents").json()["data"][0]["id"]
    chunks = ragline.client.get(f"/api/v1/knowledge/{document}/chunks").json()
    chunk = (chunks.get("data") or [{}])[0].get("id", "")
    real = {
        "kb_id": kb,
        "knowledge_base_id": kb,
        "id": kb,
        "session_id": session,
        "message_id": turn["assistant_message_id"],
        "document_id": document,
        "knowledge_id": document,
        "chunk_id": chunk,
    }
    yield ragline, real
    ragline.client.close()
    server.stop()
    ragline.container.close()
    _report()


def _budget(path: str) -> int:
    return max(2, FUZZ_EXAMPLES // 3) if any(part in path for part in SLOW) else FUZZ_EXAMPLES


def _real_ids(case: Any, real: dict[str, str]) -> None:
    """Half the cases (decided by the generated values, so a run is reproducible) name real resources."""
    params = case.path_parameters or {}
    digest = hashlib.sha1(repr(sorted(params.items())).encode()).digest()
    if params and digest[0] % 2 == 0:
        for name in params:
            if real.get(name):
                params[name] = real[name]


def _fuzz(operation: Any, mode: GenerationMode, ragline: Ragline, real: dict[str, str], failures: list[str]) -> None:
    name = f"{operation.method.upper()} {operation.path}"
    stats = STATS.setdefault(name, Counter())

    @given(operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=_budget(operation.path),
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
    )
    def run(case: Any) -> None:
        _real_ids(case, real)
        headers = dict(case.headers or {})
        headers["X-API-Key"] = ragline.key
        headers.pop("Authorization", None)
        case.headers = headers
        response = case.call(base_url=ragline.url, timeout=60)
        stats["cases"] += 1
        stats[f"{response.status_code // 100}xx"] += 1
        if response.status_code >= 500:
            failures.append(f"{name} ({mode}): {response.status_code} {response.text[:300]}")

    try:
        run()
    except Unsatisfiable:
        # Nothing of this operation can be made invalid (no parameters, no body): only valid cases exist.
        assert mode == GenerationMode.NEGATIVE, name


def test_no_input_gets_a_server_error(world: Any) -> None:
    ragline, real = world
    # The spec over real HTTP, waited for as long as a loaded machine takes to build it (schemathesis's own
    # loader gives up after 10 s, which a busy 2-core machine exceeds for this many routes).
    spec = ragline.client.get("/openapi.json", timeout=300).json()
    schema = schemathesis.openapi.from_dict(spec)
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            _fuzz(operation, mode, ragline, real, failures)
    operations = {f"{m.upper()} {p}" for p, item in spec["paths"].items() for m in item}
    assert operations <= set(STATS), sorted(operations - set(STATS))
    assert all(s["cases"] > 0 for s in STATS.values()), {k: v for k, v in STATS.items() if not v["cases"]}
    assert not failures, "\n".join(failures)


def _report() -> None:
    cases = sum(s["cases"] for s in STATS.values())
    errors = sum(s["5xx"] for s in STATS.values())
    by_class: Counter[str] = Counter()
    for stats in STATS.values():
        by_class.update({k: v for k, v in stats.items() if k.endswith("xx")})
    # The figures for the closing note (shown with -s, and in the log of a failing run).
    print(
        f"\nschemathesis: {len(STATS)} operations, {cases} cases, {errors} 5xx "
        f"({', '.join(f'{k} {v}' for k, v in sorted(by_class.items()))})"
    )
