"""Documents on the deployed AWS stack: an upload through API Gateway answers 202 at once; the indexing function
(IndexDocumentFunction), invoked asynchronously by ingest_turn, computes the vectors under its own role; a
file too large for a request goes to S3 through a presigned URL; a lost delivery is found by the sweep."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import unquote, urlsplit

import httpx

from tests.support.lambdas import Result
from tests.support.polling import CLIENT_TIMEOUT, wait_until
from tests.support.scripted_model import Script
from tests.support.sse import answer_text

COFFEE = (
    "# Coffee brewing\n\n## Water\n\nBrew coffee with water between 90 and 96 degrees Celsius. "
    "Boiling water extracts bitter compounds.\n\n## Grind\n\nEspresso needs a fine grind."
)


def _indexings(aws, since: int) -> list:
    return [i for i in aws.stack.lambdas.invocations[since:] if i.function == "IndexDocumentFunction"]


def _searchable_chunks(aws, kb: str, document_id: str) -> int:
    reply = aws.api.get(f"/api/v1/knowledge-bases/{kb}/documents/{document_id}/chunks")
    assert reply.status_code == 200, reply.text
    return len(reply.json()["data"])


def test_an_upload_answers_202_and_the_indexing_function_computes_its_vectors(aws, aws_search, scripted):
    since_calls = len(aws.stack.calls())
    since = len(aws.stack.lambdas.invocations)
    kb = aws.kb()
    added = aws.api.post(f"/api/v1/knowledge-bases/{kb}/documents", json={"title": "Coffee", "content": COFFEE})
    assert added.status_code == 202, added.text
    document = added.json()["data"]
    assert document["status"] == "pending"
    indexed = aws.wait_indexed(kb, document["id"])
    assert indexed["status"] == "indexed", indexed
    assert indexed["embedded_count"] >= 1

    # One asynchronous invocation, by ingest_turn, under its grant; the vectors written by the indexing function.
    invoked = [c for c in aws.stack.calls()[since_calls:] if c.action == "lambda:InvokeFunction"]
    assert [(c.function, c.resource.rsplit(":", 1)[-1]) for c in invoked] == [
        ("IngestTurnFunction", aws.stack.refs["IndexDocumentFunction"])
    ]
    # The invocation is recorded once the function has returned, which may be after the document reads indexed.
    wait_until(lambda: len(_indexings(aws, since)) == 1, timeout=60)
    (indexing,) = _indexings(aws, since)
    assert indexing.event == {
        "ragline": "index",
        "kind": "documents",
        "tenant_id": aws.tenant.id,
        "document_ids": [document["id"]],
        "upload_id": "",
    }
    assert indexing.result is not None
    assert indexing.result.json()["indexed"] == [document["id"]]
    writes = {c.function for c in aws.stack.calls()[since_calls:] if c.action.startswith("es:")}
    assert "IndexDocumentFunction" in writes

    # Searchable by meaning through the workflow once indexed.
    session = aws.session([kb])
    scripted.queue(Script.answer("Between 90 and 96 °C ", '<ref id="c1"/>', "."))
    ids = aws.ask(session, "How hot should the water be for coffee?")
    frames = aws.frames(ids)
    assert frames[-1].type == "complete"
    references = next(f for f in frames if f.type == "references").data["knowledge_references"]
    assert "Coffee" in {r["knowledge_title"] for r in references}
    assert "<kb doc=" in answer_text(frames)

    # ?wait=true waits (within the API's 30 s) for the indexing function: 201, indexed.
    waited = aws.api.post(
        f"/api/v1/knowledge-bases/{kb}/documents?wait=true",
        json={"title": "Tea", "content": "# Tea\n\nGreen tea at 75 °C."},
    )
    assert waited.status_code == 201, waited.text
    assert waited.json()["data"]["status"] == "indexed"


def _xlsx(rows: list[list[object]]) -> bytes:
    from io import BytesIO

    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    for row in rows:
        sheet.append(row)
    out = BytesIO()
    book.save(out)
    return out.getvalue()


def _docx(heading: str, text: str) -> bytes:
    from io import BytesIO

    from docx import Document as WordDocument

    document = WordDocument()
    document.add_heading(heading, 1)
    document.add_paragraph(text)
    out = BytesIO()
    document.save(out)
    return out.getvalue()


def _search(aws, kb: str, query: str) -> list[dict]:
    reply = aws.api.post("/api/v1/knowledge-search", json={"query": query, "knowledge_base_ids": [kb]})
    assert reply.status_code == 200, reply.text
    return list(reply.json()["data"])


def test_pdf_html_word_and_excel_uploads_are_read_on_aws_and_found_by_search(aws, aws_search):
    """The CoreLayer carries PDFium, trafilatura and openpyxl (Word is read with the standard library): each file
    type is read and indexed by the indexing function (a table by ingest_turn, at once) and found in the real
    OpenSearch, through the deployed handlers and their grants."""
    from tests.support.documents import HTML, make_pdf

    since_calls = len(aws.stack.calls())
    kb = aws.kb()
    files = {
        "pdf": (
            "grinder.pdf",
            make_pdf(["Burr grinders crush the beans evenly.", "Blade grinders chop them."]),
            "application/pdf",
        ),
        "html": ("guide.html", HTML.encode(), "text/html"),
        "docx": (
            "roasting.docx",
            _docx("Roasting", "A light roast keeps the acidity and the floral notes of the bean."),
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        ),
        "xlsx": (
            "roasts.xlsx",
            _xlsx([["roast", "origin"], ["Kilimanjaro peaberry", "Tanzania"], ["Sidamo", "Ethiopia"]]),
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        ),
    }
    documents = {}
    for kind, file in files.items():
        added = aws.api.post(f"/api/v1/knowledge-bases/{kb}/documents", files={"file": file})
        # A table becomes a table document, indexed at once (as in the embedded runtime): 201.
        assert added.status_code == (201 if kind == "xlsx" else 202), (kind, added.text)
        documents[kind] = aws.wait_indexed(kb, added.json()["data"]["id"])
        assert documents[kind]["status"] == "indexed", documents[kind]
    assert documents["pdf"]["file_type"] == "pdf"
    assert documents["pdf"]["pages"] == 2
    assert documents["html"]["file_type"] == "html"
    assert documents["docx"]["file_type"] == "docx"

    for kind, query, text in (
        ("pdf", "burr grinders crush beans", "Burr grinders crush the beans evenly."),
        ("html", "water temperature boiling bitter compounds", "between 90 and 96 degrees"),
        ("docx", "light roast acidity floral notes", "A light roast keeps the acidity"),
        ("xlsx", "Kilimanjaro peaberry", "Kilimanjaro peaberry"),
    ):
        hits = _search(aws, kb, query)
        assert hits, kind
        assert hits[0]["knowledge_id"] == documents[kind]["id"], (kind, hits[:2])
        assert text in hits[0]["content"], (kind, hits[0]["content"])
    assert "Copyright" not in " ".join(h["content"] for h in _search(aws, kb, "brewing guide grind"))
    # Read by ingest_turn, indexed by the indexing function, searched in OpenSearch: each under its own role.
    searched = {c.function for c in aws.stack.calls()[since_calls:] if c.action.startswith("es:")}
    assert {"IndexDocumentFunction", "IngestTurnFunction"} <= searched


def test_a_file_whose_reading_outlasts_the_api_answers_202_and_is_read_by_the_indexing_function(
    aws, aws_search, tmp_path
):
    """API Gateway answers 503 after 30 s, and reading a large PDF takes longer: the upload answers 202 once the
    original is kept, and the indexing function reads it. Reading here cannot end before the upload's reply has
    arrived (the gate opens after it), so it outlasts whatever the API waits for: read in ingest_turn, the upload
    would wait for the gate and API Gateway would give up (503)."""
    from tests.support.documents import make_pdf

    pdf = make_pdf(["Burr grinders crush the beans evenly.", "Blade grinders chop them unevenly."], title="Grinders")
    kb = aws.kb()
    with aws.stack.extraction_gate(tmp_path / "gate", "IngestTurnFunction", "IndexDocumentFunction") as gate:
        added = aws.api.post(
            f"/api/v1/knowledge-bases/{kb}/documents", files={"file": ("grinders.pdf", pdf, "application/pdf")}
        )
        assert added.status_code == 202, added.text
        document = added.json()["data"]
        assert (document["status"], document["chunk_count"], document["file_type"]) == ("pending", 0, "pdf")
        # The original is kept before the reply: the file can be downloaded while it is being read.
        original = aws.api.get(f"/api/v1/knowledge/{document['id']}/download")
        assert original.status_code == 200, original.text
        assert original.content == pdf
        # Reading started in the indexing function, and only there; it waits for the gate.
        indexing = aws.stack.refs["IndexDocumentFunction"]
        assert wait_until(gate.started, timeout=120, interval=0.1) == [indexing]
        assert aws.document(kb, document["id"])["status"] == "pending"
        # The same file again is found by its bytes while it is still unread.
        again = aws.api.post(
            f"/api/v1/knowledge-bases/{kb}/documents", files={"file": ("copy.pdf", pdf, "application/pdf")}
        )
        assert again.status_code == 200, again.text
        assert again.json()["data"]["id"] == document["id"]
        gate.open()
        read = aws.wait_indexed(kb, document["id"])
    assert read["status"] == "indexed", read
    assert (read["pages"], read["title"], read["file_type"]) == (2, "Grinders", "pdf")
    assert read["embedded_count"] == _searchable_chunks(aws, kb, document["id"]) >= 1
    hits = _search(aws, kb, "burr grinders crush beans")
    assert hits
    assert hits[0]["knowledge_id"] == document["id"], hits[:2]
    assert gate.started() == [indexing]

    # A file that cannot be read ends failed with the reason (it was accepted before it was read).
    damaged = aws.api.post(
        f"/api/v1/knowledge-bases/{kb}/documents",
        files={"file": ("damaged.pdf", b"%PDF-1.4 not really", "application/pdf")},
    )
    assert damaged.status_code == 202, damaged.text
    failed = aws.wait_indexed(kb, damaged.json()["data"]["id"])
    assert failed["status"] == "failed", failed
    assert "could not be read" in failed["reason"]


def test_a_delivery_that_fails_after_indexing_is_retried_and_does_the_work_once(aws, aws_search):
    """The indexing ran, then Lambda reported a failure: the retried delivery finds the document indexed."""
    failed: list[str] = []

    def fail_first(event, run):
        result = run()
        if not failed:
            failed.append("once")
            return Result(b'{"errorType": "ServiceException", "errorMessage": "lost reply"}', "Unhandled")
        return result

    aws.stack.lambdas.around("IndexDocumentFunction", fail_first)
    since = len(aws.stack.lambdas.invocations)
    kb = aws.kb()
    added = aws.api.post(f"/api/v1/knowledge-bases/{kb}/documents", json={"title": "Coffee", "content": COFFEE})
    assert added.status_code == 202, added.text
    document_id = added.json()["data"]["id"]
    assert aws.wait_indexed(kb, document_id)["status"] == "indexed"
    wait_until(lambda: len(_indexings(aws, since)) == 2, timeout=60)
    first, retry = _indexings(aws, since)
    assert first.error == "ServiceException"
    assert retry.error is None
    assert retry.result is not None
    assert retry.result.json()["indexed"] == [document_id]
    stored = aws.document(kb, document_id)
    assert stored["embedded_count"] == _searchable_chunks(aws, kb, document_id)


def test_a_file_sent_through_a_presigned_upload_url_is_read_and_indexed_by_the_indexing_function(aws, aws_search):
    kb = aws.kb()
    text = COFFEE.encode("utf-8")
    # A type that cannot be read is refused before anything is sent, naming it; a PDF is taken.
    refused = aws.api.post(
        f"/api/v1/knowledge-bases/{kb}/uploads", json={"filename": "guide.odt", "size_bytes": 10_000_000}
    )
    assert refused.status_code == 415, refused.text
    assert refused.json()["error"]["field"] == "filename"
    assert ".odt" in refused.json()["error"]["message"]
    taken = aws.api.post(f"/api/v1/knowledge-bases/{kb}/uploads", json={"filename": "guide.pdf", "size_bytes": 10_000})
    assert taken.status_code == 201, taken.text
    too_large = aws.api.post(f"/api/v1/knowledge-bases/{kb}/uploads", json={"filename": "big.md", "size_bytes": 10**12})
    assert too_large.status_code == 413, too_large.text
    assert too_large.json()["error"]["field"] == "size_bytes"

    created = aws.api.post(
        f"/api/v1/knowledge-bases/{kb}/uploads",
        json={"filename": "../coffee.md", "size_bytes": len(text), "title": "Coffee notes", "tags": ["brew"]},
    )
    assert created.status_code == 201, created.text
    upload = created.json()["data"]
    assert upload["status"] == "awaiting_upload"
    assert upload["filename"] == "coffee.md"
    target = upload["upload"]
    # Completing before the file is there is refused and changes nothing.
    early = aws.api.post(f"/api/v1/knowledge-bases/{kb}/uploads/{upload['id']}/complete")
    assert early.status_code == 409, early.text
    assert early.json()["error"]["field"] == "upload_id"

    # The URL is signed with ingest_turn's credentials: S3 takes the PUT if its role may put that object.
    from tests.support.grants import IamRequest, Policy

    bucket = aws.stack.refs["StateBucket"]
    path = urlsplit(target["url"]).path.lstrip("/")
    key = unquote(path.removeprefix(f"{bucket}/"))  # path-style or virtual-hosted
    assert key.startswith(f"uploads/{aws.tenant.id}/{upload['id']}/")
    role = Policy(aws.stack.resolver.role_statements("IngestTurnFunctionRole"))
    bucket_arn = f"arn:aws:s3:::{bucket}"
    assert role.allows(IamRequest("s3:PutObject", f"{bucket_arn}/{key}"))
    with httpx.Client(timeout=CLIENT_TIMEOUT) as plain:  # what curl -T does: no API key, the URL's signature alone
        sent = plain.request(target["method"], target["url"], content=text, headers=target["headers"])
    assert sent.status_code == 200, sent.text
    done = aws.api.post(f"/api/v1/knowledge-bases/{kb}/uploads/{upload['id']}/complete")
    assert done.status_code == 202, done.text
    assert done.json()["data"]["status"] in ("processing", "accepted")

    def accepted():
        view = aws.api.get(f"/api/v1/knowledge-bases/{kb}/uploads/{upload['id']}").json()["data"]
        return view if view["status"] != "processing" else None

    view = wait_until(accepted, timeout=120, interval=0.2)
    assert view["status"] == "accepted", view
    document = aws.wait_indexed(kb, view["document_id"])
    assert document["status"] == "indexed"
    assert document["title"] == "Coffee notes"
    assert document["tags"] == ["brew"]
    assert document["embedded_count"] == _searchable_chunks(aws, kb, document["id"])
    # The object is gone once its text is in the chunks; a second completion does nothing more.
    objects = aws.stack.client("s3").list_objects_v2(
        Bucket=aws.stack.refs["StateBucket"], Prefix=f"uploads/{aws.tenant.id}/"
    )
    assert objects.get("KeyCount", 0) == 0
    again = aws.api.post(f"/api/v1/knowledge-bases/{kb}/uploads/{upload['id']}/complete")
    assert again.status_code == 202
    assert again.json()["data"]["document_id"] == document["id"]
    listed = aws.api.get(f"/api/v1/knowledge-bases/{kb}/documents").json()["data"]
    assert [d["id"] for d in listed] == [document["id"]]
    # Another tenant cannot see it.
    _, other_key = aws.stack.create_tenant(f"someone-else-{upload['id'][:8]}")
    with httpx.Client(base_url=aws.stack.api_url, headers={"X-API-Key": other_key}, timeout=CLIENT_TIMEOUT) as api:
        assert api.get(f"/api/v1/knowledge-bases/{kb}/uploads/{upload['id']}").status_code == 404


def test_the_sweep_indexes_again_a_document_whose_every_delivery_was_lost(aws, aws_search):
    lost: list[dict] = []

    def lose_first(event, run):
        if not lost:
            lost.append(event)
            return Result(b"null")  # accepted by Lambda, never run (a lost event)
        return run()

    aws.stack.lambdas.around("IndexDocumentFunction", lose_first)
    kb = aws.kb()
    added = aws.api.post(f"/api/v1/knowledge-bases/{kb}/documents", json={"title": "Coffee", "content": COFFEE})
    assert added.status_code == 202, added.text
    document = added.json()["data"]
    wait_until(lambda: lost, timeout=60)
    assert aws.document(kb, document["id"])["status"] == "pending"

    # Not stale yet: the sweep leaves it to its delivery.
    first = aws.stack.run_schedule("SweepFunctionEvery5Minutes")
    assert first.function_error is None, first.payload
    assert document["id"] not in first.json()["documents_rescheduled"]
    # Pending with no progress for longer than an invocation of the indexing function lasts.
    long_ago = (datetime.now(UTC) - timedelta(hours=1)).isoformat(timespec="milliseconds")
    knowledge = aws.stack.table("KnowledgeTable")
    marker = next(
        i
        for i in knowledge.query(KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": "pending"})["Items"]
        if i["doc_id"] == document["id"]
    )
    knowledge.update_item(
        Key={"pk": "pending", "sk": marker["sk"]},
        UpdateExpression="SET updated_at = :u",
        ExpressionAttributeValues={":u": long_ago},
    )
    swept = aws.stack.run_schedule("SweepFunctionEvery5Minutes")
    assert swept.function_error is None, swept.payload
    assert document["id"] in swept.json()["documents_rescheduled"]
    assert aws.wait_indexed(kb, document["id"])["status"] == "indexed"
    sweep_calls = {(c.action, c.allowed) for c in aws.stack.calls() if c.function == "SweepFunction"}
    assert ("lambda:InvokeFunction", True) in sweep_calls
    assert not any(action == "dynamodb:Scan" for action, _ in sweep_calls)


def test_images_are_not_read_on_aws_and_an_image_upload_says_why(aws):
    """The CoreLayer has no room for OCR (OpenCV alone is 84 MiB for aarch64): an image upload answers 415 naming
    the field and the reason, instead of becoming a document without text."""
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64  # refused by type before its pixels are read
    reply = aws.api.post(
        f"/api/v1/knowledge-bases/{aws.kb()}/documents", files={"file": ("scan.png", png, "image/png")}
    )
    assert reply.status_code == 415, reply.text
    error = reply.json()["error"]
    assert error["field"] == "file"
    assert "OCR" in error["message"]


def test_the_indexing_function_enriches_a_document_and_opensearch_finds_it_by_a_generated_question(
    aws, aws_search, scripted
):
    """After the vectors, the indexing function asks the chat model (its key read under its own grant) for
    questions and a summary; the questions' vectors go to OpenSearch as extra documents of the chunk, found
    by a vector search that the passage's own vector does not reach."""
    passage = "Jacquard's loom read punched cards to weave patterns into silk in 1804."
    question = "Which machine first followed a stored program?"
    scripted.questions = Script.answer(f"1. {question}\n2. {question}")
    scripted.summary = Script.answer("A note on the Jacquard loom.")
    try:
        since_calls = len(aws.stack.calls())
        kb = aws.kb()
        added = aws.api.post(
            f"/api/v1/knowledge-bases/{kb}/documents", json={"title": "Looms", "content": f"# Looms\n\n{passage}"}
        )
        assert added.status_code == 202, added.text
        document_id = added.json()["data"]["id"]

        def enriched() -> dict | None:
            data = aws.api.get(f"/api/v1/knowledge/{document_id}").json()["data"]
            return data if data["summary_status"] == "completed" else None

        document = wait_until(enriched, timeout=120, interval=0.2)
        assert document["status"] == "indexed"
        assert document["description"] == "A note on the Jacquard loom."
        chunks = aws.api.get(f"/api/v1/knowledge-bases/{kb}/documents/{document_id}/chunks").json()["data"]
        assert [[q["question"] for q in c["metadata"]["generated_questions"]] for c in chunks] == [[question]]
        found = aws.api.post(
            "/api/v1/knowledge-search", json={"query": question, "knowledge_base_ids": [kb], "vector_threshold": 0.9}
        )
        assert found.status_code == 200, found.text
        assert [r["content"] for r in found.json()["data"]] == [passage]
        # The question documents were written by the indexing function, under its grant.
        writers = {c.function for c in aws.stack.calls()[since_calls:] if c.action.startswith("es:")}
        assert "IndexDocumentFunction" in writers
    finally:
        scripted.questions = Script.answer("")
        scripted.summary = Script.answer("")
