"""Splitting text and Markdown into chunks along headings and paragraphs.

Every chunk's text is an exact slice of the source (``start_at``/``end_at``), so a citation can point
back into the document. Sections longer than one chunk also get parent chunks (``parent_text``, not
searched) that give a matched child its surrounding section.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^[ ]{0,3}(`{3,}|~{3,})(.*)$")


class _FenceTracker:
    """CommonMark fences: a block closes only on the same character, at least as long, with no info string."""

    def __init__(self) -> None:
        self._open: str | None = None

    @property
    def inside(self) -> bool:
        return self._open is not None

    def feed(self, line: str) -> None:
        match = _FENCE.match(line.rstrip("\r\n"))
        if match is None:
            return
        marker, rest = match.group(1), match.group(2)
        if self._open is None:
            if not (marker[0] == "`" and "`" in rest):
                self._open = marker
        elif marker[0] == self._open[0] and len(marker) >= len(self._open) and not rest.strip():
            self._open = None


_SENTENCE_END = re.compile(r"(?<=[.!?。！？;；])\s+")


@dataclass
class Section:
    """A section of the text under one heading path, by character offsets."""

    header: str
    start: int
    end: int


@dataclass
class ChunkSpan:
    """A chunk to be, by character offsets, with its heading path and its parent's index."""

    start: int
    end: int
    header: str
    parent: int | None = None  # index into the parent list


@dataclass
class ChunkPlan:
    """Where a text is cut: its title, the chunks that are searched, and the parents that give them context."""

    title: str
    children: list[ChunkSpan] = field(default_factory=list)
    parents: list[ChunkSpan] = field(default_factory=list)


def _sections(text: str, markdown: bool) -> tuple[str, list[Section]]:
    """Sections by heading (Markdown only; headings inside code fences are code)."""
    if not markdown:
        return "", [Section("", 0, len(text))]
    title = ""
    path: list[tuple[int, str]] = []
    sections: list[Section] = []
    current_start, current_header = 0, ""
    fence = _FenceTracker()
    offset = 0
    for line in text.splitlines(keepends=True):
        stripped = line.rstrip("\r\n")
        was_inside = fence.inside
        fence.feed(line)
        match = None if (was_inside or fence.inside) else _HEADING.match(stripped)
        if match:
            if offset > current_start:
                sections.append(Section(current_header, current_start, offset))
            level, name = len(match.group(1)), match.group(2).strip()
            if level == 1 and not title:
                title = name
            path = [(lvl, n) for lvl, n in path if lvl < level] + [(level, name)]
            current_header = " > ".join(n for _, n in path)
            current_start = offset
        offset += len(line)
    if offset > current_start:
        sections.append(Section(current_header, current_start, offset))
    return title, sections


def _blocks(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Paragraphs (blank-line separated; a fenced code block stays whole) as trimmed spans."""
    blocks: list[tuple[int, int]] = []
    block_start: int | None = None
    fence = _FenceTracker()
    offset = start
    for line in text[start:end].splitlines(keepends=True):
        stripped = line.strip()
        fence.feed(line)
        if not stripped and not fence.inside:
            if block_start is not None:
                blocks.append((block_start, offset))
                block_start = None
        elif block_start is None:
            block_start = offset
        offset += len(line)
    if block_start is not None:
        blocks.append((block_start, end))
    return [_trim(text, s, e) for s, e in blocks if text[s:e].strip()]


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _split_long(text: str, start: int, end: int, size: int) -> list[tuple[int, int]]:
    """A block longer than ``size``: by sentences, and a sentence longer than ``size`` at whitespace."""
    pieces: list[tuple[int, int]] = []
    cursor = start
    for match in _SENTENCE_END.finditer(text, start, end):
        pieces.append((cursor, match.start()))
        cursor = match.end()
    pieces.append((cursor, end))
    out: list[tuple[int, int]] = []
    for s, e in pieces:
        while e - s > size:
            cut = text.rfind(" ", s + size // 2, s + size)
            cut = cut if cut > s else s + size
            out.append(_trim(text, s, cut))
            s = cut
        if e > s:
            out.append(_trim(text, s, e))
    return [p for p in out if p[1] > p[0]]


def _pack(spans: list[tuple[int, int]], size: int, min_size: int) -> list[tuple[int, int]]:
    """Greedy packing of consecutive spans into chunks of at most ``size`` characters."""
    chunks: list[tuple[int, int]] = []
    for start, end in spans:
        merged = end - chunks[-1][0] if chunks else 0
        if chunks and (merged <= size or (chunks[-1][1] - chunks[-1][0] < min_size and merged <= size + size // 2)):
            chunks[-1] = (chunks[-1][0], end)
        else:
            chunks.append((start, end))
    return chunks


def _word_starts_at(text: str, index: int) -> bool:
    """A word begins at ``index``: after a space, or at a Han character (Chinese has no spaces between words)."""
    char = text[index]
    return not char.isspace() and (text[index - 1].isspace() or "\u3400" <= char <= "\u9fff")


def _overlap(text: str, children: list[ChunkSpan], overlap: int) -> None:
    """Each chunk after the first of a section starts up to ``overlap`` characters into the one before it.

    The start moves back to a word's beginning (never into the middle of one) and never to the previous chunk's
    start, so a chunk stays an exact slice of the text and a sentence cut between two chunks is read whole in one.
    """
    for previous, child in itertools.pairwise(children):
        earliest = max(previous.start + 1, child.start - overlap)
        child.start = next((i for i in range(earliest, child.start) if _word_starts_at(text, i)), child.start)


def plan_chunks(
    text: str,
    *,
    markdown: bool,
    chunk_size: int,
    min_size: int,
    parent_size: int,
    fallback_title: str = "",
    chunk_overlap: int = 0,
) -> ChunkPlan:
    """Cut ``text`` into chunks of about ``chunk_size`` characters, grouped under parents of ``parent_size``.

    With ``chunk_overlap``, each chunk but a section's first also repeats up to that many characters (whole words) of
    the text before it.
    """
    title, sections = _sections(text, markdown)
    plan = ChunkPlan(title=title or fallback_title)
    for section in sections:
        spans: list[tuple[int, int]] = []
        for start, end in _blocks(text, section.start, section.end):
            if markdown and _HEADING.match(text[start:end]):
                continue  # the heading lives on in every chunk's header
            if end - start > chunk_size:
                spans.extend(_split_long(text, start, end, chunk_size))
            else:
                spans.append((start, end))
        children = _pack(spans, chunk_size, min_size)
        if not children:
            continue
        first_child = len(plan.children)
        plan.children.extend(ChunkSpan(s, e, section.header) for s, e in children)
        if len(children) > 1:
            # Parents: consecutive children grouped up to parent_size, so each child can be read in context.
            # Both lists are in text order, so one pass assigns them (linear in the section's children).
            cursor = first_child
            for s, e in _pack(children, parent_size, 0):
                parent_index = len(plan.parents)
                plan.parents.append(ChunkSpan(s, e, section.header))
                while cursor < len(plan.children) and plan.children[cursor].end <= e:
                    if s <= plan.children[cursor].start:
                        plan.children[cursor].parent = parent_index
                    cursor += 1
        if chunk_overlap > 0:
            _overlap(text, plan.children[first_child:], chunk_overlap)
    return plan
