"""The chat page in headless Chromium against the embedded server and the scripted model.

Each scenario saves a screenshot under test-output/screenshots/. The page is driven like a user would:
the API key typed into its prompt, questions typed into the question box, buttons clicked.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import CHROMIUM, WAIT_MS, screenshot
from tests.support.documents import DRINKS as DOCS
from tests.support.polling import CLIENT_TIMEOUT, wait_until
from tests.support.scripted_model import Piece, Script

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=f"{CHROMIUM} is missing: `make test` installs Debian's chromium (apt-get install chromium)",
)

QUESTION = "What water temperature should I use for coffee?"
WORDS = [f"word{i} " for i in range(30)]
# The blank line that ends a server-sent event (sse-starlette writes CRLF line ends).
SSE_FRAME_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")

LAST_TURN = """() => {
  const turns = document.querySelectorAll('.turn');
  const turn = turns[turns.length - 1];
  if (!turn) return null;
  const refs = turn.querySelector('.references');
  return {
    count: turns.length,
    state: turn.dataset.state,
    messageId: turn.dataset.messageId,
    refs: Boolean(refs && !refs.hidden),
    text: turn.querySelector('.answer').textContent,
    raw: turn.raglineTurn.state.answer,
    lastSeq: turn.raglineTurn.state.lastSeq,
    completed: turn.raglineTurn.state.completed,
    resumedFrom: turn.dataset.resumedFrom ?? null,
    referencesAt: turn.dataset.referencesAt ?? null,
    answerAt: turn.dataset.answerAt ?? null,
  };
}"""


def last_turn(page: Any) -> dict[str, Any] | None:
    return page.evaluate(LAST_TURN)  # type: ignore[no-any-return]


def enter_key(page: Any, key: str) -> None:
    page.wait_for_selector("#key-dialog[open]")
    page.fill("#key-input", key)
    page.click("#key-form button[type=submit]")
    page.wait_for_function("() => !document.getElementById('key-dialog').open")


def open_chat(page: Any, url: str, key: str) -> None:
    page.goto(f"{url}/")
    enter_key(page, key)
    page.wait_for_selector("#session-list li")


def ask(page: Any, question: str) -> None:
    page.fill("#question", question)
    page.click("#ask")


def session_of(page: Any) -> str:
    match = wait_until(lambda: re.search(r"^#/s/([^/]+)$", page.evaluate("location.hash")))
    return match.group(1)


def assert_no_page_errors(page: Any) -> None:
    assert not [e for e in page.errors if e.startswith("pageerror")], page.errors


def stored_assistant(ragline: Any, session: str) -> dict[str, Any]:
    def completed() -> dict[str, Any] | None:
        assistant = next((m for m in ragline.messages(session) if m["role"] == "assistant"), None)
        return assistant if assistant and assistant["is_completed"] else None

    return wait_until(completed)  # type: ignore[no-any-return]


# (1) ask → progress, references before the answer, Markdown, chips that open the cited chunk -----------------
def test_ask_streams_references_before_the_answer_and_chips_open_the_cited_chunk(ragline, scripted, page, monkeypatch):
    kb = ragline.create_kb("drinks", DOCS)
    monkeypatch.setattr(scripted, "title", Script.answer("Coffee water temperature"))
    scripted.queue(
        Script(
            [
                Piece(reasoning="The user asks about water temperature. ", delay=0.3),
                Piece(content="Use water between **90 and 96 °C**", delay=0.8),
                Piece(content=' <ref id="c1"/>'),
                Piece(content=".\n\n- never boiling water\n- then `taste` it", delay=0.2),
            ]
        )
    )
    open_chat(page, ragline.url, ragline.key)
    page.wait_for_selector(f'#kb-choice input[value="{kb}"]:checked')
    ask(page, QUESTION)

    # Poll the DOM while the turn streams: the references panel shows before any answer text does.
    seen: list[dict[str, Any]] = []

    def finished() -> bool:
        state = last_turn(page)
        if state is not None:
            seen.append(state)
        return bool(state and state["state"] != "streaming")

    wait_until(finished)
    assert seen[-1]["state"] == "complete", seen[-1]
    assert any(s["refs"] and not s["text"].strip() for s in seen), "the references never showed alone"
    assert all(s["refs"] for s in seen if s["text"].strip()), "answer text showed before the references"
    final = seen[-1]
    assert float(final["referencesAt"]) < float(final["answerAt"])

    # Progress windows with their counts, the reasoning block, Markdown, the generated title.
    search = page.locator('.turn .tool[data-tool="knowledge_search"]')
    assert "Knowledge base searched" in search.inner_text()
    assert re.search(r"\d+ passages? from \d+ documents? · \d+ candidates?", search.inner_text())
    understood = page.locator('.turn .tool[data-tool="query_understand"]').inner_text()
    assert "Question understood" in understood
    assert "knowledge-base search" in understood  # the intent kb_search, in the page's words
    reasoning = page.locator(".turn details.reasoning")
    assert "water temperature" in (reasoning.locator(".reasoning-text").text_content() or "")
    assert reasoning.get_attribute("open") is None  # collapsed once the answer came
    reasoning.locator("summary").click()
    assert "water temperature" in reasoning.locator(".reasoning-text").inner_text()
    assert page.locator(".turn .answer strong").inner_text() == "90 and 96 °C"
    assert page.locator(".turn .answer li").count() == 2
    assert page.locator(".turn .answer code").inner_text() == "taste"
    answer_text = page.locator(".turn .answer").inner_text()
    assert "<kb" not in answer_text
    assert "<ref" not in answer_text
    page.wait_for_function(
        "() => [...document.querySelectorAll('#session-list .session-name')]"
        ".some((el) => el.textContent === 'Coffee water temperature')"
    )
    assert page.locator("#session-title").inner_text() == "Coffee water temperature"

    # The page's answer is the stored one, citation tag included; its chip opens that chunk.
    session = session_of(page)
    assistant = stored_assistant(ragline, session)
    assert final["raw"] == assistant["content"]
    (doc, chunk_id, kb_id) = re.findall(r'<kb doc="([^"]*)" chunk_id="([^"]*)" kb_id="([^"]*)" />', final["raw"])[0]
    assert (doc, kb_id) == ("Coffee brewing", kb)
    assert chunk_id in [r["id"] for r in assistant["knowledge_references"]]
    screenshot(page, "1a-ask-progress-references-answer")
    chip = page.locator(".turn .answer button.cite")
    assert chip.count() == 1
    assert chip.get_attribute("data-chunk-id") == chunk_id
    assert "Coffee brewing" in chip.inner_text()
    chip.click()
    page.wait_for_selector('#source-dialog[open][data-state="loaded"]')
    chunk = ragline.client.get(f"/api/v1/chunks/by-id/{chunk_id}").json()["data"]
    assert page.locator("#source-dialog").get_attribute("data-chunk-id") == chunk_id
    assert page.locator("#source-text").inner_text() == chunk["content"]
    assert "90 and 96 degrees" in chunk["content"]
    assert page.locator("#source-title").inner_text() == "Coffee brewing"
    screenshot(page, "1b-citation-opens-source-viewer")

    # A reference in the panel (collapsed until opened) opens its chunk too.
    page.click("#source-close")
    page.click(".turn .references .ref-toggle")
    page.locator(f'.turn .references button.ref[data-chunk-id="{chunk_id}"]').click()
    page.wait_for_selector(f'#source-dialog[open][data-chunk-id="{chunk_id}"][data-state="loaded"]')
    assert_no_page_errors(page)


# (2) reload in the middle of an answer → the answer resumes and ends with the stored text -------------------
def test_reload_mid_answer_resumes_with_last_event_id_and_ends_with_the_stored_text(ragline, scripted, page):
    kb = ragline.create_kb("drinks", DOCS)
    pieces = [Piece(content="**Water** ", delay=0.1), Piece(content='<ref id="c1"/> ', delay=0.1)]
    pieces += [Piece(content=word, delay=0.1) for word in WORDS]
    scripted.queue(Script(pieces))
    open_chat(page, ragline.url, ragline.key)
    page.wait_for_selector(f'#kb-choice input[value="{kb}"]')
    ask(page, QUESTION)
    session = session_of(page)
    before = wait_until(lambda: (s := last_turn(page)) and "word4" in s["raw"] and s)
    assert before["state"] == "streaming"
    # Another tab has no saved state for the turn: it replays the running turn from its first event.
    other = page.context.new_page()
    other.goto(f"{ragline.url}/#/s/{session}")

    page.reload()
    after = wait_until(lambda: (s := last_turn(page)) and s["state"] != "streaming" and s)
    assert after["state"] == "complete", after
    assert after["count"] == 1
    # Resumed after the last frame the page had applied (Last-Event-ID), not replayed from the start.
    assert after["resumedFrom"] is not None
    assert int(after["resumedFrom"]) >= before["lastSeq"]
    assistant = stored_assistant(ragline, session)
    assert after["raw"] == assistant["content"]
    assert assistant["content"].startswith("**Water** <kb doc=")
    assert assistant["content"].endswith("".join(WORDS))
    assert after["text"].endswith("".join(WORDS).strip())
    assert page.locator(".turn .answer button.cite").count() == 1
    assert not page.locator(".turn .references").is_hidden()
    screenshot(page, "2-reload-mid-answer-resumed")
    replayed = wait_until(lambda: (s := last_turn(other)) and s["state"] != "streaming" and s)
    assert replayed["state"] == "complete"
    assert replayed["resumedFrom"] is None
    assert replayed["raw"] == assistant["content"]
    other.close()
    assert_no_page_errors(page)


# (3) stop mid-answer → the partial answer stays, the stop shows, no complete -----------------------------------
def test_stop_keeps_the_partial_answer_and_shows_the_stop(ragline, scripted, page):
    ragline.create_kb("drinks", DOCS)
    scripted.queue(Script.answer(*WORDS, delay=0.1))
    open_chat(page, ragline.url, ragline.key)
    ask(page, QUESTION)
    session = session_of(page)
    wait_until(lambda: (s := last_turn(page)) and "word3" in s["raw"])
    page.wait_for_selector("#stop:not([hidden])")
    page.click("#stop")

    stopped = wait_until(lambda: (s := last_turn(page)) and s["state"] != "streaming" and s)
    assert stopped["state"] == "stopped", stopped
    assert not stopped["completed"]
    partial = stopped["raw"]
    assert partial
    assert partial != "".join(WORDS)
    assert "".join(WORDS).startswith(partial)
    assert stopped["text"].strip() == partial.strip()
    marker = page.locator(".turn .notice.stopped")
    assert marker.is_visible()
    assert "Stopped" in marker.inner_text()
    assert page.locator("#stop").is_hidden()
    assert page.locator("#ask").is_enabled()
    assistant = stored_assistant(ragline, session)
    assert assistant["content"] == partial
    assert assistant["stop_reason"] == "stopped"
    frames = ragline.events(session, assistant["id"])
    assert frames[-1].type == "stop"
    assert "complete" not in [f.type for f in frames]
    # The generation was abandoned (the model's stream closed before its end), and nothing more reaches the page.
    wait_until(lambda: scripted.answers[-1].closed_early)
    assert not scripted.answers[-1].completed
    assert last_turn(page)["raw"] == partial  # type: ignore[index]
    screenshot(page, "3-stop-partial-answer")

    # After a reload the stored turn still shows the partial answer and the stop.
    page.reload()
    page.wait_for_selector('.turn[data-state="stopped"] .notice.stopped:not([hidden])')
    assert last_turn(page)["raw"] == partial  # type: ignore[index]
    assert_no_page_errors(page)


# (4) the knowledge-base page: create, upload with progress, documents, chunks ---------------------------------
def test_knowledge_base_page_creates_uploads_and_lists_documents_and_chunks(ragline, page, tmp_path):
    notes = tmp_path / "field-notes.md"
    notes.write_text(
        "# Field notes\n\n## Boilers\n\nThe boiler runs at 1.2 bar. Descale it every three months.\n\n"
        "## Grinders\n\nBurr grinders keep the grind even; blade grinders do not.\n"
    )
    open_chat(page, ragline.url, ragline.key)
    page.click('[data-nav="kb"]')
    page.wait_for_selector("#kb-create")
    page.fill("#kb-name", "handbook")
    page.fill("#kb-description", "Machines and maintenance")
    page.click("#kb-create button[type=submit]")
    page.wait_for_selector("#dropzone")
    kb_id = wait_until(lambda: re.search(r"^#/kb/([^/]+)$", page.evaluate("location.hash"))).group(1)
    bases = ragline.client.get("/api/v1/knowledge-bases").json()["data"]
    assert [(b["id"], b["name"]) for b in bases] == [(kb_id, "handbook")]
    assert "handbook" in page.locator("#kb-list").inner_text()

    # Record each state the upload row goes through.
    page.evaluate(
        """() => {
          window.uploadStates = [];
          new MutationObserver(() => {
            const row = document.querySelector('.upload-row');
            const state = row && row.dataset.state;
            if (state && window.uploadStates[window.uploadStates.length - 1] !== state) window.uploadStates.push(state);
          }).observe(document.getElementById('kb-detail'), {subtree: true, childList: true, attributes: true});
        }"""
    )
    # Choosing the files starts their upload.
    page.set_input_files("#kb-files", str(notes))
    page.wait_for_selector('.upload-row[data-state="done"]')
    documents = ragline.client.get(f"/api/v1/knowledge-bases/{kb_id}/documents").json()["data"]
    assert [d["filename"] for d in documents] == ["field-notes.md"]
    chunk_count = documents[0]["chunk_count"]
    assert chunk_count >= 1
    assert page.locator(".upload-row .upload-status").inner_text() == f"✓ {chunk_count} chunk{'s' * (chunk_count != 1)}"
    page.wait_for_function("() => document.getElementById('kb-list').textContent.includes('1 document')")
    assert page.locator(".upload-row progress").get_attribute("value") == "100"
    assert page.evaluate("window.uploadStates") == ["uploading", "reading", "done"]

    row = page.locator(f'#documents tr[data-document-id="{documents[0]["id"]}"]')
    row.wait_for()
    assert "field-notes.md" in row.inner_text()
    # The document's indexing status, as GET reports it: the table follows it until the vectors are in.
    status = row.locator("td.doc-status")
    assert status.get_attribute("data-status") in ("pending", "indexed")
    page.wait_for_function(
        """(id) => {
          const cell = document.querySelector(`#documents tr[data-document-id="${id}"] td.doc-status`);
          return cell && cell.dataset.status === 'indexed';
        }""",
        arg=documents[0]["id"],
        timeout=2 * WAIT_MS,
    )
    indexed = ragline.client.get(f"/api/v1/knowledge-bases/{kb_id}/documents/{documents[0]['id']}").json()["data"]
    assert indexed["status"] == "indexed"
    assert status.inner_text() == "indexed"
    row.locator("button.link").click()
    page.wait_for_selector("#chunks .chunk")
    chunks = ragline.client.get(f"/api/v1/knowledge-bases/{kb_id}/documents/{documents[0]['id']}/chunks").json()["data"]
    shown = page.locator("#chunks .chunk")
    assert shown.count() == len(chunks)
    assert [shown.nth(i).locator(".chunk-text").inner_text() for i in range(shown.count())] == [
        c["content"] for c in chunks
    ]
    assert any("Descale it every three months" in c["content"] for c in chunks)
    screenshot(page, "4-knowledge-base-documents-chunks")
    assert_no_page_errors(page)


# (5) the API key: asked once, kept in localStorage, never in the page; a CLI-created tenant uses the page ----
def _tenant_from_cli(data_dir: Path, name: str) -> str:
    """`ragline tenant create NAME` against the server's data directory; its last line is the key."""
    env = {**os.environ, "RAGLINE_DATA_DIR": str(data_dir), "RAGLINE_LOG_LEVEL": "ERROR"}
    cli = Path(sys.executable).with_name("ragline")
    done = subprocess.run(
        [str(cli), "tenant", "create", name], env=env, capture_output=True, text=True, timeout=120, check=True
    )
    key = done.stdout.strip().splitlines()[-1].strip()
    assert key.startswith("rl-"), done.stdout
    return key


