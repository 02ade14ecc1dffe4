"""The words of a question and of a sentence, as the extractive answerer compares them.

English: lower case, a light suffix stemmer (so "charge", "charged" and "charging" meet), stop words out.
Chinese: jieba's search segmentation (words and their parts), function words out. Numbers are kept whole
("1858", "65"), since a question about a year or an amount often names one.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from ragline.text.segmentation import cut_for_search, has_han
from ragline.text.stopwords import ANSWER_STOPWORDS_EN, ANSWER_STOPWORDS_ZH, QUESTION_WORDS_EN

_HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_LATIN = re.compile(r"[0-9]+(?:[.,][0-9]+)*|[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)

# Irregular verb forms a question and its answer often put differently ("Who wrote ..." / "... has written",
# "When did she become ..." / "... became"): each meets its base form. Forms that are also other words
# ("found", "left", "saw", "lead") are left out.
_IRREGULAR = {
    form: base
    for base, forms in {
        "become": "became",
        "begin": "began begun",
        "break": "broke broken",
        "bring": "brought",
        "build": "built",
        "buy": "bought",
        "choose": "chose chosen",
        "come": "came",
        "die": "died dies",
        "draw": "drew drawn",
        "eat": "ate eaten",
        "fall": "fell fallen",
        "fight": "fought",
        "fly": "flew flown",
        "give": "gave given",
        "grow": "grew grown",
        "hold": "held",
        "know": "knew known",
        "make": "made",
        "meet": "met",
        "pay": "paid",
        "rise": "rose risen",
        "run": "ran",
        "sell": "sold",
        "send": "sent",
        "sing": "sang sung",
        "speak": "spoke spoken",
        "spend": "spent",
        "stand": "stood",
        "strike": "struck",
        "take": "took taken",
        "teach": "taught",
        "tell": "told",
        "think": "thought",
        "win": "won",
        "write": "wrote written",
    }.items()
    for form in forms.split()
}


@lru_cache(maxsize=4096)
def stem(word: str) -> str:
    """A light English stemmer.

    Plural, -ing, -ed, -ly and a final e; enough to match inflections (and the common irregular verbs).
    """
    w = word.lower().replace("'s", "").replace("’s", "")
    w = _IRREGULAR.get(w, w)
    if len(w) <= 3 or not w.isalpha():
        return w
    for suffix, replacement in (("sses", "ss"), ("ies", "y"), ("ied", "y")):
        if w.endswith(suffix):
            return w[: -len(suffix)] + replacement
    if w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ingly", "edly", "ing", "ed", "ly"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and re.search(r"[aeiouy]", w[: -len(suffix)]):
            w = w[: -len(suffix)]
            if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "lsz":  # stopped → stop
                w = w[:-1]
            break
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    return w


def terms(text: str, *, drop_question_words: bool = False) -> list[str]:
    """The content terms of ``text`` in order (repeats kept)."""
    return list(_terms(text, drop_question_words))


@lru_cache(maxsize=16384)
def _terms(text: str, drop_question_words: bool) -> tuple[str, ...]:
    """The terms of :func:`terms`, cached: the same passages come back question after question."""
    out: list[str] = []
    lowered = text.lower()
    position = 0
    for run in _HAN_RUN.finditer(lowered):
        out.extend(_latin_terms(lowered[position : run.start()], drop_question_words))
        out.extend(w for w in cut_for_search(run.group(0)) if w not in ANSWER_STOPWORDS_ZH)
        position = run.end()
    out.extend(_latin_terms(lowered[position:], drop_question_words))
    return tuple(out)


def fold_accents(text: str) -> str:
    """Accents dropped: "Beyoncé" and "Beyonce", "Frédéric" and "Frederic" are one word to a reader typing a question."""
    if text.isascii():
        return text
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def _latin_terms(text: str, drop_question_words: bool) -> list[str]:
    words = _LATIN.findall(fold_accents(text))
    return [
        stem(w) if w[0].isalpha() else w.replace(",", "")
        for w in words
        if w not in ANSWER_STOPWORDS_EN
        and not (drop_question_words and w in QUESTION_WORDS_EN)
        and (len(w) > 1 or w.isdigit())
    ]


def is_chinese(text: str) -> bool:
    """True when ``text`` holds any Han character: the question is read as Chinese."""
    return has_han(text)
