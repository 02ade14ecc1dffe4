"""Web search behind one port: SearXNG, Tavily and Brave adapters, a registry, and the conversion to results.

The seed's CHUNK_SEARCH has a web branch (``searchWebIfEnabled``): when web search is on, the provider chosen
by the agent (or session), else by the tenant, else the process default, answers the rewritten query, and its
hits become :class:`SearchResult` s whose id is the page URL and whose ``knowledge_source`` is
``"web_search"``. Everything after search tells web results apart by that (``SearchResult.is_web``): the
composite score weighs them 0.95, WEB_FETCH replaces their snippets with page text, and the model context
aliases them ``wN`` by URL.

Wire formats, and where they were read:

- SearXNG — https://docs.searxng.org/dev/search_api.html: ``GET {base}/search?q=…&format=json``; results in
  ``results[]`` with ``url``, ``title``, ``content``. A format the instance has not enabled in
  ``search.formats`` answers ``403 Forbidden`` (many public instances disable JSON). The API has no
  result-count parameter: one page (~20) comes back.
- Tavily — https://help.tavily.com/articles/4840311948-tavily-search-api (``POST https://api.tavily.com/search``
  with ``Authorization: Bearer tvly-…``) and the official SDK ``tavily-python`` (body fields ``query``,
  ``max_results``, ``search_depth``, ``include_*``; ``results[]`` with ``url``, ``title``, ``content``,
  ``score``; errors ``{"detail": {"error": …}}`` — 400 bad request, 401 invalid key, 429 rate limit, 403/432/433
  forbidden or plan limit). ``max_results`` goes up to 20.
- Brave — https://api-dashboard.search.brave.com/docs (``GET https://api.search.brave.com/res/v1/web/search
  ?q=…`` with ``X-Subscription-Token``; the ``WebSearchApiResponse`` model: ``web.results[]`` with ``url``,
  ``title``, ``description``, query terms marked up with ``<strong>``) and its error model
  (``{"type": "ErrorResponse", "error": {"code", "detail", "status"}}``; a bad key is a 422
  ``SUBSCRIPTION_TOKEN_INVALID``, not a 401). ``count`` goes up to 20.

Provider base URLs are operator configuration, not user input: a self-hosted SearXNG on localhost or the
intranet is the common deployment, so they are not subject to the SSRF policy of :mod:`ragline.web.fetch`.
Result URLs *are* untrusted and are only ever fetched through that policy.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urldefrag, urlsplit

import httpx
from pydantic import BaseModel, Field

from ragline.registry import LazyRegistry
from ragline.types import ChunkType, MatchType, SearchResult
from ragline.web.ssrf import WEB_SCHEMES

logger = logging.getLogger(__name__)

# The value every later stage matches on (``SearchResult.is_web``); also the seed's KnowledgeSource.
WEB_KNOWLEDGE_SOURCE = "web_search"
# Tavily's documented default result count; the web branch asks for this many unless configured otherwise.
DEFAULT_MAX_RESULTS = 5
# Brave's documented ceiling for ``count`` and Tavily's for ``max_results``; SearXNG pages hold ~20 as well.
PROVIDER_MAX_RESULTS = 20
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_CONNECT_TIMEOUT_S = 5.0
TAVILY_BASE_URL = "https://api.tavily.com"
BRAVE_BASE_URL = "https://api.search.brave.com"
BRAVE_SEARCH_PATH = "/res/v1/web/search"
SEARXNG_SEARCH_PATH = "/search"
TAVILY_SEARCH_PATH = "/search"
# Metadata keys a web result carries, for diagnostics and display.
PROVIDER_KEY = "web_provider"
RANK_KEY = "web_rank"
PROVIDER_SCORE_KEY = "web_provider_score"
SNIPPET_KEY = "web_snippet"
# An error body is quoted in the exception message at most this long: enough to read, never a whole page.
ERROR_EXCERPT_CHARS = 200
_TAG = re.compile(r"<[^>]{0,200}>")
_SPACE = re.compile(r"\s+")


class WebSearchError(Exception):
    """A provider could not answer.

    Unreachable, timed out, rejected the key, rate-limited, or sent something that is not its documented format. The web
    branch logs it and carries on (the seed swallows web errors: a failed web search must not cost the user the
    knowledge-base answer).
    """

    error_type = "web_search_failed"

    def __init__(self, provider: str, message: str, status_code: int | None = None) -> None:
        """``provider``'s failure, with the HTTP status when there was one."""
        super().__init__(f"{provider}: {message}")
        self.provider = provider
        self.status_code = status_code


