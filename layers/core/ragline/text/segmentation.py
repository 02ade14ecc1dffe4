"""How text is cut into words: Han runs by jieba, the rest by word runs (the seed's searchutil).

Shared by ingestion, search, ranking, merging, memory and the extractive answerer; imports nothing of ragline.
"""

from __future__ import annotations

import hashlib
import re
import threading
from functools import lru_cache

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_WORD = re.compile(r"[\w\u00c0-\uffff]+", re.UNICODE)
_WS = re.compile(r"\s+")
_jieba_lock = threading.Lock()


def has_han(text: str) -> bool:
    """True when ``text`` holds any Han (Chinese) character."""
    return _HAN.search(text) is not None


@lru_cache(maxsize=1)
def _jieba() -> object:
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    with _jieba_lock:
        jieba.initialize()
    return jieba


def cut_for_search(text: str) -> list[str]:
    """The search segmentation of jieba (fine-grained, overlapping words) for a run of Han characters."""
    jieba = _jieba()
    return [w for w in jieba.cut_for_search(text, HMM=True) if w.strip()]  # type: ignore[attr-defined]


def segment_for_index(text: str) -> str:
    """Text for a keyword index: Han runs cut into words by jieba, other text unchanged.

    FTS5's unicode61 tokenizer treats a run of Han characters as one token, so unsegmented Chinese is never
    found by a query word.
    """
    if not has_han(text):
        return text
    return _HAN_RUN.sub(lambda m: " " + " ".join(cut_for_search(m.group(0))) + " ", text)


def is_punct_only(token: str) -> bool:
    """True when ``token`` has no letter or digit."""
    return not any(ch.isalnum() for ch in token)


def tokenize_simple(text: str) -> set[str]:
    """The seed's TokenizeSimple.

    Lower-case; Han runs through jieba; otherwise word runs; tokens longer than one character that are not all
    punctuation; as a set.
    """
    lowered = text.lower()
    tokens: set[str] = set()
    position = 0
    for run in _HAN_RUN.finditer(lowered):
        tokens.update(_WORD.findall(lowered[position : run.start()]))
        tokens.update(cut_for_search(run.group(0)))
        position = run.end()
    tokens.update(_WORD.findall(lowered[position:]))
    return {t for t in tokens if len(t) > 1 and not is_punct_only(t)}


def normalize_content(text: str) -> str:
    """Lower-case with whitespace collapsed: the basis of content signatures and containment checks."""
    return _WS.sub(" ", text.lower()).strip()


def content_signature(text: str) -> str:
    """md5 of the normalised content: equal passages from different chunks dedupe to one."""
    return hashlib.md5(normalize_content(text).encode("utf-8")).hexdigest()
