"""WeKnora's own web app, built and unchanged (``../shared/weknora-web/dist``), on ragline in headless Chromium.

``ragline serve --web-app DIST`` (a real process, real uvicorn) serves the app at ``/`` and the API under ``/api/`` on
the same origin, as WeKnora's nginx does. The test does what a new WeKnora user does: register, sign in, create a
knowledge base with the app's defaults, upload a Markdown file and a PDF and see them parsed, ask a question, see the
streamed answer with its references and citation, reload and find the conversation, rename and delete the session,
sign out. It fails on any 4xx/5xx in the app's network log the user did not provoke and on any uncaught page error,
and saves screenshots (zh-CN, the app's default, and en-US) under test-output/screenshots/.

Answers are ragline's extractive answers (no chat model configured): what a fresh ``ragline serve`` gives.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import SCREENSHOTS, WAIT_MS
from tests.support.documents import DRINKS, make_pdf
from tests.support.serverless import OpenSearchTarget, deployed_stack
from tests.support.servers import ServerThread, free_port
from tests.support.web_front import web_app_front

ROOT = Path(__file__).resolve().parents[2]
WEB_APP = Path(os.environ.get("RAGLINE_WEKNORA_WEB", ROOT.parent / "shared" / "weknora-web")) / "dist"
EMAIL, PASSWORD = "ada@example.com", "Passw0rd2024"
LOG_OUT = "Logout"  # auth.logout in en-US
QUESTION = "What water temperature should I use for coffee?"
ANSWER = "Brew coffee with water between 90 and 96 degrees Celsius."
# The one error reply the app asks for on every load: WeKnora's standard edition answers its probe for a lite
# (single-user) install with 403, and so does ragline (README: "auto-setup").
EXPECTED_ERRORS = {("POST", "/api/v1/auth/auto-setup", 403)}


def _web_app() -> Path:
    if not (WEB_APP / "index.html").is_file():
        reason = f"{WEB_APP} is absent: build WeKnora's web app there (README: WeKnora's web app)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return WEB_APP


@dataclass
class NetworkLog:
    """Every API reply the app got, in order, and the parse status of each document it last read."""

    calls: list[tuple[str, str, int]] = field(default_factory=list)
    parse_status: dict[str, str] = field(default_factory=dict)

    def record(self, response: Any) -> None:
        url: str = response.url
        if "/api/" not in url:
            return
        path = "/api/" + url.split("/api/", 1)[1]
        self.calls.append((response.request.method, path, response.status))
        if response.status == 200 and ("/knowledge?" in path or "/knowledge/batch" in path):
            try:
                data = json.loads(response.body()).get("data") or []
            except (ValueError, AttributeError):
                return
            for record in data if isinstance(data, list) else []:
                self.parse_status[record["file_name"] or record["title"]] = record["parse_status"]

    def errors(self) -> list[tuple[str, str, int]]:
        """Error replies the user did not provoke. Signing out revokes the token: a request of the page's still in
        flight, or sent with the old token after the logout's reply, is answered 401, as it must be (a clean clone's
        loaded .ci/run saw the app's suggested-questions request land just after the logout)."""
        found: list[tuple[str, str, int]] = []
        signed_out = False
        for method, path, status in self.calls:
            call = (method, path.split("?")[0], status)
            if call == ("POST", "/api/v1/auth/logout", 200):
                signed_out = True
            if status >= 400 and call not in EXPECTED_ERRORS and not (signed_out and status == 401):
                found.append(call)
        return found


