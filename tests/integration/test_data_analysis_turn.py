"""A CSV uploaded as a table, analysed with one checked DuckDB query during a turn."""

from __future__ import annotations

from tests.support.scripted_model import Script

# WeKnora's match_type for a passage the data analysis produced.
DATA_ANALYSIS = 9
CSV = b"department,employee,salary\nSales,Ann,52000\nSales,Bob,48000\nEngineering,Cyd,91000\nEngineering,Dee,87000\n"


def test_table_upload_and_analysis(ragline, scripted):
    kb = ragline.create_kb("hr")
    upload = ragline.client.post(
        f"/api/v1/knowledge-bases/{kb}/documents", files={"file": ("salaries.csv", CSV, "text/csv")}
    )
    assert upload.status_code == 201, upload.text
    chunks = ragline.client.get(f"/api/v1/knowledge-bases/{kb}/documents/{upload.json()['data']['id']}/chunks").json()[
        "data"
    ]
    assert {c["chunk_type"] for c in chunks} == {"table_summary", "table_column"}

    scripted.sql = Script.answer(
        '```sql\nSELECT "department", avg("salary") AS average_salary FROM salaries GROUP BY "department" '
        'ORDER BY "department"\n```'
    )
    session = ragline.session([kb])
    frames = ragline.chat(session, "What is the average salary by department?", data_analysis_enabled=True)
    assert frames[-1].type == "complete", [f.type for f in frames]
    references = next(f for f in frames if f.type == "references").data["knowledge_references"]
    analysis = next(r for r in references if r["match_type"] == DATA_ANALYSIS)
    assert analysis["score"] == 1.0
    assert "89000" in analysis["content"]  # Engineering: (91000 + 87000) / 2
    assert "50000" in analysis["content"]  # Sales
    assert "89000" in scripted.answers[-1].system

    # A hostile query from the model is refused: nothing is added and the turn still completes.
    scripted.sql = Script.answer("```sql\nCOPY salaries TO '/tmp/leak.csv'\n```")
    frames = ragline.chat(session, "What is the average salary by department?", data_analysis_enabled=True)
    assert frames[-1].type == "complete"
    references = next(f for f in frames if f.type == "references").data["knowledge_references"]
    assert all(r["match_type"] != DATA_ANALYSIS for r in references)