def test_the_key_is_asked_once_kept_in_local_storage_and_never_in_the_page(ragline, page):
    kb = ragline.create_kb("drinks", DOCS)
    ragline.client.post("/api/v1/sessions", json={"knowledge_base_ids": [kb], "title": "Tenant A's session"})
    key = _tenant_from_cli(ragline.container.settings.data_dir, "browser-tenant")
    urls: list[str] = []
    page.on("request", lambda request: urls.append(request.url))

    page.goto(f"{ragline.url}/")
    assert page.locator("#key-dialog").get_attribute("open") is not None
    screenshot(page, "5a-api-key-prompt")
    enter_key(page, key)
    page.wait_for_selector("#session-list li")
    assert page.evaluate("localStorage.getItem('ragline.apiKey')") == key
    # The new tenant sees none of tenant A's sessions or knowledge bases.
    assert page.locator("#session-list").inner_text() == "No sessions yet."
    assert "drinks" not in page.locator("#kb-choice").inner_text()

    # Asked once: a reload (and a new tab) finds the stored key.
    page.reload()
    page.wait_for_selector("#session-list li")
    assert page.locator("#key-dialog").get_attribute("open") is None
    other = page.context.new_page()
    other.goto(f"{ragline.url}/#/kb")
    other.wait_for_selector("#kb-list li")
    assert other.locator("#key-dialog").get_attribute("open") is None
    other.close()

    # The page works with the CLI tenant's key: its own knowledge base, a question, an answer.
    tenant = httpx.Client(base_url=ragline.url, headers={"X-API-Key": key}, timeout=CLIENT_TIMEOUT)
    own_kb = tenant.post("/api/v1/knowledge-bases", json={"name": "own"}).json()["data"]["id"]
    tenant.post(f"/api/v1/knowledge-bases/{own_kb}/documents", json={"title": "Tea", "content": DOCS["Tea basics"]})
    page.reload()
    page.wait_for_selector(f'#kb-choice input[value="{own_kb}"]:checked')
    ask(page, "How hot should green tea water be?")
    done = wait_until(lambda: (s := last_turn(page)) and s["state"] != "streaming" and s)
    assert done["state"] == "complete"
    assert done["raw"] == "The answer is 42."
    sessions = tenant.get("/api/v1/sessions").json()["data"]
    assert len(sessions) == 1
    assert session_of(page) == sessions[0]["id"]
    screenshot(page, "5b-api-key-stored-tenant-answer")

    # Nothing secret in what the server sends for the page, and no key in any URL the page requested.
    anonymous = httpx.Client(base_url=ragline.url, timeout=CLIENT_TIMEOUT)
    sources = [anonymous.get("/")]
    web = Path(__file__).parents[2] / WEB
    sources += [anonymous.get(f"/static/{p.relative_to(web).as_posix()}") for p in web.rglob("*") if p.is_file()]
    for reply in sources:
        assert reply.status_code == 200, reply.url
        assert key not in reply.text, reply.url
        assert ragline.key not in reply.text, reply.url
        assert not re.search(r"rl-[A-Za-z0-9_-]{20,}", reply.text), reply.url
    assert key not in page.content()
    assert urls
    assert not [u for u in urls if key in u]
    tenant.close()
    anonymous.close()
    assert_no_page_errors(page)