@pytest.fixture
def served_app(tmp_path: Path) -> Iterator[str]:
    """``ragline serve --web-app`` on a free port, with a fresh data directory and no chat model."""
    dist = _web_app()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGLINE_CHAT_")}
    env.update(RAGLINE_DATA_DIR=str(tmp_path / "data"), RAGLINE_LOG_LEVEL="WARNING", PYTHONUNBUFFERED="1")
    log = (tmp_path / "serve.log").open("wb")
    command = [sys.executable, "-m", "ragline.cli", "serve", "--port", str(port), "--web-app", str(dist)]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(timeout=2.0) as client:
            while True:  # until it answers (or exits)
                assert process.poll() is None, (tmp_path / "serve.log").read_text()
                try:
                    if client.get(f"{url}/healthz").status_code == 200:
                        break
                except httpx.HTTPError:
                    process_wait(process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def process_wait(process: subprocess.Popen[bytes]) -> None:
    """Waits a moment for the process to exit (it is starting): returns at once if it did, else after 0.2 s."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=0.2)


def shot(page: Any, runtime: str, number: int, state: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"weknora-web-{runtime}-{number:02d}-{state}.png"
    page.screenshot(path=str(path))
    return path


def walk_through(page: Any, url: str, files: list[Path], runtime: str) -> NetworkLog:
    """What a new user does in WeKnora's app, step by step; the app's network log."""
    network = NetworkLog()
    page.on("response", network.record)
    page.goto(f"{url}/")
    page.wait_for_url("**/login")
    shot(page, runtime, 1, "login-zh-CN")

    # Register, then sign in.
    page.click(".register-cta__button")
    form = page.locator("form").last
    for index, value in enumerate(["Ada", EMAIL, PASSWORD, PASSWORD]):
        form.locator("input").nth(index).fill(value)
    with page.expect_response("**/api/v1/auth/register") as registered:
        form.locator("button[type=submit]").click()
    assert registered.value.status == 201
    form = page.locator("form").first
    form.locator("input").nth(0).fill(EMAIL)
    form.locator("input").nth(1).fill(PASSWORD)
    form.locator("button[type=submit]").click()
    page.wait_for_url("**/platform/knowledge-bases")
    page.get_by_text("跳过引导").click()
    shot(page, runtime, 2, "signed-in")

    # A knowledge base with the app's defaults (its models preselected: ragline's).
    page.get_by_text("新建知识库").last.click()
    page.get_by_text("跳过", exact=True).click()
    page.get_by_placeholder("请输入知识库名称").fill("Handbook")
    with page.expect_response("**/api/v1/knowledge-bases") as created:
        page.get_by_role("button", name="创建知识库").click()
    kb = created.value.json()["data"]
    assert created.value.status == 201
    assert kb["summary_model_id"] == "local:extractive"
    assert (kb["chunking_config"]["chunk_size"], kb["chunking_config"]["chunk_overlap"]) == (512, 80)
    page.get_by_role("button", name="保存并关闭").click()
    page.wait_for_url(f"**/platform/knowledge-bases/{kb['id']}**")
    page.get_by_text("跳过", exact=True).click()

    # Upload a Markdown file and a PDF; they are parsed.
    page.locator("input[type=file]").first.set_input_files([str(f) for f in files])
    shot(page, runtime, 3, "upload")
    page.get_by_role("button", name="确认上传并解析").click()
    names = {f.name for f in files}
    while not (names <= set(network.parse_status) and all(network.parse_status[n] == "completed" for n in names)):
        assert "failed" not in network.parse_status.values(), network.parse_status
        page.wait_for_event("response", timeout=WAIT_MS)
    for f in files:
        page.get_by_text(f.stem, exact=True).first.wait_for()
    shot(page, runtime, 4, "parsed")

    # Ask in a new chat (the built-in quick-answer agent searches every knowledge base).
    page.get_by_text("新对话").first.click()
    page.get_by_text("跳过", exact=True).click()
    box = page.locator("[data-guide='chat-input'] textarea")
    box.fill(QUESTION)
    with page.expect_response("**/api/v1/knowledge-chat/*") as chat:
        box.press("Enter")
    assert chat.value.headers["content-type"].startswith("text/event-stream")
    session_id = chat.value.url.rsplit("/", 1)[1]
    page.get_by_text(ANSWER).wait_for()
    page.get_by_text("引用了2篇文档").wait_for()
    # The citation chip of the quoted passage, pointing at its chunk.
    citation = page.locator(".citation.citation-kb").first
    citation.wait_for()
    assert citation.get_attribute("data-chunk-id")
    shot(page, runtime, 5, "answer")

    # Reload: the conversation is there.
    with page.expect_response(f"**/api/v1/messages/{session_id}/load**"):
        page.reload()
    page.get_by_text(ANSWER).wait_for()
    page.get_by_text(QUESTION).first.wait_for()
    shot(page, runtime, 6, "reloaded")

    # Rename the session in the sidebar.
    row = page.locator(".session-chat-row").first
    row.hover()
    row.locator(".t-dropdown, [class*='more'], button").last.click()
    page.get_by_text("修改标题").click()
    title_input = page.locator(".session-chat-row input").first
    title_input.fill("Coffee water")
    with page.expect_response(f"**/api/v1/sessions/{session_id}") as renamed:
        title_input.press("Enter")
    assert renamed.value.request.method == "PUT"
    page.locator(".session-chat-row").get_by_text("Coffee water").wait_for()

    # The same page in English.
    page.evaluate("localStorage.setItem('locale', 'en-US')")
    page.reload()
    page.get_by_text(ANSWER).wait_for()
    shot(page, runtime, 7, "conversation-en-US")

    # Delete the session, then sign out.
    row = page.locator(".session-chat-row").first
    row.hover()
    row.locator(".t-dropdown, [class*='more'], button").last.click()
    page.get_by_text("Delete", exact=False).last.click()
    with page.expect_response(f"**/api/v1/sessions/{session_id}") as deleted:
        page.get_by_role("button", name="Delete", exact=True).last.click()
    assert deleted.value.request.method == "DELETE"
    # The app drops the row once it has handled the reply (not with the reply: a loaded run saw it still there).
    page.wait_for_function("() => document.querySelectorAll('.session-chat-row').length === 0")
    page.get_by_text(EMAIL).click()
    with page.expect_response("**/api/v1/auth/logout"):
        page.get_by_text(LOG_OUT, exact=True).click()
    page.wait_for_url("**/login")
    shot(page, runtime, 8, "signed-out-en-US")
    return network


@pytest.fixture
def documents(tmp_path: Path) -> list[Path]:
    markdown = tmp_path / "coffee.md"
    markdown.write_text(DRINKS["Coffee brewing"], encoding="utf-8")
    pdf = tmp_path / "tea.pdf"
    pdf.write_bytes(
        make_pdf(
            ["Green tea is brewed at 70 to 80 degrees Celsius.", "Black tea is brewed with boiling water."],
            title="Tea guide",
        )
    )
    return [markdown, pdf]


def run_in_browser(browser: Any, url: str, documents: list[Path], runtime: str) -> NetworkLog:
    """The walk-through in a fresh browser context; fails on any error reply the user did not provoke and any page
    error, and writes the app's network log to test-output/weknora-web-<runtime>-network.txt."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page_errors: list[str] = []
    page.on("pageerror", lambda exc: page_errors.append(str(exc)))
    try:
        network = walk_through(page, url, documents, runtime)
    except Exception:
        shot(page, runtime, 99, "failed")
        raise
    finally:
        context.close()
    report = "\n".join(f"{m} {p} {s}" for m, p, s in network.calls)
    (SCREENSHOTS.parent / f"weknora-web-{runtime}-network.txt").write_text(report + "\n", encoding="utf-8")
    assert network.errors() == [], report
    assert page_errors == []
    return network


def test_weknora_web_app_walk_through_on_ragline_serve(browser: Any, served_app: str, documents: list[Path]) -> None:
    run_in_browser(browser, served_app, documents, "embedded")


@pytest.fixture(scope="module")
def deployed_app(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """template.yaml deployed in moto (no chat model: extractive answers, as ``ragline serve`` gives), searching the
    live OpenSearch, with the app's files in front of its HTTP API on one origin (``/api/`` → API Gateway →
    ``ingest_turn``), as WeKnora's nginx puts them."""
    dist = _web_app()
    live = request.getfixturevalue("opensearch")  # skipped without it (a failure under CI)
    target = OpenSearchTarget(live.url, knn_engine=live.knn_engine)
    with deployed_stack(tmp_path_factory.mktemp("web-app-stack"), opensearch=target) as stack:
        stack.warm()
        front = ServerThread(web_app_front(dist, stack.api_url)).start()
        try:
            yield front.url, stack
        finally:
            front.stop()
            # What the walk-through set off asynchronously (the uploads' indexing) ends before the stack does.
            stack.lambdas.drain(timeout=180.0)


def test_weknora_web_app_walk_through_on_the_deployed_stack(
    browser: Any, deployed_app: Any, documents: list[Path]
) -> None:
    url, stack = deployed_app
    since, first = len(stack.calls()), len(stack.lambdas.invocations)
    network = run_in_browser(browser, url, documents, "aws")
    # Every reply the app got came from ingest_turn through API Gateway, the answer's stream included
    # (knowledge-chat is an API route; API Gateway hands it over whole when the answer ends).
    invoked = Counter(
        (i.event["requestContext"]["http"]["method"], i.event["rawPath"])
        for i in stack.lambdas.invocations[first:]
        if i.function == "IngestTurnFunction"
    )
    replied = Counter((method, path.split("?")[0]) for method, path, _ in network.calls)
    assert replied - invoked == Counter(), replied - invoked
    # Its tokens were signed with the secret the template generated, read through ingest_turn's grant.
    reads = {(c.function, c.resource) for c in stack.calls()[since:] if c.action == "secretsmanager:GetSecretValue"}
    assert reads == {("IngestTurnFunction", stack.refs["TokenSigningSecret"])}
    stack.assert_no_denials(since)
