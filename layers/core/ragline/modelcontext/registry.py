"""A per-answer registry of source aliases. Never persisted: it is rebuilt from the results it names."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape
from urllib.parse import urldefrag

from ragline.modelcontext.resources import ResourceAliases
from ragline.types import SearchResult

HANDLE_PATTERN = re.compile(r"^[cdbw][1-9][0-9]*$", re.IGNORECASE)
# An excerpt as render_results writes it: its alias, its other attributes, its content.
EXCERPT_PATTERN = re.compile(r'<chunk id="([^"]+)"([^>]*)><content>(.*?)</content></chunk>', re.DOTALL)


@dataclass(frozen=True)
class ChunkSource:
    """A passage the model may cite: its alias (``cN``), its chunk and where the chunk comes from."""

    handle: str
    chunk_id: str
    document_title: str
    knowledge_base_id: str


@dataclass(frozen=True)
class ChunkPart:
    """One stored chunk whose text a merged or widened passage holds."""

    chunk_id: str
    content: str


_WORDS = re.compile(r"[^\W_]+", re.UNICODE)
_HAN = re.compile(r"[\u3400-\u9fff]")
_EXPANDED_TAG = re.compile(r"<(?:kb|web)\b[^>]*/?>")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?。！？；])\s*|\n+")


def _claim_terms(text: str) -> set[str]:
    """Words (and, for Chinese, character pairs) for matching a claim to the chunk it came from."""
    lowered = text.lower()
    found = {w for w in _WORDS.findall(lowered) if not _HAN.search(w)}
    han = "".join(_HAN.findall(lowered))
    found.update(han[i : i + 2] for i in range(len(han) - 1))
    return found


def _squash(text: str) -> str:
    return " ".join(text.split())


def last_claim(text: str) -> str:
    """The sentence a citation at the end of ``text`` backs: the last non-empty sentence before it."""
    text = _EXPANDED_TAG.sub(" ", text[-1200:])
    for sentence in reversed(_SENTENCE_BREAK.split(text)):
        cleaned = sentence.strip().lstrip("#>-*|0123456789. ").strip().strip("…").strip()
        if len(cleaned) >= 3:
            return cleaned
    return ""


@dataclass(frozen=True)
class WebSource:
    """A web page the model may cite: its alias (``wN``), its URL (no fragment) and title."""

    handle: str
    url: str
    title: str


class SourceRegistry:
    """Assigns ``cN``/``wN``/``dN``/``bN`` in registration order; the same id always gets the same alias."""

    def __init__(self, citations_enabled: bool = True) -> None:
        """An empty registry; with ``citations_enabled`` off, answers carry no citations."""
        self.citations_enabled = citations_enabled
        self.resources = ResourceAliases()
        self._chunks: dict[str, ChunkSource] = {}
        self._chunk_by_handle: dict[str, ChunkSource] = {}
        self._webs: dict[str, WebSource] = {}
        self._web_by_handle: dict[str, WebSource] = {}
        self._documents: dict[str, str] = {}
        self._bases: dict[str, str] = {}
        self._parts: dict[str, list[ChunkPart]] = {}

    def register_chunk(self, result: SearchResult) -> str:
        """The passage's alias (``cN``), the same one each time the chunk is registered."""
        if HANDLE_PATTERN.match(result.id):
            return self._existing(result.id)
        source = self._chunks.get(result.id)
        if source is None:
            handle = f"c{len(self._chunks) + 1}"
            source = ChunkSource(handle, result.id, result.knowledge_title, result.knowledge_base_id)
            self._chunks[result.id] = source
            self._chunk_by_handle[handle] = source
        return source.handle

    def register_chunk_id(self, chunk_id: str, document_title: str, knowledge_base_id: str = "") -> str:
        """An alias for a chunk known only by id (a citation in an earlier answer of the conversation)."""
        return self.register_chunk(
            SearchResult(id=chunk_id, content="", knowledge_title=document_title, knowledge_base_id=knowledge_base_id)
        )

    def register_web(self, url: str, title: str = "") -> str:
        """The page's alias (``wN``); two URLs that differ only by fragment share one."""
        if HANDLE_PATTERN.match(url):
            return self._existing(url)
        key = urldefrag(url).url
        source = self._webs.get(key)
        if source is None:
            handle = f"w{len(self._webs) + 1}"
            source = WebSource(handle, key, title)
            self._webs[key] = source
            self._web_by_handle[handle] = source
        return source.handle

    def register_document(self, knowledge_id: str) -> str:
        """The document's alias (``dN``)."""
        return self._documents.setdefault(knowledge_id, f"d{len(self._documents) + 1}")

    def register_knowledge_base(self, knowledge_base_id: str) -> str:
        """The knowledge base's alias (``bN``)."""
        return self._bases.setdefault(knowledge_base_id, f"b{len(self._bases) + 1}")

    def _existing(self, handle: str) -> str:
        """A handle-shaped id is only ever an alias that already exists; anything else registers nothing."""
        lowered = handle.lower()
        known = (
            lowered in self._chunk_by_handle
            or lowered in self._web_by_handle
            or lowered in self._documents.values()
            or lowered in self._bases.values()
        )
        return lowered if known else ""

    def set_parts(self, chunk_id: str, parts: list[ChunkPart]) -> None:
        """The stored chunks a passage (merged or widened from several) is made of, in document order."""
        self._parts[chunk_id] = parts

    def cited_chunk_id(self, chunk_id: str, claim: str) -> str:
        """Which chunk of a passage a citation of it backs ``claim`` with.

        The one holding the claim word for word, else the one sharing most of its words; the passage's own chunk when it
        is one chunk.
        """
        parts = self._parts.get(chunk_id)
        if not parts or not claim:
            return chunk_id
        wanted = _squash(claim).lower()
        for part in parts:
            if wanted in _squash(part.content).lower():
                return part.chunk_id
        claim_terms = _claim_terms(claim)
        if not claim_terms:
            return chunk_id
        best = max(parts, key=lambda part: len(claim_terms & _claim_terms(part.content)))
        return best.chunk_id if claim_terms & _claim_terms(best.content) else chunk_id

    def chunk(self, handle: str) -> ChunkSource | None:
        """The passage behind a ``cN`` alias (any case), or None."""
        return self._chunk_by_handle.get(handle.lower())

    def web(self, handle: str) -> WebSource | None:
        """The page behind a ``wN`` alias (any case), or None."""
        return self._web_by_handle.get(handle.lower())

    def expand_handle(self, handle: str, preceding: str = "") -> str:
        """The client-facing tag for a cited alias, or ``""`` for anything not citable.

        ``preceding`` is the answer text before the citation: a passage made of several chunks is cited by the chunk
        that holds the claim the citation closes.
        """
        chunk = self.chunk(handle)
        if chunk is not None:
            kb = f' kb_id="{escape(chunk.knowledge_base_id)}"' if chunk.knowledge_base_id else ""
            chunk_id = self.cited_chunk_id(chunk.chunk_id, last_claim(preceding)) if preceding else chunk.chunk_id
            return f'<kb doc="{escape(chunk.document_title)}" chunk_id="{escape(chunk_id)}"{kb} />'
        web = self.web(handle)
        if web is not None:
            return f'<web url="{escape(web.url)}" title="{escape(web.title)}" />'
        return ""

    def render_results(
        self, results: list[SearchResult], faq: list[SearchResult] | None = None, exact_id: str | None = None
    ) -> str:
        """The model-facing view of retrieved passages: aliases only, grouped by document in rank order.

        With FAQ priority, ``faq`` (already excluded from ``results``) comes first as a high-priority
        section; ``exact_id`` marks the FAQ that answers the question directly.
        """
        knowledge: list[SearchResult] = [r for r in results if not r.is_web]
        web: list[SearchResult] = [r for r in results if r.is_web]
        parts: list[str] = []
        if faq:
            parts.append('<retrieval type="faq" priority="high">')
            for result in faq:
                handle = self.register_chunk(result)
                match = ' match="exact"' if result.id == exact_id else ""
                content = self.resources.encode(result.content)
                parts.append(f'<chunk id="{handle}"{match}><content>{content}</content></chunk>')
            parts.append("</retrieval>")
        if knowledge:
            priority = ' priority="supplementary"' if faq else ""
            parts.append(f'<retrieval type="knowledge" mode="semantic"{priority}>')
            by_document: dict[str, list[SearchResult]] = {}
            for result in knowledge:
                by_document.setdefault(result.knowledge_id or result.id, []).append(result)
            for document_results in by_document.values():
                first = document_results[0]
                doc = self.register_document(first.knowledge_id or first.id)
                kb = self.register_knowledge_base(first.knowledge_base_id) if first.knowledge_base_id else ""
                kb_attr = f' kb="{kb}"' if kb else ""
                parts.append(f'<document id="{doc}"{kb_attr} title="{escape(first.knowledge_title)}">')
                for result in document_results:
                    handle = self.register_chunk(result)
                    # The section heading is context the passage's text does not repeat ("Resuming after
                    # a disconnect" heads the paragraph that says how).
                    section = f' section="{escape(result.header)}"' if result.header else ""
                    parts.append(
                        f'<chunk id="{handle}" index="{result.chunk_index + 1}"{section} view="full">'
                        f"<content>{self.resources.encode(result.content)}</content></chunk>"
                    )
                parts.append("</document>")
            parts.append("</retrieval>")
        if web:
            parts.append('<retrieval type="web">')
            for result in web:
                handle = self.register_web(result.url or result.id, result.knowledge_title)
                parts.append(
                    f'<page id="{handle}" title="{escape(result.knowledge_title)}">'
                    f"<content>{result.content}</content></page>"
                )
            parts.append("</retrieval>")
        return "\n".join(parts)
