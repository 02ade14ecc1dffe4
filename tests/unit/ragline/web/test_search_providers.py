"""Each web search adapter against a local server that answers in that provider's documented format.

The fake answers follow the providers' documentation: SearXNG's ``/search?format=json`` (``results[]`` with
url/title/content, 403 when the JSON format is disabled), Tavily's ``POST /search`` (Bearer key,
``results[]`` with a ``score``, errors as ``{"detail": {"error": ...}}``) and Brave's
``/res/v1/web/search`` (``X-Subscription-Token``, ``web.results[]`` with ``description``, errors as
``{"type": "ErrorResponse", "error": {...}}``, a bad key as 422 ``SUBSCRIPTION_TOKEN_INVALID``).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from ragline.types import ChatManage, MatchType
from ragline.web import (
    BraveProvider,
    SearchSource,
    SearxngProvider,
    TavilyProvider,
    UnknownWebSearchProvider,
    WebHit,
    WebSearchConfig,
    WebSearchError,
    WebSearchProviderKind,
    WebSearchProviderSpec,
    WebSearchRegistry,
    WebSearchService,
    choose_provider_id,
    register_configured_providers,
    search_source,
    web_count,
)
from ragline.web.search import HttpProviderSettings, WebSearchProvider, build_provider
from tests.support.servers import ServerThread

TAVILY_KEY = "tvly-test-key"
BRAVE_KEY = "brave-test-key"

PAGES = [
    ("https://example.org/ragline#intro", "Ragline overview", "Ragline is an event-driven RAG pipeline."),
    ("https://docs.example.org/sse", "Streaming", "Answers stream as server-sent events."),
    ("https://blog.example.org/rerank", "Reranking", "A cross-encoder reorders candidates."),
    ("https://example.net/mmr", "MMR", "Maximal marginal relevance trades relevance for diversity."),
]


class FakeProviders:
    """SearXNG under ``/searx``, Tavily under ``/tavily``, Brave at its own path, on one server."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.failure: tuple[int, Any] | None = None
        self.delay_s = 0.0
        self.not_json = False
        self.app = FastAPI()
        self.app.get("/searx/search")(self.searxng)
        self.app.post("/tavily/search")(self.tavily)
        self.app.get("/res/v1/web/search")(self.brave)

    async def _prelude(self, request: Request, body: Any = None) -> Response | None:
        self.requests.append(
            {"path": request.url.path, "params": dict(request.query_params), "headers": request.headers, "body": body}
        )
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.failure is not None:
            status, payload = self.failure
            return JSONResponse(payload, status_code=status)
        if self.not_json:
            return PlainTextResponse("<html>gateway timeout</html>")
        return None

    async def searxng(self, request: Request) -> Response:
        early = await self._prelude(request)
        if early is not None:
            return early
        if request.query_params.get("format") != "json":
            # SearXNG answers a format the instance has not enabled with 403 Forbidden.
            return PlainTextResponse("Forbidden", status_code=403)
        results = [
            {
                "url": url,
                "title": title,
                "content": content,
                "engine": "duckduckgo",
                "engines": ["duckduckgo", "brave"],
                "positions": [rank + 1],
                "score": 4.0 / (rank + 1),
                "category": "general",
                "template": "default.html",
            }
            for rank, (url, title, content) in enumerate(PAGES)
        ]
        results.insert(1, {"url": "javascript:alert(1)", "title": "bad", "content": "never kept"})
        return JSONResponse(
            {
                "query": request.query_params["q"],
                "number_of_results": len(results),
                "results": results,
                "answers": [],
                "corrections": [],
                "infoboxes": [],
                "suggestions": [],
                "unresponsive_engines": [],
            }
        )

    async def tavily(self, request: Request) -> Response:
        body = await request.json()
        early = await self._prelude(request, body)
        if early is not None:
            return early
        if request.headers.get("authorization") != f"Bearer {TAVILY_KEY}":
            return JSONResponse({"detail": {"error": "Unauthorized: missing or invalid API key."}}, status_code=401)
        results = [
            {"title": title, "url": url, "content": content, "score": 0.9 - 0.2 * rank, "raw_content": None}
            for rank, (url, title, content) in enumerate(PAGES)
        ]
        return JSONResponse(
            {
                "query": body["query"],
                "follow_up_questions": None,
                "answer": None,
                "images": [],
                "results": results[: body["max_results"]],
                "response_time": 0.42,
            }
        )

    async def brave(self, request: Request) -> Response:
        early = await self._prelude(request)
        if early is not None:
            return early
        if request.headers.get("x-subscription-token") != BRAVE_KEY:
            return JSONResponse(brave_error(422, "SUBSCRIPTION_TOKEN_INVALID"), status_code=422)
        count = int(request.query_params.get("count", "20"))
        results = [
            {
                "type": "search_result",
                "title": title,
                "url": url,
                "description": f"<strong>{title}</strong>: {content} &amp; more",
                "age": "August 1, 2025",
                "language": "en",
                "family_friendly": True,
            }
            for url, title, content in PAGES
        ]
        return JSONResponse(
            {
                "type": "search",
                "query": {"original": request.query_params["q"], "more_results_available": False},
                "web": {"type": "search", "results": results[:count], "family_friendly": True},
            }
        )


