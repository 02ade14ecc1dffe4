"""WEB_FETCH: the top web results of the ranking get their page text; nothing else changes, nothing fails."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse

from ragline.pipeline.plugin import EventManager
from ragline.pipeline.web_fetch import DIAGNOSTICS_KEY, PluginWebFetch, top_web_indexes
from ragline.types import ChatManage, EventType, SearchResult
from ragline.web import WebHit, to_search_results
from ragline.web.fetch import FetchedPage, FetchError, FetchFailure, WebFetchConfig
from tests.support.servers import ServerThread


class FakeFetcher:
    """Pages by URL; records calls and how many fetches were in flight at once."""

    def __init__(self, pages: dict[str, str | BaseException] | None = None, delay_s: float = 0.05) -> None:
        self.pages = pages or {}
        self.delay_s = delay_s
        self.calls: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0

    async def fetch(self, url: str) -> FetchedPage:
        self.calls.append(url)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay_s)
            page = self.pages.get(url, f"full text of {url}")
            if isinstance(page, BaseException):
                raise page
            return FetchedPage(url, 200, "text/html", page, len(page), False, False)
        finally:
            self.in_flight -= 1


class Inner:
    def __init__(self) -> None:
        self.calls = 0

    def activation_events(self) -> list[EventType]:
        return [EventType.WEB_FETCH]

    async def on_event(self, event_type, cm, next):
        self.calls += 1
        return await next()


def web(*names: str) -> list[SearchResult]:
    return to_search_results([WebHit(f"https://{n}.example/page", f"{n} title", f"{n} snippet") for n in names])


def kb(id: str, score: float = 0.9) -> SearchResult:
    return SearchResult(id=id, content=f"kb text {id}", knowledge_id=f"doc-{id}", score=score)


def chat(make_request, *, rerank=None, search=None, **request_fields) -> ChatManage:
    fields = {"web_search_enabled": True, "web_fetch_enabled": True, **request_fields}
    cm = ChatManage.start(make_request(**fields))
    cm.state.rerank_result = list(rerank or [])
    cm.state.search_result = list(search or [])
    return cm


def trigger(cm: ChatManage, plugin: PluginWebFetch) -> tuple[object, Inner]:
    manager = EventManager()
    inner = Inner()
    manager.register(plugin)
    manager.register(inner)
    return asyncio.run(manager.trigger(EventType.WEB_FETCH, cm)), inner


def test_top_n_web_results_of_rerank_only(make_request):
    results = [kb("k1"), *web("a", "b"), kb("k2"), *web("c", "d", "e")]
    cm = chat(make_request, rerank=results, web_fetch_top_n=3)
    fetcher = FakeFetcher()
    error, inner = trigger(cm, PluginWebFetch(fetcher=fetcher))
    assert error is None
    assert inner.calls == 1
    assert fetcher.calls == [f"https://{n}.example/page" for n in ("a", "b", "c")]
    after = {r.id: r for r in cm.state.rerank_result}
    for name in ("a", "b", "c"):
        fetched = after[f"https://{name}.example/page"]
        assert fetched.content == f"full text of https://{name}.example/page"
        assert fetched.metadata["web_fetched"] == "true"
        assert fetched.metadata["web_fetch_reason"] == "ok"
        assert fetched.metadata["web_snippet"] == f"{name} snippet"
    for name in ("d", "e"):
        untouched = after[f"https://{name}.example/page"]
        assert untouched.content == f"{name} snippet"
        assert "web_fetched" not in untouched.metadata
    assert after["k1"].content == "kb text k1"
    assert after["k2"].content == "kb text k2"
    assert [r.id for r in cm.state.rerank_result] == [r.id for r in results]  # order unchanged


def test_fetches_run_in_parallel(make_request):
    cm = chat(make_request, rerank=web("a", "b", "c"))
    fetcher = FakeFetcher(delay_s=0.3)
    started = time.monotonic()
    trigger(cm, PluginWebFetch(fetcher=fetcher))
    assert fetcher.max_in_flight == 3
    # Three 0.3 s fetches one after another would take 0.9 s.
    assert time.monotonic() - started < 0.8


def test_parallelism_is_bounded_by_config(make_request):
    cm = chat(make_request, rerank=web(*"abcdef"), web_fetch_top_n=6)
    fetcher = FakeFetcher()
    trigger(cm, PluginWebFetch(WebFetchConfig(max_parallel=2), fetcher=fetcher))
    assert len(fetcher.calls) == 6
    assert fetcher.max_in_flight == 2


def test_default_top_n_is_three(make_request):
    cm = chat(make_request, rerank=web(*"abcde"), web_fetch_top_n=0)
    fetcher = FakeFetcher()
    trigger(cm, PluginWebFetch(fetcher=fetcher))
    assert len(fetcher.calls) == 3


def test_failures_keep_snippets_and_never_fail_the_stage(make_request):
    cm = chat(make_request, rerank=web("a", "b", "c"))
    fetcher = FakeFetcher(
        {
            "https://a.example/page": FetchError(FetchFailure.BLOCKED_ADDRESS, "resolves to 127.0.0.1"),
            "https://b.example/page": RuntimeError("fetcher bug"),
        }
    )
    error, inner = trigger(cm, PluginWebFetch(fetcher=fetcher))
    assert error is None
    assert inner.calls == 1
    a, b, c = cm.state.rerank_result
    assert a.content == "a snippet"
    assert a.metadata["web_fetched"] == "false"
    assert a.metadata["web_fetch_reason"] == "blocked_address"
    assert "127.0.0.1" in a.metadata["web_fetch_error"]
    assert b.content == "b snippet"
    assert b.metadata["web_fetch_reason"] == "error"
    assert c.metadata["web_fetched"] == "true"
    diagnostics = cm.context.extras[DIAGNOSTICS_KEY]
    assert (diagnostics.attempted, diagnostics.fetched) == (3, 1)
    assert diagnostics.failures == {"https://a.example/page": "blocked_address", "https://b.example/page": "error"}


def test_search_result_is_used_when_rerank_left_none(make_request):
    cm = chat(make_request, search=[kb("k"), *web("a")])
    fetcher = FakeFetcher()
    trigger(cm, PluginWebFetch(fetcher=fetcher))
    assert fetcher.calls == ["https://a.example/page"]
    assert cm.state.search_result[1].metadata["web_fetched"] == "true"
    assert cm.state.rerank_result == []


def test_rerank_result_wins_over_search_result(make_request):
    cm = chat(make_request, rerank=web("r"), search=web("s"))
    fetcher = FakeFetcher()
    trigger(cm, PluginWebFetch(fetcher=fetcher))
    assert fetcher.calls == ["https://r.example/page"]
    assert cm.state.search_result[0].content == "s snippet"


@pytest.mark.parametrize(
    "flags",
    [
        {"web_fetch_enabled": False},
        {"web_search_enabled": False},
        {"web_fetch_enabled": False, "web_search_enabled": False},
    ],
)
def test_disabled_flags_skip_the_stage(make_request, flags):
    cm = chat(make_request, rerank=web("a"), **flags)
    fetcher = FakeFetcher()
    error, inner = trigger(cm, PluginWebFetch(fetcher=fetcher))
    assert error is None
    assert inner.calls == 1
    assert fetcher.calls == []
    assert cm.state.rerank_result[0].content == "a snippet"
    assert DIAGNOSTICS_KEY not in cm.context.extras


def test_no_web_results_calls_next_without_fetching(make_request):
    cm = chat(make_request, rerank=[kb("k")])
    fetcher = FakeFetcher()
    error, inner = trigger(cm, PluginWebFetch(fetcher=fetcher))
    assert error is None
    assert inner.calls == 1
    assert fetcher.calls == []


def test_an_already_fetched_result_is_not_fetched_again(make_request):
    cm = chat(make_request, rerank=web("a", "b"))
    fetcher = FakeFetcher()
    plugin = PluginWebFetch(fetcher=fetcher)
    trigger(cm, plugin)
    trigger(cm, plugin)  # a retried step
    assert fetcher.calls == ["https://a.example/page", "https://b.example/page"]


def test_top_web_indexes():
    results = [kb("k1"), *web("a"), kb("k2"), *web("b", "c")]
    assert top_web_indexes(results, 2) == [1, 3]
    assert top_web_indexes(results, 0) == []


# --- end to end with the SSRF-safe fetcher


@pytest.fixture(scope="module")
def page_server() -> Iterator[ServerThread]:
    app = FastAPI()
    app.get("/doc")(lambda: PlainTextResponse("the whole page text"))
    thread = ServerThread(app).start()
    yield thread
    thread.stop()


def test_real_fetcher_reads_allowed_pages_and_refuses_loopback(make_request, page_server):
    allowed_url = f"{page_server.url}/doc"
    results = to_search_results(
        [
            WebHit(allowed_url, "allowed", "allowed snippet"),
            WebHit("http://127.0.0.1:9/secret", "loopback", "loopback snippet"),
            WebHit("http://169.254.169.254/latest/meta-data/", "metadata", "metadata snippet"),
        ]
    )
    cm = chat(make_request, rerank=results)
    config = WebFetchConfig(allowed_endpoints=[("127.0.0.1", page_server.port)], timeout_s=5)
    error, _ = trigger(cm, PluginWebFetch(config))
    assert error is None
    allowed, loopback, metadata = cm.state.rerank_result
    assert allowed.content == "the whole page text"
    assert allowed.metadata["web_fetch_url"] == allowed_url
    assert loopback.content == "loopback snippet"
    assert loopback.metadata["web_fetch_reason"] == "blocked_address"
    assert metadata.content == "metadata snippet"
    assert metadata.metadata["web_fetch_reason"] == "blocked_address"
