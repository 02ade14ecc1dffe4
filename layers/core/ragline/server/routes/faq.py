"""FAQ entries of a knowledge base, one by one (WeKnora's ``/knowledge-bases/{id}/faq``).

An entry is an ``faq`` chunk of an FAQ document; its number (``id``, WeKnora's ``seq_id``) is derived
from the chunk id and never changes while the entry lives. Tags are named by their numbers, as WeKnora
does. WeKnora imports in the background and reports through a task; ragline imports before the reply and
the task id carries the outcome, so any process (any Lambda) can answer the progress route.
"""

from __future__ import annotations

import asyncio
import csv
import io
import logging
import re
import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, Field

from ragline.container import Container
from ragline.ingest.faq_entries import DuplicateQuestion, StoredEntry, question_keys
from ragline.runtime.search import SearchBody
from ragline.server.body_limit import upload_body
from ragline.server.deps import ContainerDep, TenantDep, knowledge_base_of
from ragline.server.errors import ApiError
from ragline.server.routes.tags import tag_index
from ragline.server.schemas.faq import (
    MAX_MATCH_COUNT,
    DeleteEntries,
    DisplayBody,
    FAQEntryPayload,
    FAQSearchBody,
    FieldsBatch,
    FieldsUpdate,
    SimilarQuestions,
    TagsBatch,
    UpsertBody,
)
from ragline.server.tagging import TagIndex
from ragline.server.views import Envelope
from ragline.server.wire import stable_number
from ragline.store.models import FAQEntry, KnowledgeBase, Tenant

logger = logging.getLogger(__name__)
router = APIRouter(prefix="/api/v1", tags=["faq"])

FAQ_PAGE_SIZE = 20
MAX_PAGE_SIZE = 1000
DEFAULT_MATCH_COUNT = 10
_TASK = re.compile(r"^faq-(append|replace)-(run|dry)-(\d+)-(\d+)-[0-9a-f]{8}$")


class FAQEntryView(BaseModel):
    """An FAQ entry as WeKnora shows it: its number, questions, answers, tag and flags."""

    id: int
    chunk_id: str
    knowledge_id: str
    knowledge_base_id: str
    tag_id: int
    tag_name: str
    is_enabled: bool
    is_recommended: bool
    standard_question: str
    similar_questions: list[str]
    negative_questions: list[str]
    answers: list[str]
    answer_strategy: str
    index_mode: str = "hybrid"
    chunk_type: str = "faq"
    created_at: str
    updated_at: str
    score: float | None = None
    match_type: str | None = None
    matched_question: str | None = None

    @classmethod
    def of(cls, stored: StoredEntry, tags: TagIndex) -> FAQEntryView:
        """The view of ``stored``, its tag resolved through ``tags``."""
        entry = stored.entry
        tag = tags.find(entry.tag_id) if entry.tag_id else None
        return cls(
            id=entry_number(stored),
            chunk_id=stored.chunk.id,
            knowledge_id=stored.document.id,
            knowledge_base_id=stored.chunk.knowledge_base_id,
            tag_id=tag.seq_id if tag is not None else 0,
            tag_name=tag.name if tag is not None else "",
            is_enabled=stored.chunk.enabled,
            is_recommended=entry.is_recommended,
            standard_question=entry.standard_question,
            similar_questions=entry.similar_questions,
            negative_questions=entry.negative_questions,
            answers=entry.answers,
            answer_strategy=entry.answer_strategy,
            created_at=stored.document.created_at,
            updated_at=str(getattr(stored.document, "updated_at", "") or stored.document.created_at),
        )


class FAQPage(BaseModel):
    """A page of FAQ entries, with the total."""

    total: int
    page: int
    page_size: int
    data: list[FAQEntryView]


def entry_number(stored: StoredEntry) -> int:
    """An entry's number: the stable number of its chunk id (WeKnora names entries by integers)."""
    return stable_number(stored.chunk.id)


