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