class UnknownWebSearchProvider(WebSearchError):
    """A request, agent or tenant names a provider this process does not have."""

    error_type = "unknown_web_search_provider"


@dataclass(frozen=True)
class WebHit:
    """One provider hit, before conversion.

    ``score`` is the provider's own relevance in [0, 1] when it gives one (Tavily); None otherwise, and the rank
    decides.
    """

    url: str
    title: str
    snippet: str
    score: float | None = None


@runtime_checkable
class WebSearchProvider(Protocol):
    """The port: a query in, at most ``max_results`` hits out, best first. Raises :class:`WebSearchError`."""

    async def search(self, query: str, max_results: int) -> list[WebHit]:
        """At most ``max_results`` hits for ``query``; :class:`WebSearchError` when the provider fails."""
        ...


class HttpProviderSettings(BaseModel):
    """Timeouts every HTTP adapter applies: a slow provider must not hold the search stage."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S


class _HttpProvider:
    """One ``httpx.AsyncClient`` per call.

    Providers are called a few times per turn, and a client bound to no event loop survives the serverless runtime
    running each stage in a fresh loop.
    """

    name = "web"

    def __init__(
        self,
        base_url: str,
        *,
        settings: HttpProviderSettings | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._settings = settings if settings is not None else HttpProviderSettings()
        self._transport = transport

    def _client(self) -> httpx.AsyncClient:
        settings = self._settings
        timeout = httpx.Timeout(settings.timeout_s, connect=min(settings.connect_timeout_s, settings.timeout_s))
        # trust_env off: a proxy from the environment should not silently receive API keys and queries.
        return httpx.AsyncClient(timeout=timeout, transport=self._transport, trust_env=False)

    async def _send(self, request: Callable[[httpx.AsyncClient], Awaitable[httpx.Response]]) -> Any:
        """Run ``request`` and return the decoded JSON body; every failure becomes a :class:`WebSearchError`."""
        try:
            async with self._client() as client:
                response = await request(client)
        except httpx.TimeoutException as exc:
            raise WebSearchError(self.name, f"timed out ({type(exc).__name__})") from exc
        except httpx.HTTPError as exc:
            raise WebSearchError(self.name, f"request failed: {type(exc).__name__}: {exc}") from exc
        if response.status_code != httpx.codes.OK:
            raise WebSearchError(
                self.name,
                f"HTTP {response.status_code}: {self._error_detail(response)}",
                status_code=response.status_code,
            )
        try:
            return response.json()
        except ValueError as exc:
            raise WebSearchError(self.name, "the answer is not JSON") from exc

    def _error_detail(self, response: httpx.Response) -> str:
        """The provider's own words when its error body has the documented shape, else the start of the body."""
        try:
            body = response.json()
        except ValueError:
            return response.text[:ERROR_EXCERPT_CHARS]
        return self._detail_from(body) or response.text[:ERROR_EXCERPT_CHARS]

    @staticmethod
    def _detail_from(body: Any) -> str:
        return ""


def plain_text(text: object) -> str:
    """Snippet text as the model should read it.

    Markup (Brave's ``<strong>``) dropped, entities decoded, whitespace collapsed.
    """
    if not isinstance(text, str):
        return ""
    return _SPACE.sub(" ", html.unescape(_TAG.sub("", text))).strip()


def is_web_url(url: str) -> bool:
    """Only http(s) pages with a host become results.

    A provider hit like ``javascript:`` or ``file:`` is never passed on to be cited or fetched.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme.lower() in WEB_SCHEMES and bool(parts.hostname)


def _hits(rows: object, snippet_key: str, score_key: str | None, max_results: int) -> list[WebHit]:
    """Hits from a provider's result rows, skipping rows without a usable URL, in the provider's order."""
    if not isinstance(rows, list):
        return []
    hits: list[WebHit] = []
    for row in rows:
        if not isinstance(row, dict):
            continue
        url = row.get("url")
        if not isinstance(url, str) or not is_web_url(url.strip()):
            continue
        score: float | None = None
        if score_key is not None:
            raw = row.get(score_key)
            if isinstance(raw, int | float) and not isinstance(raw, bool):
                score = float(raw)
        hits.append(WebHit(url.strip(), plain_text(row.get("title")), plain_text(row.get(snippet_key)), score))
        if len(hits) >= max_results:
            break
    return hits


def _limit(max_results: int) -> int:
    return max(1, min(max_results, PROVIDER_MAX_RESULTS))


class SearxngProvider(_HttpProvider):
    """A SearXNG instance's JSON API (the instance must list ``json`` under ``search.formats``).

    SearXNG's own ``score`` sums engine weights over positions and is not on [0, 1], so it is not used as a
    relevance score (it would saturate the composite); hits are scored by rank like Brave's.
    """

    name = "searxng"

    async def search(self, query: str, max_results: int) -> list[WebHit]:
        """Hits from SearXNG's JSON API (one page, cut to ``max_results``)."""
        params = {"q": query, "format": "json", "pageno": "1"}
        body = await self._send(lambda client: client.get(f"{self.base_url}{SEARXNG_SEARCH_PATH}", params=params))
        if not isinstance(body, dict) or not isinstance(body.get("results"), list):
            raise WebSearchError(self.name, "no result list at results[]")
        # The API has no count parameter: one page comes back and is cut here.
        return _hits(body["results"], "content", None, _limit(max_results))


