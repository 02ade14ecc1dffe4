from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from ragline.config import AppConfig, PromptTemplates, find_config_dir, load_config, render_placeholders

REPO_CONFIG = Path(__file__).resolve().parents[3] / "config"
NOW = datetime(2024, 3, 6, 14, 30, 5, tzinfo=timezone(timedelta(hours=1)))


def test_double_and_single_brace_placeholders():
    out = render_placeholders("Q: {{query}} / {query} / {{ language }}", {"query": "why?", "language": "French"})
    assert out == "Q: why? / why? / French"


def test_unknown_placeholders_left_as_written():
    template = "{{unknown}} {other} {{ spaced_unknown }} {Query} {{query}}"
    assert render_placeholders(template, {"query": "q"}) == "{{unknown}} {other} {{ spaced_unknown }} {Query} q"


def test_inserted_values_are_not_re_expanded():
    values = {"query": "{{contexts}} and {language}", "contexts": "CTX", "language": "English"}
    assert render_placeholders("{{query}} | {{contexts}}", values) == "{{contexts}} and {language} | CTX"


def test_json_like_braces_are_untouched():
    template = 'Reply with {"rewrite_query": "...", "intent": "..."} for {{query}}'
    assert render_placeholders(template, {"query": "x"}) == 'Reply with {"rewrite_query": "...", "intent": "..."} for x'


def test_current_time_and_week_always_available():
    out = render_placeholders("{{current_time}} on {current_week}", {}, now=NOW)
    assert out == f"{NOW.strftime('%Y-%m-%d %H:%M:%S %Z').strip()} on Wednesday"
    assert out.startswith("2024-03-06 14:30:05")


def test_values_override_builtins():
    assert render_placeholders("{{current_week}}", {"current_week": "Caturday"}, now=NOW) == "Caturday"


def test_find_config_dir_finds_the_repository_config(monkeypatch):
    monkeypatch.delenv("RAGLINE_CONFIG_DIR", raising=False)
    assert find_config_dir().resolve() == REPO_CONFIG.resolve()
    assert find_config_dir(Path("/explicit")) == Path("/explicit")
    monkeypatch.setenv("RAGLINE_CONFIG_DIR", "/from/env")
    assert find_config_dir() == Path("/from/env")


def test_load_config_reads_repository_config():
    config, templates = load_config(REPO_CONFIG)
    assert isinstance(config, AppConfig)
    raw = yaml.safe_load((REPO_CONFIG / "config.yaml").read_text(encoding="utf-8"))
    assert config.conversation.max_rounds == raw["conversation"]["max_rounds"] == 5
    assert config.conversation.rerank_top_k == 30
    assert config.retrieval.rrf_k == 60
    assert config.ingestion.chunk_size == raw["ingestion"]["chunk_size"]
    assert config.stream.batch_max_delay_ms == raw["stream"]["batch_max_delay_ms"]
    assert config.stream.embedded_batch_max_delay_ms == raw["stream"]["embedded_batch_max_delay_ms"]
    assert templates.files() == sorted(p.stem for p in (REPO_CONFIG / "prompt_templates").glob("*.yaml"))


def test_load_config_default_matches_explicit(monkeypatch):
    monkeypatch.delenv("RAGLINE_CONFIG_DIR", raising=False)
    load_config.cache_clear()
    try:
        default_config, default_templates = load_config()
    finally:
        load_config.cache_clear()
    explicit_config, explicit_templates = load_config(REPO_CONFIG)
    assert default_config == explicit_config
    assert default_templates.files() == explicit_templates.files()


TEMPLATE_FILES = sorted((REPO_CONFIG / "prompt_templates").glob("*.yaml"))


@pytest.mark.parametrize("path", TEMPLATE_FILES, ids=[p.stem for p in TEMPLATE_FILES])
def test_every_prompt_template_file_loads(path):
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    entries = loaded["templates"]
    assert entries
    ids = [entry["id"] for entry in entries]
    assert len(ids) == len(set(ids))
    templates = PromptTemplates(REPO_CONFIG / "prompt_templates")
    assert templates.ids(path.stem) == sorted(ids)
    for entry in entries:
        texts = [entry[field] for field in ("content", "system", "user") if field in entry]
        assert texts, entry["id"]
        assert all(isinstance(t, str) and t.strip() for t in texts)
        assert templates.entry(path.stem, entry["id"]) == entry


def test_configured_template_ids_exist():
    config, templates = load_config(REPO_CONFIG)
    summary = config.conversation.summary
    assert templates.get("system_prompt", summary.prompt_id)
    assert templates.get("context_template", summary.context_template_id)
    assert templates.get("fallback", config.conversation.fallback_prompt_id)
    assert "{{contexts}}" in templates.get("system_prompt", "default_kb")
    assert "{{query}}" in templates.get("context_template", "default")


def test_missing_template_raises_key_error_naming_it():
    _, templates = load_config(REPO_CONFIG)
    with pytest.raises(KeyError, match=r"system_prompt\.yaml#nope"):
        templates.get("system_prompt", "nope")
    with pytest.raises(KeyError, match=r"nofile\.yaml#default"):
        templates.entry("nofile", "default")


def test_values_with_regex_replacement_syntax_are_inserted_literally():
    value = r"C:\path\1 \g<0> $1"
    assert render_placeholders("[{{query}}]", {"query": value}) == f"[{value}]"


def _leaves(value: object, prefix: str = "") -> dict[str, object]:
    """``section.key.subkey`` → value, for every leaf of a mapping (an empty mapping is a leaf)."""
    if isinstance(value, dict) and value:
        found: dict[str, object] = {}
        for key, inner in value.items():
            found.update(_leaves(inner, f"{prefix}.{key}" if prefix else str(key)))
        return found
    return {prefix: value}


def test_config_yaml_states_every_default_exactly_as_the_code_does():
    """One source per default: the configuration models hold them (signature defaults read the models), and
    config/config.yaml, the file an operator edits, lists every one of them with the same value. A key added to
    the code without the file, a value changed on one side only, or a key the code does not know fails here."""
    raw = yaml.safe_load((find_config_dir() / "config.yaml").read_text(encoding="utf-8"))
    in_file = _leaves(raw)
    in_code = _leaves(AppConfig().model_dump(mode="json"))
    assert sorted(set(in_code) - set(in_file)) == [], "defaults missing from config/config.yaml"
    assert sorted(set(in_file) - set(in_code)) == [], "keys in config/config.yaml that no model reads"
    assert {k: (in_file[k], v) for k, v in in_code.items() if in_file[k] != v} == {}