def brave_error(status: int, code: str) -> dict[str, Any]:
    return {
        "type": "ErrorResponse",
        "error": {"id": "5d832250", "status": status, "code": code, "detail": f"{code} detail", "meta": {}},
        "time": 1663072993,
    }


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[FakeProviders, str]]:
    fake = FakeProviders()
    thread = ServerThread(fake.app).start()
    yield fake, thread.url
    thread.stop()


@pytest.fixture
def fake(server) -> FakeProviders:
    providers, _ = server
    providers.requests.clear()
    providers.failure, providers.delay_s, providers.not_json = None, 0.0, False
    return providers


def providers(url: str, timeout_s: float = 5.0) -> dict[str, WebSearchProvider]:
    settings = HttpProviderSettings(timeout_s=timeout_s)
    return {
        "searxng": SearxngProvider(f"{url}/searx", settings=settings),
        "tavily": TavilyProvider(TAVILY_KEY, f"{url}/tavily", settings=settings),
        "brave": BraveProvider(BRAVE_KEY, url, settings=settings),
    }


def search(provider: WebSearchProvider, query: str = "ragline", max_results: int = 3) -> list[WebHit]:
    return asyncio.run(provider.search(query, max_results))


# --- documented success formats


def test_searxng_reads_results_and_cuts_to_max_results(server, fake):
    _, url = server
    hits = search(providers(url)["searxng"], max_results=3)
    assert [h.url for h in hits] == [PAGES[0][0], PAGES[1][0], PAGES[2][0]]  # javascript: row skipped
    assert hits[0].title == "Ragline overview"
    assert hits[0].snippet == "Ragline is an event-driven RAG pipeline."
    # SearXNG's score is an engine-weight sum, not a relevance in [0, 1]: unused.
    assert all(h.score is None for h in hits)
    assert fake.requests[0]["params"] == {"q": "ragline", "format": "json", "pageno": "1"}


def test_tavily_sends_bearer_key_and_max_results_and_keeps_scores(server, fake):
    _, url = server
    hits = search(providers(url)["tavily"], query="what is ragline", max_results=2)
    assert [h.url for h in hits] == [PAGES[0][0], PAGES[1][0]]
    assert [h.score for h in hits] == pytest.approx([0.9, 0.7])
    sent = fake.requests[0]
    assert sent["headers"]["authorization"] == f"Bearer {TAVILY_KEY}"
    assert sent["body"]["query"] == "what is ragline"
    assert sent["body"]["max_results"] == 2
    assert sent["body"]["include_raw_content"] is False


def test_brave_sends_subscription_token_and_count_and_strips_markup(server, fake):
    _, url = server
    hits = search(providers(url)["brave"], max_results=2)
    assert [h.url for h in hits] == [PAGES[0][0], PAGES[1][0]]
    assert hits[0].snippet == "Ragline overview: Ragline is an event-driven RAG pipeline. & more"
    assert hits[0].score is None
    sent = fake.requests[0]
    assert sent["headers"]["x-subscription-token"] == BRAVE_KEY
    assert sent["params"] == {"q": "ragline", "count": "2"}


