"""Query intents as classified by query understanding, and what each one needs."""

from __future__ import annotations

from enum import StrEnum


class QueryIntent(StrEnum):
    """The nine intents; the empty intent (classification failed or absent) is represented by ``""``."""

    KB_SEARCH = "kb_search"
    WEB_SEARCH = "web_search"
    GREETING = "greeting"
    CHITCHAT = "chitchat"
    FOLLOW_UP = "follow_up"
    IMAGE_ONLY = "image_only"
    DOC_ONLY = "doc_only"
    SUMMARIZE = "summarize"
    CLARIFICATION = "clarification"


_KNOWN = {intent.value for intent in QueryIntent}

# An unclassified question still searches: failing to understand must not mean failing to answer.
_KB_RETRIEVAL_INTENTS = frozenset({"kb_search", "clarification", "summarize", ""})


def normalize_query_intent(raw: str | None) -> str:
    """Lower-case, trim, map ``-`` and spaces to ``_``; anything outside the nine intents becomes ``""``.

    ``"KB-Search"`` → ``"kb_search"``, ``" Web Search "`` → ``"web_search"``, ``"weather"`` → ``""``.
    """
    if not raw:
        return ""
    value = raw.strip().lower().replace("-", "_").replace(" ", "_")
    return value if value in _KNOWN else ""


def needs_kb_retrieval(intent: str) -> bool:
    """True for kb_search, clarification, summarize and the empty intent."""
    return normalize_query_intent(intent) in _KB_RETRIEVAL_INTENTS


def needs_retrieval(intent: str, web_search_enabled: bool) -> bool:
    """A web_search intent retrieves only when web search is on; otherwise as :func:`needs_kb_retrieval`."""
    if normalize_query_intent(intent) == QueryIntent.WEB_SEARCH:
        return web_search_enabled
    return needs_kb_retrieval(intent)