class _Context:
    """One request's knowledge base, its tags and its entries."""

    def __init__(self, container: Container, tenant: Tenant, kb_id: str) -> None:
        self.container = container
        self.tenant = tenant
        self.kb: KnowledgeBase = knowledge_base_of(container, tenant, kb_id)
        self.tags = tag_index(container, self.kb)
        self.entries = container.faq.entries(tenant.id, self.kb.id)

    def by_number(self, number: int, field: str = "entry_id") -> StoredEntry:
        for stored in self.entries:
            if entry_number(stored) == number:
                return stored
        raise ApiError(404, "not_found", "FAQ entry not found", field)

    def tag_of(self, tag_id: int | None, tag_name: str | None, field: str = "tag_id") -> str:
        """The tag (stored id) an entry names by number or by name; a new name registers a tag."""
        if tag_id:
            found = self.tags.find(str(tag_id))
            if found is None:
                raise ApiError(404, "not_found", f"tag {tag_id} not found", field)
            return found.id
        if tag_name and tag_name.strip():
            name = tag_name.strip()
            known = next((e for e in self.tags.listing() if e.name == name), None)
            if known is not None:
                return known.id
            return self.container.tags.create_tag(self.tenant.id, self.kb.id, name).id
        return ""

    def view(self, stored: StoredEntry) -> FAQEntryView:
        return FAQEntryView.of(stored, tag_index(self.container, self.kb))


def _entry(payload: FAQEntryPayload, tag: str, base: FAQEntry | None = None) -> FAQEntry:
    return FAQEntry(
        standard_question=payload.standard_question.strip(),
        similar_questions=[q.strip() for q in payload.similar_questions],
        negative_questions=[q.strip() for q in payload.negative_questions],
        answers=payload.answers,
        answer_strategy=payload.answer_strategy or (base.answer_strategy if base else "all"),
        is_recommended=payload.is_recommended
        if payload.is_recommended is not None
        else bool(base and base.is_recommended),
        tag_id=tag,
    )


def _duplicate(exc: DuplicateQuestion) -> ApiError:
    return ApiError(409, "duplicate_question", str(exc), "standard_question")


@router.get("/knowledge-bases/{kb_id}/faq/entries")
def list_faq_entries(
    kb_id: str,
    tenant: TenantDep,
    container: ContainerDep,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = FAQ_PAGE_SIZE,
    tag_id: Annotated[int | None, Query()] = None,
    keyword: Annotated[str, Query(max_length=200)] = "",
    search_field: Annotated[Literal["", "standard_question", "similar_questions", "answers"], Query()] = "",
    sort_order: Annotated[Literal["", "asc", "desc"], Query()] = "",
) -> Envelope[FAQPage]:
    """Entries, most recently changed first (``sort_order=asc``: oldest first).

    By tag number, by a keyword in the questions and answers (or one of them).
    """
    context = _Context(container, tenant, kb_id)
    entries = context.entries
    if tag_id:
        wanted = context.tags.find(str(tag_id))
        entries = [e for e in entries if wanted is not None and e.entry.tag_id in wanted.stored]
    needle = keyword.strip().casefold()
    if needle:
        entries = [e for e in entries if needle in _searchable(e.entry, search_field).casefold()]
    entries = sorted(entries, key=lambda e: (e.document.created_at, e.chunk.chunk_index), reverse=sort_order != "asc")
    start = (page - 1) * page_size
    views = [FAQEntryView.of(e, context.tags) for e in entries[start : start + page_size]]
    return Envelope(data=FAQPage(total=len(entries), page=page, page_size=page_size, data=views))


def _searchable(entry: FAQEntry, field: str) -> str:
    parts = {
        "standard_question": [entry.standard_question],
        "similar_questions": entry.similar_questions,
        "answers": entry.answers,
    }
    chosen = parts.get(field) or [entry.standard_question, *entry.similar_questions, *entry.answers]
    return "\n".join(chosen)