class _KeyedProvider(_HttpProvider):
    """A provider that needs an API key; ``base_url`` defaults to the service's public endpoint."""

    default_base_url = ""

    def __init__(
        self,
        api_key: str,
        base_url: str | None = None,
        *,
        settings: HttpProviderSettings | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(base_url or self.default_base_url, settings=settings, transport=transport)
        self._api_key = api_key


class TavilyProvider(_KeyedProvider):
    """Tavily's Search endpoint. Its ``score`` is a relevance in [0, 1] and is kept."""

    name = "tavily"

    default_base_url = TAVILY_BASE_URL

    async def search(self, query: str, max_results: int) -> list[WebHit]:
        """Hits from Tavily's search API."""
        payload = {
            "query": query,
            "max_results": _limit(max_results),
            "search_depth": "basic",
            "include_answer": False,
            "include_raw_content": False,
            "include_images": False,
        }
        # The current docs authenticate with a Bearer header (older clients sent ``api_key`` in the body); the
        # header also keeps the key out of any logged request body.
        headers = {"Authorization": f"Bearer {self._api_key}"}
        body = await self._send(
            lambda client: client.post(f"{self.base_url}{TAVILY_SEARCH_PATH}", json=payload, headers=headers)
        )
        if not isinstance(body, dict) or not isinstance(body.get("results"), list):
            raise WebSearchError(self.name, "no result list at results[]")
        return _hits(body["results"], "content", "score", _limit(max_results))

    @staticmethod
    def _detail_from(body: Any) -> str:
        detail = body.get("detail") if isinstance(body, dict) else None
        if isinstance(detail, dict) and isinstance(detail.get("error"), str):
            return str(detail["error"])
        return detail if isinstance(detail, str) else ""


class BraveProvider(_KeyedProvider):
    """Brave's Web Search API. It gives no relevance score: hits are scored by rank."""

    name = "brave"

    default_base_url = BRAVE_BASE_URL

    async def search(self, query: str, max_results: int) -> list[WebHit]:
        """Hits from Brave's web search API (none when Brave omits ``web``)."""
        params = {"q": query, "count": str(_limit(max_results))}
        headers = {"Accept": "application/json", "X-Subscription-Token": self._api_key}
        body = await self._send(
            lambda client: client.get(f"{self.base_url}{BRAVE_SEARCH_PATH}", params=params, headers=headers)
        )
        if not isinstance(body, dict):
            raise WebSearchError(self.name, "the answer is not a JSON object")
        web = body.get("web")
        if web is None:
            # Brave omits ``web`` when nothing matched; an answer without it is "no results", not a failure.
            return []
        if not isinstance(web, dict) or not isinstance(web.get("results"), list):
            raise WebSearchError(self.name, "no result list at web.results[]")
        return _hits(web["results"], "description", None, _limit(max_results))

    @staticmethod
    def _detail_from(body: Any) -> str:
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict):
            code, detail = error.get("code"), error.get("detail")
            return ": ".join(str(part) for part in (code, detail) if part)
        return ""


# --- choosing a provider


class WebSearchRegistry(LazyRegistry[WebSearchProvider]):
    """Provider id → factory, built on first use.

    The default answers requests whose agent and tenant name no provider; with no default and no named provider the web
    branch has nothing to run. ``get`` raises :class:`UnknownWebSearchProvider` when no factory has that id.
    """

    def __init__(self) -> None:
        """An empty registry; an unknown provider id raises :class:`UnknownWebSearchProvider`."""
        super().__init__(
            lambda provider_id: UnknownWebSearchProvider(provider_id or "-", "no such web search provider")
        )

    def resolve(
        self, *, agent_provider_id: str = "", tenant_provider_id: str = ""
    ) -> tuple[str, WebSearchProvider] | None:
        """The provider for one request: the agent's (or session's) choice, else the tenant's, else the default.

        A named provider that does not exist is an error, not a reason to use another: a tenant that chose its
        own SearXNG for privacy must never have its queries sent to a commercial API instead. None means no
        provider at all is configured — web search is then simply off.
        """
        provider_id = choose_provider_id(agent_provider_id, tenant_provider_id, self.default_id)
        if not provider_id:
            return None
        return provider_id, self.get(provider_id)


