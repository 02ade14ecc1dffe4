"""Issue 29: the page in Chinese and English (zh-CN, en-US).

The language comes from the browser's, can be switched in the header and is remembered; every string is in one
catalogue per language (web/locales/). In Chinese, a walk over every text and label of the page in each state fails
on any English word that is not a name (of a model, a format, a command): an untranslated string. Screenshots of
both languages: test-output/screenshots/page-29-lang-<locale>-<state>.png.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import CHROMIUM, WAIT_MS, PageErrors, screenshot
from tests.e2e.test_page_features import open_app, wait_answered
from tests.support.scripted_model import Piece, Script

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=f"{CHROMIUM} is missing: `make test` installs Debian's chromium (apt-get install chromium)",
)

WEB = Path(__file__).resolve().parents[2] / "layers" / "core" / "ragline" / "server" / "web"
# Names the Chinese page keeps as they are: the product, formats, protocols, keys and units.
NAMES = {
    "ragline",
    "API",
    "URL",
    "Markdown",
    "PDF",
    "Word",
    "PowerPoint",
    "EPUB",
    "HTML",
    "CSV",
    "Excel",
    "PNG",
    "JPEG",
    "WebP",
    "GIF",
    "MB",
    "KB",
    "FAQ",
    "JSON",
    "top-k",
    "token",
    "AWS",
    "Enter",
    "Shift",
    "stream_reader",
    "OpenAI",
    "llama.cpp",
    "Amazon",
    "Bedrock",
}
TEA = {
    "绿茶冲泡": "# 绿茶冲泡\n\n## 水温\n\n绿茶适合用七十到八十度的水冲泡，时间两到三分钟。\n\n## 器具\n\n玻璃杯便于观察茶叶舒展。",
    "咖啡冲煮": "# 咖啡冲煮\n\n## 水温\n\n咖啡适合用九十到九十六度的水冲煮。沸水会萃取出苦味。",
}
# Every text node and every label of the page, but those of code and of what is marked as not to translate.
TEXTS = """() => {
  const out = [];
  const skip = (el) => el.closest('code, [translate="no"], script, style, option[lang]');
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.textContent.trim() && !skip(node.parentElement)) out.push(node.textContent.trim());
  }
  for (const el of document.querySelectorAll('[aria-label], [title], [placeholder], [alt]')) {
    if (skip(el)) continue;
    for (const name of ['aria-label', 'title', 'placeholder', 'alt']) if (el.getAttribute(name)) out.push(el.getAttribute(name));
  }
  out.push(document.title);
  return out;
}"""


@pytest.fixture
def chinese(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 900}, locale="zh-CN")
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.errors = PageErrors()  # type: ignore[attr-defined]
    page.on("pageerror", lambda exc: page.errors.append(f"pageerror: {exc}"))
    page.on("console", lambda msg: page.errors.append(f"console: {msg.text}") if msg.type == "error" else None)
    yield page
    context.close()


def untranslated(page: Any, names: set[str]) -> list[str]:
    """The texts of the page holding an English word that is not a name."""
    bad = []
    for text in page.evaluate(TEXTS):
        words = re.findall(r"[A-Za-z][A-Za-z_'-]*[A-Za-z]", text)
        if [w for w in words if w not in names] or re.search(r"\[[\w.]+\]", text):
            bad.append(text)
    return bad


def keys_in_code() -> set[str]:
    """The catalogue keys the page's code and HTML name (t('key') and data-i18n attributes)."""
    keys: set[str] = set()
    for path in WEB.glob("*.js"):
        keys |= set(re.findall(r"\bt\('([\w.]+)'", path.read_text(encoding="utf-8")))
    keys |= set(re.findall(r'data-i18n(?:-[\w-]+)?="([\w.]+)"', (WEB / "index.html").read_text(encoding="utf-8")))
    return keys


def catalogue(name: str) -> set[str]:
    return set(re.findall(r'^  "([\w.]+)":', (WEB / "locales" / f"{name}.js").read_text(encoding="utf-8"), re.M))


def test_both_catalogues_hold_every_key_the_page_uses():
    english, chinese = catalogue("en-US"), catalogue("zh-CN")
    assert english == chinese, english ^ chinese
    assert not keys_in_code() - english, keys_in_code() - english


def test_the_chinese_page_has_no_untranslated_string_in_any_state(ragline, scripted, chinese, monkeypatch):
    page = chinese
    monkeypatch.setattr(scripted, "title", Script.answer("绿茶的水温"))
    kb = ragline.create_kb("茶与咖啡", TEA)
    names = NAMES | {m["name"] for m in ragline.client.get("/api/v1/models").json()["data"]}

    def check(state: str) -> None:
        assert not untranslated(page, names), (state, untranslated(page, names))
        screenshot(page, f"page-29-lang-zh-CN-{state}")

    page.goto(f"{ragline.url}/")
    page.wait_for_selector("#key-dialog[open]")
    assert page.evaluate("document.documentElement.lang") == "zh-CN"
    check("key-dialog")
    open_app(page, ragline.url, ragline.key)
    page.wait_for_selector("#suggestions .suggestion")
    check("new-session")
    scripted.queue(
        Script([Piece(content="绿茶用七十到八十度的水"), Piece(content=' <ref id="c1"/>'), Piece(content="。")])
    )
    page.fill("#question", "绿茶用多少度的水？")
    page.click("#ask")
    wait_answered(page, 1)
    page.click(".turn .references .ref-toggle")
    check("answer")
    page.click(".turn .answer button.cite")
    page.wait_for_selector('#source-dialog[open][data-state="loaded"]')
    check("viewer")
    page.click("#source-close")
    page.click("#options-button")
    check("options")
    page.click("#options-cancel")
    page.evaluate(f"() => {{ location.hash = '#/kb/{kb}'; }}")
    page.wait_for_selector("#documents tr[data-document-id]")
    page.locator("#documents button.link").first.click()
    page.wait_for_selector("#chunks .chunk")
    check("documents")
    page.evaluate(f"() => {{ location.hash = '#/kb/{kb}/search'; }}")
    page.fill("#kb-search-query", "绿茶 水温")
    page.click("#kb-search button[type=submit]")
    page.wait_for_selector('#kb-search-results[data-state="done"]')
    check("search")
    assert not page.errors, page.errors


def test_the_language_follows_the_browser_and_the_switch_and_is_remembered(ragline, chinese, browser):
    page = chinese
    open_app(page, ragline.url, ragline.key)
    assert page.locator("#ask").inner_text() == "提问"
    # Switched to English: the page reloads in it, and stays in it after another reload.
    with page.expect_navigation():
        page.select_option("#language-picker", "en-US")
    page.wait_for_selector("#session-list li", state="attached")
    assert page.evaluate("document.documentElement.lang") == "en-US"
    assert page.locator("#ask").inner_text() == "Ask"
    page.reload()
    page.wait_for_selector("#session-list li", state="attached")
    assert page.locator("#ask").inner_text() == "Ask"
    screenshot(page, "page-29-lang-en-US-new-session")
    # A browser in English gets English without a choice.
    context = browser.new_context(viewport={"width": 1400, "height": 900}, locale="en-US")
    english = context.new_page()
    english.goto(f"{ragline.url}/")
    english.wait_for_selector("#key-dialog[open]")
    assert english.evaluate("document.documentElement.lang") == "en-US"
    assert english.locator("#key-form button[type=submit]").inner_text() == "Save key"
    screenshot(english, "page-29-lang-en-US-key-dialog")
    context.close()