@router.get(
    "/knowledge-bases/{kb_id}/faq/entries/export",
    response_class=Response,
    responses={200: {"content": {"text/csv": {"schema": {"type": "string"}}}}},
)
def export_faq_entries(kb_id: str, tenant: TenantDep, container: ContainerDep) -> Response:
    """Every entry as CSV (UTF-8 with a byte order mark, as Excel reads it).

    ragline's FAQ import reads it back (lists joined with ``|``).
    """
    context = _Context(container, tenant, kb_id)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(
        [
            "standard_question",
            "similar_questions",
            "negative_questions",
            "answers",
            "tag_name",
            "is_enabled",
            "is_recommended",
        ]
    )
    for stored in context.entries:
        view = FAQEntryView.of(stored, context.tags)
        writer.writerow(
            [
                view.standard_question,
                "|".join(view.similar_questions),
                "|".join(view.negative_questions),
                "|".join(view.answers),
                view.tag_name,
                str(view.is_enabled).lower(),
                str(view.is_recommended).lower(),
            ]
        )
    return Response(
        "\ufeff" + out.getvalue(),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": 'attachment; filename="faq_export.csv"'},
    )


class Success(BaseModel):
    """WeKnora's bare success reply."""

    success: bool = True


def _apply(context: _Context, stored: StoredEntry, update: FieldsUpdate) -> None:
    entry = stored.entry
    changes: dict[str, Any] = {}
    if update.is_recommended is not None:
        changes["is_recommended"] = update.is_recommended
    if update.tag_id is not None:
        changes["tag_id"] = context.tag_of(update.tag_id, None) if update.tag_id else ""
    context.container.faq.update(context.tenant.id, stored, entry.model_copy(update=changes), update.is_enabled)


@router.put("/knowledge-bases/{kb_id}/faq/entries/fields")
def update_faq_fields(kb_id: str, body: FieldsBatch, tenant: TenantDep, container: ContainerDep) -> Success:
    """Set enabled, recommended and tag on FAQ entries.

    Enabled, recommended and tag, by entry number (``by_id``) or for every entry of a tag (``by_tag``, less ``exclude_ids``).
    """
    if not body.by_id and not body.by_tag:
        raise ApiError(422, "missing_field", "by_id or by_tag is required", "by_id")
    context = _Context(container, tenant, kb_id)
    for number, update in (body.by_id or {}).items():
        _apply(context, context.by_number(number, "by_id"), update)
    excluded = set(body.exclude_ids)
    for tag_number, update in (body.by_tag or {}).items():
        tag = context.tags.find(str(tag_number))
        if tag is None:
            raise ApiError(404, "not_found", f"tag {tag_number} not found", "by_tag")
        for stored in context.entries:
            if stored.entry.tag_id in tag.stored and entry_number(stored) not in excluded:
                _apply(context, stored, update)
    return Success()


@router.put("/knowledge-bases/{kb_id}/faq/entries/tags")
def update_faq_tags(kb_id: str, body: TagsBatch, tenant: TenantDep, container: ContainerDep) -> Success:
    """Entry number → tag number (``null``: no tag)."""
    context = _Context(container, tenant, kb_id)
    for number, tag_number in body.updates.items():
        _apply(context, context.by_number(number, "updates"), FieldsUpdate(tag_id=tag_number or 0))
    return Success()


@router.get("/knowledge-bases/{kb_id}/faq/entries/{entry_id}")
def get_faq_entry(kb_id: str, entry_id: int, tenant: TenantDep, container: ContainerDep) -> Envelope[FAQEntryView]:
    """One FAQ entry by number."""
    context = _Context(container, tenant, kb_id)
    return Envelope(data=context.view(context.by_number(entry_id)))


@router.post("/knowledge-bases/{kb_id}/faq/entry")
def create_faq_entry(
    kb_id: str, body: FAQEntryPayload, tenant: TenantDep, container: ContainerDep
) -> Envelope[FAQEntryView]:
    """One entry, indexed before the reply; a question another entry already asks is refused (409)."""
    context = _Context(container, tenant, kb_id)
    entry = _entry(body, context.tag_of(body.tag_id, body.tag_name))
    try:
        container.faq.check_new(context.entries, [entry])
    except DuplicateQuestion as exc:
        raise _duplicate(exc) from None
    [stored] = container.faq.add(context.kb, [entry], entry.standard_question)
    if body.is_enabled is False:
        stored = container.faq.update(tenant.id, stored, stored.entry, False)
    return Envelope(data=context.view(stored))