# (6) errors in place, the truncation notice, the fallback badge ---------------------------------------------
def test_errors_truncation_and_fallback_show_in_place(ragline, scripted, page):
    kb = ragline.create_kb("drinks", DOCS)
    empty = ragline.create_kb("empty")
    scripted.queue(Script(status=500), Script(status=500), Script(status=500))
    open_chat(page, ragline.url, ragline.key)
    page.wait_for_selector(f'#kb-choice input[value="{empty}"]')
    page.uncheck(f'#kb-choice input[value="{empty}"]')
    ask(page, "What grind does espresso need?")
    failed = wait_until(lambda: (s := last_turn(page)) and s["state"] != "streaming" and s)
    assert failed["state"] == "error"
    error = page.locator(".turn .notice.error")
    assert error.is_visible()
    assert "chat_completion_stream" in error.inner_text()
    assert "model_call_failed" in error.inner_text()
    assert page.locator("#ask").is_enabled()

    scripted.queue(Script.answer("A fine ", "grind", finish_reason="length"))
    ask(page, "And for a French press?")
    page.wait_for_function("() => document.querySelectorAll('.turn').length === 2")
    cut = wait_until(lambda: (s := last_turn(page)) and s["state"] != "streaming" and s)
    assert cut["state"] == "complete"
    assert cut["raw"] == "A fine grind"
    notice = page.locator(".turn").nth(1).locator(".notice.truncated")
    assert notice.is_visible()
    assert "output limit" in notice.inner_text()
    assert page.locator(".turn").nth(0).locator(".notice.error").is_visible()  # the first error stays in place
    screenshot(page, "6a-error-and-truncation-in-place")

    # A session on the empty knowledge base: nothing found, the fallback answer is flagged.
    page.click("#new-session")
    page.wait_for_selector(f'#kb-choice input[value="{empty}"]')
    page.uncheck(f'#kb-choice input[value="{kb}"]')
    scripted.queue(Script.answer("I could not find this ", "in the knowledge base."))
    ask(page, "What is the capital of Mongolia?")
    fallback = wait_until(lambda: (s := last_turn(page)) and s["state"] != "streaming" and s)
    assert fallback["state"] == "complete"
    assert not fallback["refs"]
    badge = page.locator(".turn .badge.fallback")
    assert badge.is_visible()
    assert badge.inner_text() == "Fallback answer"
    assert "0 passages" in page.locator('.turn .tool[data-tool="knowledge_search"]').inner_text()
    session = session_of(page)
    assert ragline.client.get(f"/api/v1/sessions/{session}").json()["data"]["knowledge_base_ids"] == [empty]
    screenshot(page, "6b-fallback-badge")
    assert_no_page_errors(page)


