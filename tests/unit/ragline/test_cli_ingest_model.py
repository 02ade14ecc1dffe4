"""`ragline ingest --embedding-model`: the model of a knowledge base the command creates, as the API's
`embedding_model` at creation; a knowledge base keeps the one it has."""

import sqlite3

from typer.testing import CliRunner

from ragline.cli import app

CHINESE = "# 咖啡\n\n冲泡咖啡的水温应在九十到九十六摄氏度之间，水温过高会让咖啡变苦。"


def knowledge_bases(data) -> dict[str, tuple[str, int, str]]:
    db = sqlite3.connect(data / "ragline.db")
    try:
        rows = db.execute("SELECT name, embedding_model, embedding_model_auto, language FROM knowledge_bases")
        return {name: (model, auto, language) for name, model, auto, language in rows}
    finally:
        db.close()


def test_ingest_creates_a_knowledge_base_with_the_chosen_model_and_detection_leaves_it(tmp_path, monkeypatch):
    data = tmp_path / "data"
    monkeypatch.setenv("RAGLINE_DATA_DIR", str(data))
    monkeypatch.setenv("RAGLINE_LOG_LEVEL", "ERROR")
    doc = tmp_path / "coffee.md"
    doc.write_text(CHINESE, encoding="utf-8")
    runner = CliRunner()

    chosen = runner.invoke(app, ["ingest", str(doc), "--kb", "zh-minilm", "--embedding-model", "minilm"])
    assert chosen.exit_code == 0, chosen.output
    # Chinese text would make an automatic knowledge base take e5; the chosen model stays.
    assert knowledge_bases(data)["zh-minilm"] == ("local:all-MiniLM-L6-v2-int8", 0, "zh")

    other = runner.invoke(app, ["ingest", str(doc), "--kb", "zh-minilm", "--embedding-model", "e5"])
    assert other.exit_code == 2
    assert "--embedding-model" in other.output
    assert "keeps one model" in other.output
    assert knowledge_bases(data)["zh-minilm"][0] == "local:all-MiniLM-L6-v2-int8"

    unknown = runner.invoke(app, ["ingest", str(doc), "--kb", "new", "--embedding-model", "nope"])
    assert unknown.exit_code == 2
    assert "unknown embedding model 'nope'" in unknown.output
    assert "minilm" in unknown.output
    assert "new" not in knowledge_bases(data)