def test_result_counts_are_capped_at_the_documented_maximum(server, fake):
    _, url = server
    search(providers(url)["brave"], max_results=50)
    search(providers(url)["tavily"], max_results=50)
    assert fake.requests[0]["params"]["count"] == "20"
    assert fake.requests[1]["body"]["max_results"] == 20


def test_brave_without_web_section_is_no_results(server, fake):
    _, url = server
    fake.failure = (200, {"type": "search", "query": {"original": "zzz"}})
    assert search(providers(url)["brave"]) == []


# --- documented error responses


@pytest.mark.parametrize("name", ["searxng", "tavily", "brave"])
@pytest.mark.parametrize("status", [401, 429, 500])
def test_error_statuses_raise_web_search_error(server, fake, name, status):
    _, url = server
    bodies = {
        "searxng": {"error": "engine failure"},
        "tavily": {"detail": {"error": f"tavily says {status}"}},
        "brave": brave_error(status, "RATE_LIMITED" if status == 429 else "INTERNAL"),
    }
    fake.failure = (status, bodies[name])
    with pytest.raises(WebSearchError) as raised:
        search(providers(url)[name])
    assert raised.value.status_code == status
    assert raised.value.provider == name
    assert str(status) in str(raised.value)


def test_tavily_error_detail_is_quoted(server, fake):
    _, url = server
    fake.failure = (432, {"detail": {"error": "This request exceeds your plan's set usage limit."}})
    with pytest.raises(WebSearchError, match="exceeds your plan"):
        search(providers(url)["tavily"])


def test_tavily_wrong_key_is_401(server, fake):
    _, url = server
    with pytest.raises(WebSearchError, match="invalid API key") as raised:
        search(TavilyProvider("tvly-wrong", f"{url}/tavily"))
    assert raised.value.status_code == 401


def test_brave_wrong_key_is_422_subscription_token_invalid(server, fake):
    _, url = server
    with pytest.raises(WebSearchError, match="SUBSCRIPTION_TOKEN_INVALID") as raised:
        search(BraveProvider("wrong", url))
    assert raised.value.status_code == 422


def test_searxng_with_json_format_disabled_is_403(server, fake):
    _, url = server

    class HtmlOnly(SearxngProvider):
        async def search(self, query: str, max_results: int) -> list[WebHit]:
            await self._send(lambda client: client.get(f"{self.base_url}/search", params={"q": query}))
            return []

    with pytest.raises(WebSearchError) as raised:
        search(HtmlOnly(f"{url}/searx"))
    assert raised.value.status_code == 403


@pytest.mark.parametrize("name", ["searxng", "tavily", "brave"])
def test_an_answer_that_is_not_json_raises(server, fake, name):
    _, url = server
    fake.not_json = True
    with pytest.raises(WebSearchError, match="not JSON"):
        search(providers(url)[name])


@pytest.mark.parametrize("name", ["searxng", "tavily"])
def test_json_without_a_result_list_raises(server, fake, name):
    _, url = server
    fake.failure = (200, {"unexpected": True})
    with pytest.raises(WebSearchError, match="no result list"):
        search(providers(url)[name])


def test_a_slow_provider_times_out(server, fake):
    _, url = server
    fake.delay_s = 1.5
    with pytest.raises(WebSearchError, match="timed out"):
        search(providers(url, timeout_s=0.3)["brave"])


def test_an_unreachable_provider_raises():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(WebSearchError, match="request failed"):
        search(SearxngProvider(f"http://127.0.0.1:{port}"))


# --- choosing the provider


class StaticProvider:
    def __init__(self, name: str) -> None:
        self.name = name
        self.queries: list[tuple[str, int]] = []

    async def search(self, query: str, max_results: int) -> list[WebHit]:
        self.queries.append((query, max_results))
        return [WebHit(f"https://{self.name}.example/{i}", f"{self.name} {i}", f"snippet {i}") for i in range(3)]


def registry_of(*names: str, default: str = "") -> tuple[WebSearchRegistry, dict[str, StaticProvider]]:
    registry = WebSearchRegistry()
    built = {name: StaticProvider(name) for name in names}
    for name in names:
        registry.add(name, lambda name=name: built[name], default=name == default)
    return registry, built


