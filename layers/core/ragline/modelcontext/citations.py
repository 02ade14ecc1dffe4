"""Expanding the model's citations: whole texts and streams split at arbitrary points.

A citation tag starts with ``<ref``, ``<kb`` or ``<web`` (or their closing forms) followed by a space,
``/`` or ``>``, and runs to the next ``>`` or the end of the text. Only a well-formed
``<ref id="cN"/>`` or ``<ref id="wN"/>`` naming a registered source becomes output; every other such tag
vanishes, including ``<kb>``/``<web>`` tags a model writes itself. Both functions use the same
tokenisation, so a stream decodes to exactly what the whole text expands to, wherever it was split.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable

from ragline.modelcontext.registry import SourceRegistry
from ragline.modelcontext.resources import held_alias_start

_TAG_START = re.compile(r"</?(?:ref|kb|web)(?=[\s/>])", re.IGNORECASE)
_TAG_START_AT_END = re.compile(r"</?(?:ref|kb|web)$", re.IGNORECASE)
_REF = re.compile(r'^<ref\s+id\s*=\s*"([^"]+)"\s*/?>$', re.IGNORECASE)
_TAG_NAMES = ("<ref", "</ref", "<kb", "</kb", "<web", "</web")


def _render_tag(tag: str, registry: SourceRegistry, preceding: str = "") -> str:
    if not registry.citations_enabled:
        return ""
    match = _REF.match(tag)
    return registry.expand_handle(match.group(1).strip(), preceding) if match else ""


def expand_text(text: str, registry: SourceRegistry) -> str:
    """Storage aliases back to URLs, known citations expanded, any other citation-like tag dropped.

    Storage aliases back to their URLs, then known citations expanded and every other citation-like tag dropped (fail
    closed).
    """
    return _expand_tags(registry.resources.decode(text), registry)


def _expand_tags(text: str, registry: SourceRegistry, before: str = "") -> str:
    out: list[str] = []
    position = 0
    while True:
        start = _find_tag_start(text, position, at_end=True)
        if start is None:
            out.append(text[position:])
            return "".join(out)
        out.append(text[position:start])
        end = text.find(">", start)
        if end < 0:  # unterminated tag at the end of the text: dropped
            return "".join(out)
        out.append(_render_tag(text[start : end + 1], registry, _tail(before + "".join(out))))
        position = end + 1


_TAIL_CHARS = 1200


def _tail(text: str) -> str:
    """The end of the answer so far, as the claim a citation closes is read from it."""
    return text[-_TAIL_CHARS:]


def _find_tag_start(text: str, position: int, *, at_end: bool) -> int | None:
    match = _TAG_START.search(text, position)
    start = match.start() if match else None
    if at_end:
        tail = _TAG_START_AT_END.search(text, position)
        if tail is not None and (start is None or tail.start() < start):
            start = tail.start()
    return start


def _could_become_tag(fragment: str) -> bool:
    lowered = fragment.lower()
    return any(name.startswith(lowered) or lowered == name for name in _TAG_NAMES)


_KB_TAG = re.compile(r'<kb\s+doc="([^"]*)"\s+chunk_id="([^"]*)"(?:\s+kb_id="([^"]*)")?\s*/>')
_WEB_TAG = re.compile(r'<web\s+url="([^"]*)"\s+title="([^"]*)"\s*/>')


def replace_citations(text: str, chunk: Callable[[str, str, str], str], web: Callable[[str, str], str]) -> str:
    """Every expanded citation in ``text`` replaced.

    ``<kb …/>`` by ``chunk(doc, chunk_id, kb_id)`` and ``<web …/>`` by ``web(url, title)``, their attributes
    HTML-unescaped.
    """

    def kb_tag(match: re.Match[str]) -> str:
        return chunk(html.unescape(match.group(1)), html.unescape(match.group(2)), html.unescape(match.group(3) or ""))

    def web_tag(match: re.Match[str]) -> str:
        return web(html.unescape(match.group(1)), html.unescape(match.group(2)))

    return _WEB_TAG.sub(web_tag, _KB_TAG.sub(kb_tag, text))


def fold_citations(text: str, registry: SourceRegistry) -> str:
    """An earlier answer as the model reads it again.

    Its expanded citations back to aliases of this registry (so the model keeps citing the same sources the same way),
    or nothing when citations are off.
    """
    if not registry.citations_enabled:
        return replace_citations(text, lambda *_: "", lambda *_: "")
    return replace_citations(
        text,
        lambda doc, chunk_id, kb_id: f'<ref id="{registry.register_chunk_id(chunk_id, doc, kb_id)}"/>',
        lambda url, title: f'<ref id="{registry.register_web(url, title)}"/>',
    )


class StreamDecoder:
    """Releases text as soon as it cannot be part of a citation tag or a storage alias.

    Holds either until it is complete.
    """

    def __init__(self, registry: SourceRegistry) -> None:
        """A decoder of one answer's stream, expanding citations against ``registry``."""
        self._registry = registry
        self._buffer = ""
        self._pending_alias = ""
        self._released = ""  # the end of the text released so far (citations find their claim in it)

    def _release(self, text: str) -> str:
        if text:
            self._released = _tail(self._released + text)
        return text

    def feed(self, chunk: str) -> str:
        """The text of ``chunk`` that can be released now, aliases and citations expanded; the rest is held."""
        # Storage aliases first (as expand_text does): hold a possibly unfinished ``res://NNNN`` at the end.
        text = self._pending_alias + chunk
        hold = held_alias_start(text)
        self._pending_alias = text[hold:] if hold is not None else ""
        ready = text[:hold] if hold is not None else text
        return self._release(self._feed_tags(self._registry.resources.decode(ready)))

    def _feed_tags(self, chunk: str) -> str:
        self._buffer += chunk
        out: list[str] = []
        buffer = self._buffer
        position = 0
        while True:
            lt = buffer.find("<", position)
            if lt < 0:
                out.append(buffer[position:])
                position = len(buffer)
                break
            out.append(buffer[position:lt])
            if _TAG_START.match(buffer, lt):
                end = buffer.find(">", lt)
                if end < 0:
                    position = lt  # hold the unfinished tag
                    break
                out.append(_render_tag(buffer[lt : end + 1], self._registry, _tail(self._released + "".join(out))))
                position = end + 1
                continue
            # Up to the end of the buffer it may still become a tag name: wait for more text.
            if _could_become_tag(buffer[lt:]):
                position = lt
                break
            out.append("<")
            position = lt + 1
        self._buffer = buffer[position:]
        return "".join(out)

    def flush(self) -> str:
        """End of stream: a pending fragment that is a tag (however partial) is dropped, else released."""
        alias, self._pending_alias = self._pending_alias, ""
        rest = self._buffer + self._registry.resources.decode(alias)
        self._buffer = ""
        if not rest:
            return ""
        return self._release(_expand_tags(rest, self._registry, self._released))
