"""Suggested first questions for an empty session, built from a knowledge base's document titles and section headings.

No model is asked, so they cost nothing and exist with the extractive default.

A document's sections give questions about the document ("What does “Coffee brewing” say about water?"); a
document without headings gives one about itself. Documents take turns, so a few suggestions cover several
documents rather than every section of the first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragline.store.base import KnowledgeStore
from ragline.store.models import Document

# Documents read for suggestions (the knowledge base's first ones), and sections per document.
MAX_DOCUMENTS = 20
MAX_HEADINGS = 6
# Section names that say nothing about what a document holds.
_GENERIC = {
    "introduction",
    "intro",
    "overview",
    "contents",
    "table of contents",
    "summary",
    "conclusion",
    "references",
    "see also",
    "notes",
    "appendix",
    "abstract",
    "目录",
    "简介",
    "概述",
    "总结",
    "参考",
    "参考文献",
}
_HAN = re.compile(r"[\u3400-\u9fff]")
_EDGES = re.compile(r"^[\s#*_`>\-–—:.\d]+|[\s*_`:.?？。！!]+$")


@dataclass(frozen=True)
class Suggestion:
    """A suggested question about a document, or about one of its sections."""

    question: str
    knowledge_id: str
    knowledge_title: str
    heading: str = ""


def _clean(text: str) -> str:
    return _EDGES.sub("", " ".join(text.split()))


def _about(heading: str) -> str:
    """A heading as words in a sentence.

    A capital that only starts a word goes lower case ("Water" → "water"); acronyms and names with more capitals stay
    ("PDF files", "McDonald").
    """
    first = heading.split(" ", 1)[0]
    if first[:1].isupper() and first[1:] == first[1:].lower():
        return heading[:1].lower() + heading[1:]
    return heading


def question_about(title: str, heading: str = "") -> str:
    """A question asking what a document (or one of its sections) says, in Chinese for a Chinese title."""
    chinese = bool(_HAN.search(title + heading))
    if heading:
        return (
            f"《{title}》中关于{heading}的内容是什么？"
            if chinese
            else f"What does “{title}” say about {_about(heading)}?"
        )
    return f"《{title}》讲了什么？" if chinese else f"What is “{title}” about?"


def _headings(knowledge: KnowledgeStore, document: Document) -> list[str]:
    """The document's section names in reading order, each once, without the title or generic ones."""
    seen = {document.title.casefold()}
    headings: list[str] = []
    for chunk in knowledge.chunks_of_document(document.tenant_id, document.id):
        if not chunk.searchable or not chunk.header:
            continue
        heading = _clean(chunk.header.split(" > ")[-1])
        key = heading.casefold()
        if not heading or key in seen or key in _GENERIC or len(heading) > 80:
            continue
        seen.add(key)
        headings.append(heading)
        if len(headings) >= MAX_HEADINGS:
            break
    return headings


def suggested_questions(knowledge: KnowledgeStore, tenant_id: str, kb_id: str, limit: int = 4) -> list[Suggestion]:
    """Up to ``limit`` questions about the knowledge base's documents, one document after another."""
    documents = [
        d
        for d in knowledge.documents(tenant_id, kb_id, limit=MAX_DOCUMENTS)
        if d.enabled and str(d.status) != "failed" and _clean(d.title or d.filename)
    ]
    per_document: list[list[Suggestion]] = []
    for document in documents:
        title = _clean(document.title or document.filename)
        headings = _headings(knowledge, document)
        per_document.append(
            [Suggestion(question_about(title, h), document.id, title, h) for h in headings]
            or [Suggestion(question_about(title), document.id, title)]
        )
    suggestions: list[Suggestion] = []
    depth = 0
    while len(suggestions) < limit and any(depth < len(s) for s in per_document):
        suggestions.extend(s[depth] for s in per_document if depth < len(s))
        depth += 1
    return suggestions[:limit]