def test_choice_precedence_agent_then_tenant_then_default():
    assert choose_provider_id("agent", "tenant", "default") == "agent"
    assert choose_provider_id("", "tenant", "default") == "tenant"
    assert choose_provider_id("  ", "", "default") == "default"
    assert choose_provider_id("", "", "") == ""


def test_registry_resolves_by_precedence_and_builds_once():
    registry, built = registry_of("searx", "tavily", default="tavily")
    assert registry.resolve() == ("tavily", built["tavily"])
    assert registry.resolve(tenant_provider_id="searx") == ("searx", built["searx"])
    assert registry.resolve(agent_provider_id="tavily", tenant_provider_id="searx")[0] == "tavily"
    assert registry.get("searx") is registry.get("searx")


def test_first_registered_is_default_unless_another_says_so():
    registry, _ = registry_of("a", "b")
    assert registry.default_id == "a"
    registry.add("c", lambda: StaticProvider("c"), default=True)
    assert registry.default_id == "c"


def test_an_unknown_named_provider_is_an_error_not_a_silent_fallback():
    registry, _ = registry_of("searx", default="searx")
    with pytest.raises(UnknownWebSearchProvider):
        registry.resolve(tenant_provider_id="brave")


def test_no_provider_configured_resolves_to_none():
    assert WebSearchRegistry().resolve() is None


def test_configured_providers_map_to_adapters():
    config = WebSearchConfig(
        providers=[
            WebSearchProviderSpec(id="mine", provider=WebSearchProviderKind.SEARXNG, base_url="http://searx:8080"),
            WebSearchProviderSpec(id="tv", provider=WebSearchProviderKind.TAVILY, api_key="k"),
            WebSearchProviderSpec(id="br", provider=WebSearchProviderKind.BRAVE, api_key="k"),
        ],
        default_provider_id="tv",
    )
    registry = register_configured_providers(WebSearchRegistry(), config)
    assert registry.default_id == "tv"
    assert isinstance(registry.get("mine"), SearxngProvider)
    tavily = registry.get("tv")
    assert isinstance(tavily, TavilyProvider)
    assert tavily.base_url == "https://api.tavily.com"
    brave = registry.get("br")
    assert isinstance(brave, BraveProvider)
    assert brave.base_url == "https://api.search.brave.com"


def test_searxng_needs_a_base_url():
    with pytest.raises(ValueError, match="base_url"):
        build_provider(WebSearchProviderSpec(id="s", provider=WebSearchProviderKind.SEARXNG))


# --- the web branch's service


def test_service_searches_the_rewritten_query_with_the_chosen_provider(make_request):
    registry, built = registry_of("searx", "tavily", default="searx")
    service = WebSearchService(registry, max_results=4, choose=lambda cm: ("", "tavily"))
    cm = ChatManage.start(make_request(web_search_enabled=True))
    cm.state.rewrite_query = "rewritten question"
    assert service.should_search(cm)
    results = asyncio.run(service.search(cm))
    assert built["tavily"].queries == [("rewritten question", 4)]
    assert built["searx"].queries == []
    assert [r.id for r in results] == [f"https://tavily.example/{i}" for i in range(3)]
    assert all(r.is_web and r.match_type == MatchType.WEB_SEARCH for r in results)
    assert results[0].metadata["web_provider"] == "tavily"


def test_service_is_off_without_the_flag_or_any_provider(make_request):
    on = ChatManage.start(make_request(web_search_enabled=True))
    off = ChatManage.start(make_request(web_search_enabled=False))
    registry, _ = registry_of("searx")
    assert not WebSearchService(registry).should_search(off)
    assert not WebSearchService(WebSearchRegistry()).should_search(on)
    assert asyncio.run(WebSearchService(WebSearchRegistry()).search(on)) == []


def test_search_source_and_web_count(make_request):
    assert search_source(make_request(knowledge_base_ids=("kb",))) == SearchSource.KNOWLEDGE
    assert search_source(make_request(web_search_enabled=True)) == SearchSource.WEB
    assert search_source(make_request(knowledge_base_ids=("kb",), web_search_enabled=True)) == SearchSource.MIXED
    registry, _ = registry_of("searx")
    results = asyncio.run(WebSearchService(registry).search(ChatManage.start(make_request(web_search_enabled=True))))
    assert web_count(results) == 3