@router.put("/knowledge-bases/{kb_id}/faq/entries/{entry_id}")
def update_faq_entry(
    kb_id: str, entry_id: int, body: FAQEntryPayload, tenant: TenantDep, container: ContainerDep
) -> Envelope[FAQEntryView]:
    """Replace an entry's questions, answers and tag; a question another entry asks is refused."""
    context = _Context(container, tenant, kb_id)
    stored = context.by_number(entry_id)
    tag = context.tag_of(body.tag_id, body.tag_name) if body.tag_id or body.tag_name else stored.entry.tag_id
    entry = _entry(body, tag, stored.entry)
    try:
        container.faq.check_new(context.entries, [entry], skip=stored.chunk.id)
    except DuplicateQuestion as exc:
        raise _duplicate(exc) from None
    updated = container.faq.update(tenant.id, stored, entry, body.is_enabled)
    return Envelope(data=context.view(updated))


@router.post("/knowledge-bases/{kb_id}/faq/entries/{entry_id}/similar-questions")
def add_similar_questions(
    kb_id: str, entry_id: int, body: SimilarQuestions, tenant: TenantDep, container: ContainerDep
) -> Envelope[FAQEntryView]:
    """Add similar questions to an entry; a question another entry asks is refused."""
    context = _Context(container, tenant, kb_id)
    stored = context.by_number(entry_id)
    known = {q.casefold() for q in stored.entry.similar_questions}
    added = [q.strip() for q in body.similar_questions if q.strip().casefold() not in known]
    entry = stored.entry.model_copy(
        update={"similar_questions": [*stored.entry.similar_questions, *dict.fromkeys(added)]}
    )
    try:
        container.faq.check_new(context.entries, [entry], skip=stored.chunk.id)
    except DuplicateQuestion as exc:
        raise _duplicate(exc) from None
    updated = container.faq.update(tenant.id, stored, entry)
    return Envelope(data=context.view(updated))


@router.delete("/knowledge-bases/{kb_id}/faq/entries")
def delete_faq_entries(kb_id: str, body: DeleteEntries, tenant: TenantDep, container: ContainerDep) -> Success:
    """The entries named by number, all or none (an unknown number refuses the batch)."""
    context = _Context(container, tenant, kb_id)
    doomed = [context.by_number(number, "ids") for number in dict.fromkeys(body.ids)]
    for stored in doomed:
        container.faq.delete(tenant.id, stored)
    return Success()


class TaskRef(BaseModel):
    """The id of an import task (ragline imports before it replies, so the task is done)."""

    task_id: str


@router.post("/knowledge-bases/{kb_id}/faq/entries")
@upload_body
def upsert_faq_entries(kb_id: str, body: UpsertBody, tenant: TenantDep, container: ContainerDep) -> Envelope[TaskRef]:
    """Entries imported as one FAQ document before the reply.

    ``append`` skips an entry whose questions another entry already asks, ``replace`` deletes the knowledge base's
    entries (or those of ``knowledge_id``) first; ``dry_run`` only counts. The task id names the outcome.
    """
    context = _Context(container, tenant, kb_id)
    if body.task_id:
        logger.debug("faq upsert: a client task_id is not used; the reply names the task")
    replaced = []
    if body.mode == "replace":
        replaced = [e for e in context.entries if not body.knowledge_id or e.document.id == body.knowledge_id]
    gone = {e.chunk.id for e in replaced}
    taken: set[str] = set()
    for stored in context.entries:
        if stored.chunk.id not in gone:
            taken |= question_keys(stored.entry)
    kept: list[FAQEntry] = []
    skipped = 0
    for payload in body.entries:
        entry = _entry(payload, context.tag_of(payload.tag_id, payload.tag_name) if not body.dry_run else "")
        keys = question_keys(entry)
        if keys & taken:  # another entry (kept, or in this batch) already asks one of its questions
            skipped += 1
            continue
        taken |= keys
        kept.append(entry)
    if not body.dry_run:
        if body.mode == "replace":
            for stored in replaced:
                container.faq.delete(tenant.id, stored)
        if kept:
            container.faq.add(context.kb, kept, "FAQ")
    run = "dry" if body.dry_run else "run"
    return Envelope(data=TaskRef(task_id=f"faq-{body.mode}-{run}-{len(kept)}-{skipped}-{uuid.uuid4().hex[:8]}"))