# (7) the AWS shape: the JSON API and the streams on other origins, with template.yaml's CORS ----------------
def test_the_page_works_against_separate_api_and_stream_origins_with_the_template_cors(ragline, scripted, page):
    from starlette.middleware.cors import CORSMiddleware

    from ragline.server.embedded import build_embedded_app
    from ragline.serverless.template_tables import load_template
    from tests.support.aws import TEMPLATE_PATH
    from tests.support.servers import ServerThread

    template = load_template(TEMPLATE_PATH)
    http_api = template["Resources"]["HttpApi"]["Properties"]["CorsConfiguration"]
    function_url = template["Resources"]["StreamReaderFunction"]["Properties"]["FunctionUrlConfig"]["Cors"]
    assert http_api["AllowOrigins"] == function_url["AllowOrigins"] == {"Ref": "CorsAllowOrigin"}
    seen: dict[str, list[tuple[str, str, str | None]]] = {"api": [], "stream": []}

    def recorded(app: Any, log: list[tuple[str, str, str | None]]) -> Any:
        async def middleware(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                headers = dict(scope["headers"])
                last = headers.get(b"last-event-id")
                log.append((scope["method"], scope["path"], last.decode() if last else None))
            await app(scope, receive, send)

        return middleware

    def ends_early(app: Any, frames: int) -> Any:
        """stream_reader ends each response before its Lambda time limit; here: after a few frames."""

        async def middleware(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http" or scope["method"] != "GET" or not scope["path"].endswith("/events"):
                await app(scope, receive, send)
                return
            sent, ended = 0, False

            async def limited(message: dict[str, Any]) -> None:
                # Frames are counted in the bytes, not per body message: a busy server coalesces a backlog
                # (a replay after a reconnect) into one message, and the cut must still come after N frames.
                nonlocal sent, ended
                if ended:
                    return
                if message["type"] == "http.response.body" and message.get("body"):
                    body = message["body"]
                    for end in SSE_FRAME_END.finditer(body):
                        sent += 1
                        if sent >= frames:
                            ended = True
                            message = {**message, "body": body[: end.end()], "more_body": False}
                            break
                await send(message)

            await app(scope, receive, limited)

        return middleware

    def cross_origin(
        cors: dict[str, Any], log: list[tuple[str, str, str | None]], frames_per_response: int = 0
    ) -> ServerThread:
        # As deployed with CorsAllowOrigin set to the page's origin: the headers and methods are the template's.
        app = CORSMiddleware(
            build_embedded_app(ragline.container),
            allow_origins=[ragline.url],
            allow_headers=cors["AllowHeaders"],
            allow_methods=cors["AllowMethods"],
            max_age=cors["MaxAge"],
        )
        return ServerThread(recorded(ends_early(app, frames_per_response) if frames_per_response else app, log)).start()

    api_server = cross_origin(http_api, seen["api"])
    stream_server = cross_origin(function_url, seen["stream"], frames_per_response=6)
    try:
        kb = ragline.create_kb("drinks", DOCS)
        scripted.queue(Script.answer(*WORDS, delay=0.1))
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        open_chat(page, ragline.url, ragline.key)
        page.click("#settings-button")
        page.fill("#api-base", api_server.url + "/")
        page.fill("#stream-base", stream_server.url)
        page.click("#settings-form button[type=submit]")
        page.wait_for_selector(f'#kb-choice input[value="{kb}"]')
        assert page.evaluate("localStorage.getItem('ragline.apiBase')") == api_server.url
        assert page.evaluate("localStorage.getItem('ragline.streamBase')") == stream_server.url

        ask(page, QUESTION)
        session = session_of(page)
        wait_until(lambda: (s := last_turn(page)) and "word4" in s["raw"])
        page.reload()
        done = wait_until(lambda: (s := last_turn(page)) and s["state"] != "streaming" and s)
        assert done["state"] == "complete", done
        assert done["raw"] == stored_assistant(ragline, session)["content"] == "".join(WORDS)
        screenshot(page, "7-cross-origin-api-and-stream")
    finally:
        api_server.stop()
        stream_server.stop()

    message = done["messageId"]
    events = f"/api/v1/sessions/{session}/messages/{message}/events"
    # Questions went to the API origin, streams to the stream origin; every cross-origin call got through its
    # preflight. Each response ended early and the page went on with Last-Event-ID, losing and repeating
    # nothing (the text is the stored one); after the reload it resumed from the id it had saved.
    api_calls = [(method, path) for method, path, _ in seen["api"]]
    assert ("OPTIONS", f"/api/v1/sessions/{session}/questions") in api_calls
    assert ("POST", f"/api/v1/sessions/{session}/questions") in api_calls
    assert ("GET", f"/api/v1/sessions/{session}/messages") in api_calls
    assert not [path for _, path in api_calls if path.endswith("/events")]
    stream_reads = [last for method, path, last in seen["stream"] if method == "GET" and path == events]
    assert stream_reads[0] is None
    # The first read, at least one cut that the page resumed, and the reload's resume. How many cuts depends on how
    # many frames the answer became: a busy machine batches more words per frame (a clean clone's .ci/run with
    # both cores held by a busy loop saw [None, '5', '26']), so the count is a floor, not a figure.
    assert len(stream_reads) >= 3
    resumed_from = [int(last) for last in stream_reads[1:] if last is not None]
    assert len(resumed_from) == len(stream_reads) - 1
    assert resumed_from == sorted(resumed_from)
    assert done["resumedFrom"] in stream_reads
    assert ("OPTIONS", events, None) in seen["stream"]
    assert {path for _, path, _ in seen["stream"]} == {events}
    own_origin = [u for u in requests if u.startswith(ragline.url + "/api/")]
    assert not [u for u in own_origin if "/questions" in u or "/events" in u]
    assert_no_page_errors(page)


WEB = Path("layers/core/ragline/server/web")
