"""Sentences of a passage, with their offsets, for English, Chinese and mixed text.

A sentence ends at ``.``, ``!`` or ``?`` followed by a space and a capital, digit or quote (not after a known
abbreviation, an initial or a number's decimal point), at ``。！？；`` in Chinese, and at every line break
(a heading, a list item and a table row are units of their own). Markdown markers at the start of a line
(``#``, ``-``, ``>``, ``|``) are not part of the sentence. A unit longer than ``MAX_CHARS`` is cut at ``;``
or ``,`` so that one quote stays short.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_CHARS = 400
_ABBREVIATIONS = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "dr",
        "st",
        "fr",
        "jr",
        "sr",
        "prof",
        "rev",
        "gen",
        "col",
        "lt",
        "sgt",
        "vs",
        "etc",
        "no",
        "nos",
        "vol",
        "fig",
        "eg",
        "ie",
        "al",
        "inc",
        "ltd",
        "co",
        "corp",
        "dept",
        "est",
        "approx",
        "ca",
        "cf",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "mt",
        "ft",
    ]
)
_END = re.compile(r"([.!?…]+[\"”’')\]]*)(\s+)(?=[\"“‘'(\[]?[A-Z0-9À-Þ])|([。！？；]+[”’」』）]*)")
_LINE_MARK = re.compile(r"^\s*(?:#{1,6}\s+|[-*+•]\s+|>\s*|\d{1,3}[.)]\s+|\|\s*)")
_CUT = re.compile(r"(?<=[;；,，])\s*")


@dataclass(frozen=True)
class Span:
    """A sentence's text with its character offsets in the passage (``end`` exclusive)."""

    start: int
    end: int
    text: str


def _is_abbreviation(text: str, dot: int) -> bool:
    """Whether the ``.`` at ``dot`` closes an abbreviation or an initial rather than a sentence."""
    match = re.search(r"([A-Za-z]+)\.?$", text[max(0, dot - 12) : dot])
    if match is None:
        return False
    word = match.group(1)
    if len(word) == 1:  # an initial: "J. Smith", "U.S."
        return True
    return word.lower() in _ABBREVIATIONS


def _split_line(line: str, offset: int) -> list[Span]:
    spans: list[Span] = []
    start = 0
    for match in _END.finditer(line):
        if match.group(1) is not None:
            dot = match.start(1)
            if match.group(1).startswith(".") and _is_abbreviation(line, dot):
                continue
            end = match.end(1)
            following = match.end()
        else:
            end = following = match.end(3)
        spans.append(Span(offset + start, offset + end, line[start:end]))
        start = following
    if start < len(line):
        spans.append(Span(offset + start, offset + len(line), line[start:]))
    return spans


def _cut_long(span: Span) -> list[Span]:
    if len(span.text) <= MAX_CHARS:
        return [span]
    pieces: list[Span] = []
    start = 0
    for match in _CUT.finditer(span.text):
        if match.start() - start >= MAX_CHARS // 2:
            pieces.append(Span(span.start + start, span.start + match.start(), span.text[start : match.start()]))
            start = match.end()
    pieces.append(Span(span.start + start, span.end, span.text[start:]))
    return pieces


def split_sentences(text: str) -> list[Span]:
    """The sentences of ``text`` as spans (offsets into ``text``; ``span.text == text[start:end]``)."""
    spans: list[Span] = []
    offset = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        mark = _LINE_MARK.match(body)
        skip = mark.end() if mark else 0
        content = body[skip:]
        if content.strip().startswith("|") or content.rstrip().endswith("|"):
            content = content.rstrip().rstrip("|")  # a table row: one unit
        for span in _split_line(content, offset + skip):
            stripped = span.text.strip()
            if not stripped:
                continue
            lead = len(span.text) - len(span.text.lstrip())
            start = span.start + lead
            spans.extend(_cut_long(Span(start, start + len(stripped), stripped)))
        offset += len(line)
    return spans