class ImportProgress(BaseModel):
    """An import task's progress: always complete (ragline imports before it replies)."""

    task_id: str
    kb_id: str = ""
    status: Literal["completed"] = "completed"
    progress: int = 100
    total: int
    processed: int
    success_count: int
    failed_count: int = 0
    partial_failed_count: int = 0
    skipped_count: int
    failed_entries: list[dict[str, Any]] = Field(default_factory=list)
    message: str = ""
    error: str = ""
    dry_run: bool
    import_mode: str
    display_status: str = "open"


@router.get("/faq/import/progress/{task_id}")
def faq_import_progress(task_id: str, tenant: TenantDep) -> Envelope[ImportProgress]:
    """An import's outcome (imports finish before their reply here: every task is completed)."""
    match = _TASK.match(task_id)
    if match is None:
        raise ApiError(404, "not_found", "import task not found", "task_id")
    mode, run, success, skipped = match.group(1), match.group(2), int(match.group(3)), int(match.group(4))
    return Envelope(
        data=ImportProgress(
            task_id=task_id,
            total=success + skipped,
            processed=success + skipped,
            success_count=success,
            skipped_count=skipped,
            dry_run=run == "dry",
            import_mode=mode,
        )
    )


@router.put("/knowledge-bases/{kb_id}/faq/import/last-result/display")
def set_import_display(kb_id: str, body: DisplayBody, tenant: TenantDep, container: ContainerDep) -> Success:
    """WeKnora's result card of the last import: ragline shows none, so there is nothing to hide."""
    knowledge_base_of(container, tenant, kb_id)
    return Success()


def _matched_question(entry: FAQEntry, query: str) -> str:
    words = set(re.findall(r"\w+", query.casefold()))
    questions = [entry.standard_question, *entry.similar_questions]
    return max(questions, key=lambda q: len(words & set(re.findall(r"\w+", q.casefold()))))


@router.post("/knowledge-bases/{kb_id}/faq/search")
async def search_faq(
    kb_id: str, body: FAQSearchBody, tenant: TenantDep, container: ContainerDep
) -> Envelope[list[FAQEntryView]]:
    """Entries matching the query through the chat pipeline's search (vector and keyword).

    With priority tags, only entries of those tags, the first priority's before the second's.
    """
    context = await asyncio.to_thread(_Context, container, tenant, kb_id)
    by_chunk = {e.chunk.id: e for e in context.entries if e.chunk.enabled}
    if body.only_recommended:
        by_chunk = {k: e for k, e in by_chunk.items() if e.entry.is_recommended}
    documents = sorted({e.document.id for e in by_chunk.values()})
    if not documents:
        return Envelope(data=[])
    count = body.match_count or DEFAULT_MATCH_COUNT
    search = SearchBody(
        query=body.query_text,
        knowledge_base_ids=[context.kb.id],
        knowledge_ids=documents,
        top_k=MAX_MATCH_COUNT,
        vector_threshold=body.vector_threshold,
    )
    results = await container.search.search(tenant.id, search)
    priority: dict[str, int] = {}
    for rank, numbers in ((0, body.first_priority_tag_ids), (1, body.second_priority_tag_ids)):
        for number in numbers:
            tag = context.tags.find(str(number))
            for value in tag.stored if tag is not None else ():
                priority.setdefault(value, rank)
    hits: list[tuple[int, float, FAQEntryView]] = []
    for result in results:
        stored = by_chunk.get(result.id)
        if stored is None:
            continue
        group = priority.get(stored.entry.tag_id, 2) if priority else 0
        if priority and group == 2:
            continue
        view = FAQEntryView.of(stored, context.tags)
        view.score = result.score
        view.match_type = "keyword" if result.match_type == "keyword" else "vector"
        view.matched_question = _matched_question(stored.entry, body.query_text)
        hits.append((group, -result.score, view))
    hits.sort(key=lambda hit: (hit[0], hit[1]))
    return Envelope(data=[view for _, _, view in hits[:count]])
