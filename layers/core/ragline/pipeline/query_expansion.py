"""Query expansion without a model: local variants of the question searched by keyword only.

Triggered when the first recall is short (fewer hits than ``embedding_top_k``) and keyword search is on.
The variants (at most five): the question's keywords without stop words, quoted phrases, segments between
delimiters, and the question without its leading question word. Runs of Han characters are cut by jieba;
Latin runs stay whole. Each variant runs a keyword-only search at 0.8× the keyword threshold.
"""

from __future__ import annotations

import re

from ragline.text.segmentation import cut_for_search, has_han
from ragline.text.stopwords import EXPANSION_STOPWORDS_ZH, SEARCH_STOPWORDS_EN

MAX_VARIANTS = 5
MIN_VARIANT_BYTES = 3
MIN_SEGMENT_BYTES = 5
MIN_KEYWORDS = 2
MAX_CONCURRENCY = 16
KEYWORD_THRESHOLD_FACTOR = 0.8

_QUOTED = re.compile(r'"([^"]+)"|“([^”]+)”|「([^」]+)」|『([^』]+)』|\'([^\']{3,})\'')
_DELIMITERS = re.compile(r"[,;:?!。，；：？！、\n]+")
_RUNS = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|[^\W_]+", re.UNICODE)
_LEADING_QUESTION = re.compile(
    r"^\s*(?:what|how|why|when|where|who|whom|whose|which|is|are|was|were|does|do|did|can|could|should|would|will)"
    r"(?:\s+(?:is|are|was|were|does|do|did|the|a|an))*\s+",
    re.IGNORECASE,
)
_LEADING_QUESTION_ZH = re.compile(r"^\s*(?:什么是|什么|如何|怎么样|怎么|怎样|为什么|为何|哪些|哪个|是否|请问)")


def keywords(query: str) -> list[str]:
    """Words without stop words, in order: jieba words for Han runs, whole runs otherwise."""
    words: list[str] = []
    for run in _RUNS.findall(query):
        if has_han(run):
            words.extend(w for w in cut_for_search(run) if len(w) > 1 and w not in EXPANSION_STOPWORDS_ZH)
        elif run.lower() not in SEARCH_STOPWORDS_EN and len(run) > 1:
            words.append(run)
    return list(dict.fromkeys(words))


def expansion_variants(query: str) -> list[str]:
    """Up to five distinct variants (case-insensitive), none equal to the query, each at least 3 bytes."""
    candidates: list[str] = []
    found = keywords(query)
    if len(found) >= MIN_KEYWORDS:
        candidates.append(" ".join(found))
    for match in _QUOTED.finditer(query):
        candidates.append(next(group for group in match.groups() if group))
    segments = [s.strip() for s in _DELIMITERS.split(query) if s.strip()]
    if len(segments) > 1:
        candidates.extend(s for s in segments if len(s.encode("utf-8")) > MIN_SEGMENT_BYTES)
    stripped = _LEADING_QUESTION_ZH.sub("", _LEADING_QUESTION.sub("", query)).strip(" ?？")
    candidates.append(stripped)
    seen = {query.strip().lower()}
    variants: list[str] = []
    for candidate in candidates:
        candidate = candidate.strip()
        key = candidate.lower()
        if len(candidate.encode("utf-8")) < MIN_VARIANT_BYTES or key in seen:
            continue
        seen.add(key)
        variants.append(candidate)
        if len(variants) == MAX_VARIANTS:
            break
    return variants
