"""Whether a rewrite still looks like the question it rewrites.

A small model asked to rewrite sometimes answers with a line of its own prompt ("Conversation so far:")
or with something unrelated; searching for that finds nothing the user asked about. A rewrite is kept only
if it shares at least one content word with the question or the conversation (every Han character counts
as one, so Chinese needs no segmentation to match), and is not one of the prompt's own lines. Otherwise the
original question is searched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ragline.text.segmentation import tokenize_simple
from ragline.text.stopwords import REWRITE_QUESTION_WORDS_EN, SEARCH_STOPWORDS_EN, TOPICLESS_HAN
from ragline.types import History

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_EDGES = " \t\r\n\"'“”‘’`*#>:：.。?？!！-"

REJECT_PROMPT_LINE = "echoes_prompt"
REJECT_UNRELATED = "unrelated"


def _fold(word: str) -> str:
    if len(word) > 3 and word.isascii() and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def content_words(text: str) -> set[str]:
    """Lower-cased words that say what a text is about (plurals folded), and its topical Han characters."""
    words = {
        _fold(token)
        for token in tokenize_simple(text)
        if not _HAN.search(token) and token not in SEARCH_STOPWORDS_EN and token not in REWRITE_QUESTION_WORDS_EN
    }
    words.update(ch for ch in _HAN.findall(text) if ch not in TOPICLESS_HAN)
    return words


def _normalised(line: str) -> str:
    return " ".join(line.strip(_EDGES).lower().split())


def rewrite_rejection(
    rewrite: str,
    query: str,
    history: Sequence[History],
    prompt_texts: Iterable[str] = (),
    seen: Iterable[str] = (),
) -> str | None:
    """``None`` to use ``rewrite``; else why the original ``query`` should be searched instead.

    ``seen``: other text the rewrite may draw on (the description of images the model was shown).
    """
    said = _normalised(rewrite)
    user_lines = {_normalised(query)} | {_normalised(h.query) for h in history}
    prompt_lines = {_normalised(line) for text in prompt_texts for line in text.splitlines()}
    if said and said in prompt_lines - user_lines:
        return REJECT_PROMPT_LINE
    source = content_words(query)
    for round_ in history:
        source |= content_words(round_.query) | content_words(round_.answer)
    for text in seen:
        source |= content_words(text)
    if source and not content_words(rewrite) & source:
        return REJECT_UNRELATED
    return None
