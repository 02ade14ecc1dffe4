"""One trace span per stage, from one Powertools Tracer per process."""

from __future__ import annotations

import logging

import pytest

from ragline import observability


@pytest.fixture
def in_lambda(monkeypatch):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "pipeline_step")
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "false")
    monkeypatch.setenv("AWS_XRAY_CONTEXT_MISSING", "IGNORE_ERROR")
    observability._tracer.cache_clear()
    yield
    observability._tracer.cache_clear()


def test_every_stage_span_of_a_process_uses_the_same_tracer(in_lambda, monkeypatch):
    pytest.importorskip("aws_xray_sdk")
    from aws_lambda_powertools import Tracer

    built: list[object] = []
    original_init = Tracer.__init__

    def counting_init(self, *args, **kwargs):
        built.append(self)
        original_init(self, *args, **kwargs)

    monkeypatch.setattr(Tracer, "__init__", counting_init)
    logger = logging.getLogger("ragline.test")
    for stage in ("load_history", "chunk_search", "chunk_rerank"):
        with observability.stage_span(stage, logger, session_id="s"):
            pass
    assert len(built) == 1


def test_outside_lambda_no_tracer_is_built(monkeypatch):
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    observability._tracer.cache_clear()
    try:
        assert observability._tracer() is None
    finally:
        observability._tracer.cache_clear()
