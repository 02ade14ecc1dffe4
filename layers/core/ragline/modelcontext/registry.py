"""A per-answer registry of source aliases. Never persisted: it is rebuilt from the results it names."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape
from urllib.parse import urldefrag

from ragline.modelcontext.resources import ResourceAliases
from ragline.types import SearchResult

HANDLE_PATTERN = re.compile(r"^[cdbw][1-9][0-9]*$", re.IGNORECASE)


@dataclass(frozen=True)
class ChunkSource:
    handle: str
    chunk_id: str
    document_title: str
    knowledge_base_id: str


@dataclass(frozen=True)
class WebSource:
    handle: str
    url: str
    title: str


class SourceRegistry:
    """Assigns ``cN``/``wN``/``dN``/``bN`` in registration order; the same id always gets the same alias."""

    def __init__(self, citations_enabled: bool = True) -> None:
        self.citations_enabled = citations_enabled
        self.resources = ResourceAliases()
        self._chunks: dict[str, ChunkSource] = {}
        self._chunk_by_handle: dict[str, ChunkSource] = {}
        self._webs: dict[str, WebSource] = {}
        self._web_by_handle: dict[str, WebSource] = {}
        self._documents: dict[str, str] = {}
        self._bases: dict[str, str] = {}

    def register_chunk(self, result: SearchResult) -> str:
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
        return self._documents.setdefault(knowledge_id, f"d{len(self._documents) + 1}")

    def register_knowledge_base(self, knowledge_base_id: str) -> str:
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

    def chunk(self, handle: str) -> ChunkSource | None:
        return self._chunk_by_handle.get(handle.lower())

    def web(self, handle: str) -> WebSource | None:
        return self._web_by_handle.get(handle.lower())

    def expand_handle(self, handle: str) -> str:
        """The client-facing tag for a cited alias, or ``""`` for anything not citable."""
        chunk = self.chunk(handle)
        if chunk is not None:
            kb = f' kb_id="{escape(chunk.knowledge_base_id)}"' if chunk.knowledge_base_id else ""
            return f'<kb doc="{escape(chunk.document_title)}" chunk_id="{escape(chunk.chunk_id)}"{kb} />'
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
                    parts.append(
                        f'<chunk id="{handle}" index="{result.chunk_index + 1}" view="full">'
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