def choose_provider_id(agent_provider_id: str, tenant_provider_id: str, default_id: str) -> str:
    """The most specific non-blank choice: agent/session, then tenant, then the process default."""
    for candidate in (agent_provider_id, tenant_provider_id, default_id):
        if candidate and candidate.strip():
            return candidate.strip()
    return ""


class WebSearchProviderKind(StrEnum):
    """Which adapter serves a configured provider."""

    SEARXNG = "searxng"
    TAVILY = "tavily"
    BRAVE = "brave"


class WebSearchProviderSpec(BaseModel):
    """One configured provider; ``base_url`` empty means the vendor's public endpoint (SearXNG needs one)."""

    id: str
    provider: WebSearchProviderKind
    base_url: str = ""
    api_key: str = ""
    timeout_s: float = DEFAULT_TIMEOUT_S


class WebSearchConfig(BaseModel):
    """Web search settings for ``AppConfig`` (the lead hooks it in)."""

    providers: list[WebSearchProviderSpec] = Field(default_factory=list)
    default_provider_id: str = ""
    max_results: int = DEFAULT_MAX_RESULTS


def build_provider(spec: WebSearchProviderSpec) -> WebSearchProvider:
    """The adapter for one spec; the only place that maps a provider kind to a class."""
    settings = HttpProviderSettings(timeout_s=spec.timeout_s)
    if spec.provider == WebSearchProviderKind.SEARXNG:
        if not spec.base_url:
            raise ValueError(f"web search provider {spec.id!r}: SearXNG needs base_url")
        return SearxngProvider(spec.base_url, settings=settings)
    if spec.provider == WebSearchProviderKind.TAVILY:
        return TavilyProvider(spec.api_key, spec.base_url, settings=settings)
    return BraveProvider(spec.api_key, spec.base_url, settings=settings)


def register_configured_providers(registry: WebSearchRegistry, config: WebSearchConfig) -> WebSearchRegistry:
    """A lazy factory per configured provider; ``default_provider_id`` (else the first) is the default."""
    for spec in config.providers:
        registry.add(spec.id, partial(build_provider, spec), default=spec.id == config.default_provider_id)
    return registry


# --- hits to search results


def rank_score(rank: int) -> float:
    """Score of the hit at 0-based ``rank`` when the provider gives none: 1/(1 + rank), so 1.0, 0.5, 0.33, and so on.

    The first hit sits at the top of the retrieval scale like hybrid search's best hit (normalised to 1), and
    the steep decay keeps the tail of a web page list below well-matched knowledge-base chunks.
    """
    return 1.0 / (1.0 + rank)


def result_id(url: str) -> str:
    """The URL without its fragment.

    Two hits on sections of one page are one page (as the citation registry's ``wN`` aliasing treats them).
    """
    return urldefrag(url).url


def to_search_results(hits: Sequence[WebHit], provider_id: str = "") -> list[SearchResult]:
    """Provider hits as search results, in the provider's order, one per page.

    ``score`` is the provider's relevance clamped to [0, 1] when it gave one, else :func:`rank_score` of the
    hit's rank among the kept hits. The snippet is the content until WEB_FETCH replaces it, and stays in
    ``metadata["web_snippet"]``.
    """
    results: list[SearchResult] = []
    seen: set[str] = set()
    for hit in hits:
        page_id = result_id(hit.url)
        if page_id in seen or not is_web_url(page_id):
            continue
        seen.add(page_id)
        rank = len(results)
        score = min(1.0, max(0.0, hit.score)) if hit.score is not None else rank_score(rank)
        metadata = {RANK_KEY: str(rank + 1), SNIPPET_KEY: hit.snippet}
        if provider_id:
            metadata[PROVIDER_KEY] = provider_id
        if hit.score is not None:
            metadata[PROVIDER_SCORE_KEY] = f"{hit.score:.4f}"
        results.append(
            SearchResult(
                id=page_id,
                url=hit.url,
                content=hit.snippet or hit.title,
                knowledge_title=hit.title or (urlsplit(page_id).hostname or page_id),
                knowledge_source=WEB_KNOWLEDGE_SOURCE,
                match_type=MatchType.WEB_SEARCH,
                chunk_type=ChunkType.WEB_SEARCH,
                score=score,
                metadata=metadata,
            )
        )
    return results
