"""How memory text is compared: exact duplicates, keyword overlap, and the text that gets embedded."""

from __future__ import annotations

import re

from ragline.text.segmentation import normalize_content, tokenize_simple
from ragline.text.stopwords import MEMORY_STOPWORDS

# Suffixes folded so "works" meets "work" and "likes" meets "like"; longer words only, so "is" stays.
_MIN_FOLDED_LENGTH = 4
_TRAILING_PUNCTUATION = ".,;:!?。，；：！？ "

# The third-person memory ("The user works at Acme") turned back into what the user would have said
# ("I work at Acme"): questions are asked in the first person, and a small embedding model scores
# "Where do I work?" against "I work at Acme" twice as high as against "The user works at Acme".
_POSSESSIVE_SUBJECT = re.compile(r"^the user's\s+", re.IGNORECASE)
_SUBJECT_VERB = re.compile(r"^the user\s+(\S+)", re.IGNORECASE)
_IRREGULAR_FIRST_PERSON = {"is": "am", "was": "was", "has": "have", "does": "do", "goes": "go"}


def normalise_memory(text: str) -> str:
    """Lower-case, whitespace collapsed, trailing punctuation dropped.

    "The user lives in Berlin." and "the user lives in  Berlin" are the same memory.
    """
    return normalize_content(text).rstrip(_TRAILING_PUNCTUATION)


def _fold(token: str) -> str:
    if len(token) < _MIN_FOLDED_LENGTH or not token.isascii():
        return token
    if token.endswith("ies"):
        return token[:-3] + "y"
    if token.endswith("s") and not token.endswith("ss"):
        return token[:-1]
    return token


def keywords(text: str) -> set[str]:
    """The words of ``text`` that can tell memories apart (Chinese segmented by jieba)."""
    return {_fold(token) for token in tokenize_simple(text) if token not in MEMORY_STOPWORDS}


def keyword_overlap(query_keywords: set[str], memory_text: str) -> float:
    """The share of the question's keywords found in the memory, 0..1 (0 when the question has none)."""
    if not query_keywords:
        return 0.0
    return len(query_keywords & keywords(memory_text)) / len(query_keywords)


def _first_person_verb(verb: str) -> str:
    lowered = verb.lower()
    if lowered in _IRREGULAR_FIRST_PERSON:
        return _IRREGULAR_FIRST_PERSON[lowered]
    if lowered.endswith("ies") and len(lowered) > _MIN_FOLDED_LENGTH:
        return verb[:-3] + "y"
    if lowered.endswith("s") and not lowered.endswith("ss"):
        return verb[:-1]
    return verb


def embedding_text(content: str) -> str:
    """The text to embed for a memory.

    Its first-person form where it follows the "The user ..." shape, else the content unchanged. Only the vector sees
    this text; the memory keeps its content.
    """
    stripped = content.strip()
    if _POSSESSIVE_SUBJECT.match(stripped):
        return _POSSESSIVE_SUBJECT.sub("My ", stripped, count=1)
    match = _SUBJECT_VERB.match(stripped)
    if match is None:
        return stripped
    return f"I {_first_person_verb(match.group(1))}{stripped[match.end() :]}"
