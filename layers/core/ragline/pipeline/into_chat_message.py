"""INTO_CHAT_MESSAGE: validate the question and assemble the context the model will read."""

from __future__ import annotations

import re
from html import escape

from ragline.config import PromptTemplates, render_placeholders
from ragline.pipeline.faq_layout import FaqLayout, faq_layout
from ragline.pipeline.plugin import ERR_TEMPLATE_EXECUTE, NextFn, PluginError
from ragline.types import ChatManage, EventType, SearchResult
from ragline.types.images import IMAGE_DESCRIPTION_NOTE, IMAGE_TEXT_NOTE

# Markup that has no business in a question and is the usual vehicle of script injection into pages
# that render questions and answers.
_INJECTION_PATTERNS = [
    re.compile(pattern, re.IGNORECASE | re.DOTALL)
    for pattern in (
        r"<script[^>]*>.*?</script>",
        r"<iframe[^>]*>.*?</iframe>",
        r"<object[^>]*>.*?</object>",
        r"<embed[^>]*>",
        r"<form[^>]*>.*?</form>",
        r"<input[^>]*>",
        r"<button[^>]*>.*?</button>",
        r"javascript:",
        r"vbscript:",
        r"\bon(?:load|error|click|mouseover|focus|blur)\s*=",
    )
]


def validate_input(text: str) -> tuple[str, bool]:
    """The trimmed text and True, or ``("", False)`` for control characters, broken Unicode or markup injection."""
    if not text:
        return "", True
    if any(ord(ch) < 32 and ch not in "\t\n\r" for ch in text):
        return "", False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates
        return "", False
    if any(pattern.search(text) for pattern in _INJECTION_PATTERNS):
        return "", False
    return text.strip(), True


def document_header(results: list[SearchResult]) -> str:
    """Titles (and descriptions) of the documents the passages come from, each once."""
    seen: set[str] = set()
    parts: list[str] = []
    for result in results:
        title = result.knowledge_title or result.knowledge_filename
        if not title or title in seen:
            continue
        seen.add(title)
        description = (
            f"<description>{escape(result.knowledge_description)}</description>" if result.knowledge_description else ""
        )
        parts.append(f"<document><title>{escape(title)}</title>{description}</document>")
    return f"<documents>{''.join(parts)}</documents>" if parts else ""


def render_passages(results: list[SearchResult]) -> str:
    """The passages as numbered ``<context>`` blocks, after a header naming their documents."""
    passages = "\n".join(f'<context id="{i}">{r.content}</context>' for i, r in enumerate(results, start=1))
    header = document_header(results)
    return f"{header}\n{passages}" if header else passages


def render_faq_passages(layout: FaqLayout) -> str:
    """FAQ answers as the high-priority source, documents as the supplementary one."""
    exact = ' match="exact"'
    faq = "\n".join(
        f'<context id="FAQ-{i}"{exact if r.id == layout.exact_id else ""}>{r.content}</context>'
        for i, r in enumerate(layout.faq, start=1)
    )
    parts = [f'<source type="faq" priority="high">\n{faq}\n</source>']
    if layout.documents:
        documents = "\n".join(
            f'<context id="DOC-{i}">{r.content}</context>' for i, r in enumerate(layout.documents, start=1)
        )
        header = document_header(layout.documents)
        body = f"{header}\n{documents}" if header else documents
        parts.append(f'<source type="document" priority="supplementary">\n{body}\n</source>')
    return "\n".join(parts)


def with_images(query: str, cm: ChatManage) -> str:
    """The question with what its images showed, or their OCR text, after it."""
    state = cm.state
    if state.image_description:
        return f"{query}\n\n{IMAGE_DESCRIPTION_NOTE.format(text=state.image_description)}"
    if state.image_text:
        return f"{query}\n\n{IMAGE_TEXT_NOTE.format(text=state.image_text)}"
    return query


class PluginIntoChatMessage:
    """The INTO_CHAT_MESSAGE stage: the user message the model reads, with the context passages."""

    def __init__(self, templates: PromptTemplates, context_template_id: str) -> None:
        """A stage rendering the context with the template ``context_template_id`` of ``templates``."""
        self._templates = templates
        self._context_template_id = context_template_id

    def activation_events(self) -> list[EventType]:
        """Runs at INTO_CHAT_MESSAGE."""
        return [EventType.INTO_CHAT_MESSAGE]

    async def on_event(self, event_type: EventType, cm: ChatManage, next: NextFn) -> PluginError | None:
        """Write ``state.user_content`` from the query and the final results; invalid input is refused."""
        query, valid = validate_input(cm.request.query)
        if not valid:
            return ERR_TEMPLATE_EXECUTE.with_cause("user query contains invalid content")
        results = cm.final_results() if cm.needs_retrieval() else []
        layout = faq_layout(cm, results)
        if layout is not None:
            contexts = render_faq_passages(layout)
        elif results:
            contexts = render_passages(results)
        else:
            contexts = ""
        template = cm.request.summary_config.context_template or self._templates.get(
            "context_template", self._context_template_id
        )
        cm.state.rendered_contexts = contexts
        cm.state.user_content = render_placeholders(
            template, {"query": with_images(query, cm), "contexts": contexts, "language": cm.request.language}
        )
        return await next()
