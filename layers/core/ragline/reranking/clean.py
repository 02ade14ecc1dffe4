"""CleanPassage: the text a rerank model scores, without Markdown's structural noise.

A rerank model measures semantic similarity; heading hashes, table pipes, image links and raw URLs only
dilute it. Code is different: inside a fenced block, tags, URLs and operators are the content (an XML
snippet, an API endpoint, ``a * b * c``), so a top-level fence keeps its body verbatim and only loses its
delimiter lines. The chunk's own content is never modified; this returns a new string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

# A top-level fence: at most three leading spaces (four make indented code), then three or more backticks
# or tildes. Lines inside quotes or list items start with ">" or a marker and never match.
_FENCE_OPEN = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_MAX_FENCE_INDENT = 3
# A fence that opens on a list item's line. It is not top-level, so its body is cleaned like prose, but its
# closing line is indented like the item's content and would otherwise be read as a new top-level fence.
_LIST_ITEM_FENCE = re.compile(r"^[ \t]*(?:[-*+]|\d+\.)[ \t]+(?P<fence>`{3,}|~{3,})")

# Fence bodies leave the prose as placeholders made of private-use characters, which none of the rules
# below can match, and come back verbatim at the end.
_PLACEHOLDER_OPEN = "\ue000"
_PLACEHOLDER_CLOSE = "\ue001"
_PLACEHOLDER = _PLACEHOLDER_OPEN + "{index}" + _PLACEHOLDER_CLOSE
_PLACEHOLDER_RE = re.compile(_PLACEHOLDER_OPEN + r"(\d+)" + _PLACEHOLDER_CLOSE)

# A URL with at most one level of balanced parentheses (Wikipedia links contain them).
_URL = r"[^()\s]*(?:\([^)]*\)[^()\s]*)*"

_LATEX_BLOCK = re.compile(r"\$\$(.*?)\$\$", re.DOTALL)
_HTML_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_LINKED_IMAGE = re.compile(rf"\[!\[([^\]]*)\]\(({_URL})\)\]\({_URL}\)")
_IMAGE = re.compile(rf"!\[[^\]]*\]\({_URL}\)")
_LINK = re.compile(rf"\[([^\]]+)\]\({_URL}\)")
_RAW_URL = re.compile(r"https?://[^\s)\]>]+")
# [ \t] rather than \s in the table rules: \s would run across rows.
_TABLE_SEPARATOR = re.compile(r"^[ \t]*\|[ \t:|-]+\|[ \t]*$", re.MULTILINE)
_TABLE_ROW = re.compile(r"^[ \t]*\|(.+?)\|[ \t]*$", re.MULTILINE)
# Heading, quote and list markers are followed by spaces or tabs only, so an empty marker line does not
# swallow the line break after it.
_HEADING = re.compile(r"^#{1,6}[ \t]+", re.MULTILINE)
_BLOCKQUOTE = re.compile(r"^[ \t]{0,3}(?:>[ \t]?)+", re.MULTILINE)
# Emphasis must hug its text (CommonMark's flanking rule): "* item" lines and "2 * 3 * 4" are not emphasis.
_BOLD_ITALIC = re.compile(r"\*{3}(?=\S)(.+?)(?<=\S)\*{3}")
_BOLD = re.compile(r"\*{2}(?=\S)(.+?)(?<=\S)\*{2}")
_ITALIC = re.compile(r"\*(?=\S)(.+?)(?<=\S)\*")
_LIST_MARKER = re.compile(r"^[ \t]*(?:[-*+]|\d+\.)[ \t]+", re.MULTILINE)
_EXCESS_NEWLINES = re.compile(r"\n{3,}")
_WHITESPACE_RUN = re.compile(r"\s+")
_PARAGRAPH_BREAK = "\n\n"


@dataclass(frozen=True)
class _Fence:
    char: str
    length: int

    def closed_by(self, line: str, max_indent: int | None = _MAX_FENCE_INDENT) -> bool:
        """A closing fence: the same character, at least as long, at most three spaces in, nothing after."""
        stripped = line.lstrip(" ")
        if max_indent is not None and len(line) - len(stripped) > max_indent:
            return False
        run = len(stripped) - len(stripped.lstrip(self.char))
        return run >= self.length and not stripped[run:].strip(" \t")


def _opening_fence(line: str) -> _Fence | None:
    match = _FENCE_OPEN.match(line)
    if match is None:
        return None
    fence = match.group("fence")
    # A backtick in a backtick fence's info string makes the line inline code, not a fence.
    if fence[0] == "`" and "`" in match.group("info"):
        return None
    return _Fence(fence[0], len(fence))


def _extract_fences(text: str) -> tuple[str, list[str]]:
    """Replace every top-level fenced block by a placeholder; return the prose and the bodies.

    An unclosed fence runs to the end of the chunk: a chunk boundary often falls inside a code block, and
    its tail is still code.
    """
    lines = text.split("\n")
    prose: list[str] = []
    bodies: list[str] = []
    position = 0
    nested: _Fence | None = None
    while position < len(lines):
        line = lines[position]
        if nested is not None:
            # Inside a list item's fence: prose, until the item's closing line (at the item's indentation).
            if nested.closed_by(line, max_indent=None):
                nested = None
            prose.append(line)
            position += 1
            continue
        fence = _opening_fence(line)
        if fence is None:
            list_fence = _LIST_ITEM_FENCE.match(line)
            if list_fence is not None:
                nested = _Fence(list_fence.group("fence")[0], len(list_fence.group("fence")))
            prose.append(line)
            position += 1
            continue
        end = position + 1
        while end < len(lines) and not fence.closed_by(lines[end]):
            end += 1
        prose.append(_PLACEHOLDER.format(index=len(bodies)))
        bodies.append("\n".join(lines[position + 1 : end]))
        position = end + 1
    return "\n".join(prose), bodies


def _table_row_to_text(match: re.Match[str]) -> str:
    cells = (cell.strip() for cell in match.group(1).split("|"))
    return ", ".join(cell for cell in cells if cell)


def _collapse_whitespace(match: re.Match[str]) -> str:
    """A whitespace run becomes the strongest break it held: a paragraph, a line, or one space."""
    newlines = match.group(0).count("\n")
    if newlines >= len(_PARAGRAPH_BREAK):
        return _PARAGRAPH_BREAK
    return "\n" if newlines else " "


def _clean_prose(text: str) -> str:
    """The seed's rules, in the seed's order, on text that holds no fenced code."""
    text = _LATEX_BLOCK.sub(r"\1", text)
    text = _HTML_TAG.sub("", text)
    # Unwrap [![alt](img)](link) first so the image rule removes the whole construct.
    text = _LINKED_IMAGE.sub(r"![\1](\2)", text)
    text = _IMAGE.sub("", text)
    text = _LINK.sub(r"\1", text)
    text = _RAW_URL.sub("", text)
    text = _TABLE_SEPARATOR.sub("", text)
    text = _TABLE_ROW.sub(_table_row_to_text, text)
    text = _HEADING.sub("", text)
    text = _BLOCKQUOTE.sub("", text)
    # Longest marker first, or ** would be read as two empty italics.
    text = _BOLD_ITALIC.sub(r"\1", text)
    text = _BOLD.sub(r"\1", text)
    text = _ITALIC.sub(r"\1", text)
    text = _LIST_MARKER.sub("", text)
    text = _EXCESS_NEWLINES.sub(_PARAGRAPH_BREAK, text)
    return _WHITESPACE_RUN.sub(_collapse_whitespace, text)


@lru_cache(maxsize=4096)
def clean_passage(text: str) -> str:
    """The passage a rerank model scores for ``text``.

    Order: fenced code is set aside (delimiters dropped, body kept verbatim); then, outside fences,
    ``$$…$$`` unwrapped; HTML tags deleted; ``[![a](i)](l)`` → ``![a](i)``; images deleted; ``[t](u)`` → ``t``;
    bare URLs deleted; table separator rows deleted; ``|a|b|`` → ``a, b``; heading and quote markers
    stripped; ``***x***``, ``**x**``, ``*x*`` unwrapped; list markers stripped; three or more newlines → two;
    whitespace collapsed; finally the fence bodies return and the whole passage is trimmed.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    # The placeholder characters are private-use code points with no meaning to a model; dropping them from
    # the input means a placeholder in the prose is always one of ours.
    text = text.replace(_PLACEHOLDER_OPEN, "").replace(_PLACEHOLDER_CLOSE, "")
    prose, bodies = _extract_fences(text)
    cleaned = _clean_prose(prose)
    if bodies:
        cleaned = _PLACEHOLDER_RE.sub(lambda m: bodies[int(m.group(1))], cleaned)
    return cleaned.strip()
