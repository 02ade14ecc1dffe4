"""Browser tests: the chat page in Debian's Chromium, driven by Playwright's Python driver.

Playwright never downloads a browser here: it launches /usr/bin/chromium (``make test`` installs Debian's
package when it is missing). Without it, or without the ``playwright`` package, the tests are skipped
with the reason. Each test gets a new browser context (its own, empty localStorage and sessionStorage);
the browser itself is started once per session with a fresh temporary profile.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path(os.environ.get("RAGLINE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "test-output" / "screenshots"

# How long a browser wait (a click's element, a selector, a page condition) may take before the test fails. Every
# wait returns as soon as its condition holds, so this bounds only a failure; on a 2-core machine with both cores
# busy the page took over 20 s for steps that take 1 s idle (a clean clone's .ci/run under load), so the bound is
# generous, and longer again when the machine has fewer cores than the suite's two workers expect.
WAIT_MS = 90_000 * max(1, 2 // max(1, os.cpu_count() or 1))


@pytest.fixture(autouse=True)
def _fresh_scripts(fresh_scripts: None) -> None:
    """No scripted reply or recorded request survives from one test to the next."""
    return


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium for one test module.

    Playwright's sync API marks its event loop as running in this thread while it is started (and leaves
    the closed loop marked after it stops): the rest of the suite (Mangum, asyncio.run) must not see it, so
    it lives for a module at most and the mark is cleared after it.
    """
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: `make test` installs Debian's chromium (apt-get install chromium)")
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="the playwright package is missing (pip install -e '.[dev]')"
    )
    try:
        with sync_api.sync_playwright() as playwright:
            # Playwright passes a fresh temporary --user-data-dir to every browser it launches.
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
            yield browser
            browser.close()
    finally:
        asyncio._set_running_loop(None)


class PageErrors(list[str]):
    """Uncaught exceptions and console errors of the page; a test ends with none."""


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    errors = PageErrors()
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    page.on("console", lambda msg: errors.append(f"console.{msg.type}: {msg.text}") if msg.type == "error" else None)
    page.errors = errors  # type: ignore[attr-defined]
    yield page
    context.close()


def screenshot(page: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    return path


# Two screens every page is tested at: a desktop window and a phone (touch, mobile viewport).
VIEWPORTS: dict[str, dict[str, Any]] = {
    "desktop": {"viewport": {"width": 1400, "height": 900}},
    "phone": {
        "viewport": {"width": 390, "height": 844},
        "is_mobile": True,
        "has_touch": True,
        "device_scale_factor": 2,
    },
}
AXE_JS = ROOT / "build" / "axe" / "node_modules" / "axe-core" / "axe.min.js"


@pytest.fixture(scope="session")
def axe_source() -> str:
    """axe-core's script, installed from the npm registry by `make axe` (part of `make test`)."""
    if not AXE_JS.exists():
        pytest.fail(f"{AXE_JS} is missing: run `make axe` (npm install axe-core) before the browser tests")
    return AXE_JS.read_text(encoding="utf-8")


@pytest.fixture(params=list(VIEWPORTS))
def screen(request: pytest.FixtureRequest, browser: Any) -> Iterator[Any]:
    """A page at one of VIEWPORTS (``page.screen_name``), with the clipboard allowed."""
    name = request.param
    context = browser.new_context(**VIEWPORTS[name])
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    errors = PageErrors()
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    page.errors = errors  # type: ignore[attr-defined]
    page.screen_name = name  # type: ignore[attr-defined]
    yield page
    context.close()


AXE_COUNTS = ROOT / "test-output" / "axe-counts.jsonl"


def check_accessibility(page: Any, axe_source: str, state: str) -> list[dict[str, Any]]:
    """axe-core run inside the page as it is now: fails on any serious or critical violation.

    Every run's violations by impact are appended to test-output/axe-counts.jsonl (state, screen, colour scheme).
    """
    if not page.evaluate("() => Boolean(window.axe)"):
        # Through the DevTools protocol: the page's Content-Security-Policy allows no inline script.
        page.evaluate(axe_source)
    violations: list[dict[str, Any]] = page.evaluate(
        """async () => {
          const result = await window.axe.run(document, { resultTypes: ['violations'] });
          return result.violations.map((v) => ({
            id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' ') + ' — ' + n.failureSummary.split('\\n').slice(1).join(' ')),
          }));
        }"""
    )
    scheme = page.evaluate(
        "() => document.documentElement.dataset.scheme || (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light')"
    )
    counts: dict[str, int] = {}
    for violation in violations:
        counts[violation["impact"]] = counts.get(violation["impact"], 0) + 1
    AXE_COUNTS.parent.mkdir(parents=True, exist_ok=True)
    with AXE_COUNTS.open("a", encoding="utf-8") as log:
        record = {"state": state, "screen": getattr(page, "screen_name", "page"), "scheme": scheme, "counts": counts}
        log.write(json.dumps({**record, "ids": sorted({f"{v['impact']}:{v['id']}" for v in violations})}) + "\n")
    bad = [v for v in violations if v["impact"] in ("serious", "critical")]
    assert not bad, f"{state}: {bad}"
    return violations


def no_horizontal_scroll(page: Any) -> None:
    """Nothing on the page is wider than the screen (nothing to scroll sideways)."""
    sizes = page.evaluate(
        "() => ({inner: window.innerWidth, doc: document.documentElement.scrollWidth, body: document.body.scrollWidth})"
    )
    assert sizes["doc"] <= sizes["inner"], sizes
    assert sizes["body"] <= sizes["inner"], sizes


def shot(page: Any, number: str, name: str) -> Path:
    """A screenshot named with the screen it was taken on (test-output/screenshots/page-<n>-<screen>-<name>.png)."""
    return screenshot(page, f"page-{number}-{page.screen_name}-{name}")
