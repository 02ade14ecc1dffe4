"""WEB_FETCH: the best-ranked web results get their page text instead of the provider's snippet.

Runs after CHUNK_RERANK and before CHUNK_MERGE, so fetching costs time only for pages that ranked well. Only
when the request has both ``web_fetch_enabled`` and ``web_search_enabled``. Takes the first
``web_fetch_top_n`` (default 3) web results of ``rerank_result`` — or of ``search_result`` when rerank left
none (no model configured) — in ranking order, fetches them in parallel through the SSRF-safe fetcher, and
replaces each one's ``content`` with the page's readable text (at most 8,000 bytes).

The stage never fails the turn: a refused URL, a dead page or a timeout leaves that result's snippet in place.
Each attempted result says what happened in its metadata: ``web_fetched`` ``"true"``/``"false"`` and
``web_fetch_reason`` (``"ok"`` or a :class:`ragline.web.fetch.FetchFailure` value, ``"error"`` for an
unexpected exception).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from ragline.pipeline.plugin import NextFn, PluginError
from ragline.types import ChatManage, EventType, SearchResult
from ragline.web.fetch import FetchError, PageFetcher, SafePageFetcher, WebFetchConfig

logger = logging.getLogger(__name__)

STAGE = EventType.WEB_FETCH.value
DIAGNOSTICS_KEY = "web_fetch_diagnostics"
FETCHED_KEY = "web_fetched"
REASON_KEY = "web_fetch_reason"
ERROR_KEY = "web_fetch_error"
FINAL_URL_KEY = "web_fetch_url"
TRUNCATED_KEY = "web_fetch_truncated"
REASON_OK = "ok"
REASON_UNEXPECTED = "error"
# An error message kept in metadata is cut here: metadata travels with the result to the client.
ERROR_MESSAGE_CHARS = 200


@dataclass
class WebFetchDiagnostics:
    """What the stage did this turn; left in ``cm.context.extras[DIAGNOSTICS_KEY]`` and logged once."""

    attempted: int = 0
    fetched: int = 0
    failures: dict[str, str] = field(default_factory=dict)


def top_web_indexes(results: list[SearchResult], top_n: int) -> list[int]:
    """Positions of the first ``top_n`` web results, in ranking order."""
    return [index for index, result in enumerate(results) if result.is_web][: max(0, top_n)]


class PluginWebFetch:
    """Replaces the top web results' snippets with their pages' text.

    ``fetcher`` defaults to the SSRF-safe :class:`ragline.web.fetch.SafePageFetcher` built from ``config``.
    """

    def __init__(self, config: WebFetchConfig | None = None, fetcher: PageFetcher | None = None) -> None:
        """A fetch stage with ``config``'s limits, through ``fetcher`` (the SSRF-safe fetcher by default)."""
        self._config = config if config is not None else WebFetchConfig()
        self._fetcher = fetcher if fetcher is not None else SafePageFetcher(self._config)

    def activation_events(self) -> list[EventType]:
        """Runs at WEB_FETCH."""
        return [EventType.WEB_FETCH]

    async def on_event(self, event_type: EventType, cm: ChatManage, next: NextFn) -> PluginError | None:
        """Replace the top web results' snippets with their pages' text, when web search and fetch are on."""
        request = cm.request
        if request.web_fetch_enabled and request.web_search_enabled:
            diagnostics = await self.fetch_top(cm)
            self._record(cm, diagnostics)
        return await next()

    async def fetch_top(self, cm: ChatManage) -> WebFetchDiagnostics:
        """Fetch the top web results of the current ranking and update them in place."""
        state = cm.state
        results = state.rerank_result if state.rerank_result else state.search_result
        top_n = cm.request.web_fetch_top_n if cm.request.web_fetch_top_n > 0 else self._config.default_top_n
        # A result fetched by an earlier attempt of this stage (a retried serverless step) is not fetched twice.
        picks = [i for i in top_web_indexes(results, top_n) if results[i].metadata.get(FETCHED_KEY) != "true"]
        diagnostics = WebFetchDiagnostics(attempted=len(picks))
        if not picks:
            return diagnostics
        semaphore = asyncio.Semaphore(max(1, self._config.max_parallel))

        async def fetch_one(result: SearchResult) -> SearchResult:
            async with semaphore:
                return await self._fetch_result(result)

        updated = await asyncio.gather(*(fetch_one(results[i]) for i in picks))
        for index, result in zip(picks, updated, strict=True):
            results[index] = result
            if result.metadata.get(FETCHED_KEY) == "true":
                diagnostics.fetched += 1
            else:
                diagnostics.failures[result.url or result.id] = result.metadata.get(REASON_KEY, REASON_UNEXPECTED)
        return diagnostics

    async def _fetch_result(self, result: SearchResult) -> SearchResult:
        """A copy of ``result`` with the page text, or with the snippet and the reason it stayed."""
        url = result.url or result.id
        try:
            page = await self._fetcher.fetch(url)
        except FetchError as exc:
            return self._unfetched(result, exc.reason.value, str(exc))
        except Exception as exc:  # a fetcher bug must not cost the turn; cancellation still propagates
            logger.exception("web fetch of %s failed unexpectedly", url, extra={"stage": STAGE})
            return self._unfetched(result, REASON_UNEXPECTED, f"{type(exc).__name__}: {exc}")
        metadata = {
            **result.metadata,
            FETCHED_KEY: "true",
            REASON_KEY: REASON_OK,
            FINAL_URL_KEY: page.url,
            TRUNCATED_KEY: "true" if page.text_truncated or page.body_truncated else "false",
        }
        metadata.pop(ERROR_KEY, None)
        return result.model_copy(update={"content": page.text, "metadata": metadata})

    @staticmethod
    def _unfetched(result: SearchResult, reason: str, message: str) -> SearchResult:
        metadata = {
            **result.metadata,
            FETCHED_KEY: "false",
            REASON_KEY: reason,
            ERROR_KEY: message[:ERROR_MESSAGE_CHARS],
        }
        return result.model_copy(update={"metadata": metadata})

    @staticmethod
    def _record(cm: ChatManage, diagnostics: WebFetchDiagnostics) -> None:
        cm.context.extras[DIAGNOSTICS_KEY] = diagnostics
        logger.info(
            "web fetch attempted=%d fetched=%d failed=%s",
            diagnostics.attempted,
            diagnostics.fetched,
            ",".join(f"{url}:{reason}" for url, reason in diagnostics.failures.items()) or "-",
            extra={"stage": STAGE},
        )
