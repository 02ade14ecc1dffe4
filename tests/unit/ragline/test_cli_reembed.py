"""Upgrading the models: a knowledge base keeps the model it was embedded with when a better one is installed
(`make install` fetched bge-small-en), new ones take the new default, and `ragline index --reembed` moves an
automatic knowledge base to today's model and re-embeds it."""

import sqlite3

import pytest
from typer.testing import CliRunner

from ragline.cli import app
from ragline.ingest.language import BGE_EN_MODEL, MINILM_MODEL
from ragline.models.onnx_embedder import BGE_SMALL_EN, MODELS_DIR_ENV, find_model

ENGLISH = (
    "# Coffee\n\nBrew coffee with water between ninety and ninety-six degrees Celsius; hotter water makes it bitter."
)
MORE = "# Tea\n\nGreen tea is brewed at seventy to eighty degrees Celsius for two to three minutes."


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
    if find_model(BGE_SMALL_EN) is None:
        pytest.skip("bge-small-en was not fetched (make install without Maven)")
    data = tmp_path / "data"
    monkeypatch.setenv("RAGLINE_DATA_DIR", str(data))
    monkeypatch.setenv("RAGLINE_LOG_LEVEL", "ERROR")
    coffee, tea = tmp_path / "coffee.md", tmp_path / "tea.md"
    coffee.write_text(ENGLISH, encoding="utf-8")
    tea.write_text(MORE, encoding="utf-8")
    runner = CliRunner()

    # Before the upgrade: no Maven models, so detection gives the English knowledge base MiniLM.
    monkeypatch.setenv(MODELS_DIR_ENV, str(tmp_path / "no-models"))
    before = runner.invoke(app, ["ingest", str(coffee), "--kb", "old"])
    assert before.exit_code == 0, before.output
    assert knowledge_bases(data)["old"] == (MINILM_MODEL, 1, "en")

    # After: the old knowledge base keeps MiniLM (more English changes nothing); a new one takes bge-small-en.
    monkeypatch.delenv(MODELS_DIR_ENV)
    more = runner.invoke(app, ["ingest", str(tea), "--kb", "old"])
    assert more.exit_code == 0, more.output
    new = runner.invoke(app, ["ingest", str(tea), "--kb", "new"])
    assert new.exit_code == 0, new.output
    bases = knowledge_bases(data)
    assert bases["old"] == (MINILM_MODEL, 1, "en")
    assert bases["new"] == (BGE_EN_MODEL, 1, "en")
    assert document_models(data, "old") == {(MINILM_MODEL, "indexed")}

    # Re-embedding is explicit: a chosen model stays, the automatic one moves and every document is re-embedded.
    chosen = runner.invoke(app, ["ingest", str(tea), "--kb", "chosen", "--embedding-model", "minilm"])
    assert chosen.exit_code == 0, chosen.output
    reembed = runner.invoke(app, ["index", "--reembed"])
    assert reembed.exit_code == 0, reembed.output
    assert f"old: {MINILM_MODEL} → {BGE_EN_MODEL}, re-embedding" in reembed.output
    assert "chosen: keeps" in reembed.output
    bases = knowledge_bases(data)
    assert bases["old"] == (BGE_EN_MODEL, 1, "en")
    assert bases["chosen"][0] == MINILM_MODEL
    assert document_models(data, "old") == {(BGE_EN_MODEL, "indexed")}
    found = runner.invoke(app, ["search", "how hot should coffee water be", "--kb", "old", "--retrievers", "vector"])
    assert found.exit_code == 0, found.output
    assert "ninety" in found.output
