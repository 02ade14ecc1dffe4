"""The answer benchmark (bench/answers/qa.py) measures a generative answerer behind any OpenAI-compatible
endpoint (``RAGLINE_CHAT_BASE_URL``) the way it measures the extractive default: here the scripted server
answers one question with its gold answer, one without it and the off-topic question by saying the sources
do not say, and the benchmark's figures say exactly that."""

from __future__ import annotations

import pytest

from bench.answers.qa import DATA, SETS, build_models, load, run_set, subset
from tests.support.scripted_model import Script


@pytest.mark.timeout(600)
def test_the_benchmark_scores_a_generative_endpoint(scripted, fresh_scripts, monkeypatch):
    if not (DATA / SETS["en"] / "questions.jsonl").is_file():
        pytest.skip(f"{SETS['en']} not found under {DATA}: the answer benchmark needs ../shared/data")
    monkeypatch.setenv("RAGLINE_CHAT_BASE_URL", f"{scripted.url}/v1")
    monkeypatch.setenv("RAGLINE_CHAT_MODEL", "scripted")
    monkeypatch.setenv("RAGLINE_CHAT_API_KEY", "test")
    models = build_models(None, None)
    assert models.default_chat_model_id == f"scripted@{scripted.url}/v1"
    data = subset(load("en"), questions=2, extra_docs=3, off_topic=1)
    first, second = data.questions
    scripted.queue(
        Script.answer(f'According to the excerpts, {first.answers[0]} <ref id="c1"/>.'),
        Script.answer("The excerpts describe something else entirely."),
        Script.answer("The provided excerpts do not mention this."),
    )

    summary, outcomes = run_set(data, models, models.default_chat_model_id, progress=False)

    assert [o.question.id for o in outcomes] == [first.id, second.id, data.off_topic[0].id]
    assert outcomes[0].answer == f"According to the excerpts, {first.answers[0]} ."  # citation tag removed
    assert summary.contains_gold == 0.5
    assert summary.off_topic == 1
    assert summary.off_topic_not_found == 1.0
    assert summary.on_topic_not_found == 0.0
    assert len(scripted.answers) == 3
    assert first.text in scripted.answers[0].messages[-1]["content"]
