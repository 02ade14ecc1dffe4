"""The request bodies of WeKnora's FAQ routes: entries, batch updates, imports and the FAQ search."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragline.server.schemas.fields import Threshold
from ragline.types.text import PlainName, PlainText

# Entries (or entry numbers) one batch names at most.
MAX_BATCH = 5000
# Similar questions, negative questions or answers of one entry.
MAX_QUESTIONS_PER_ENTRY = 200
# Entries an FAQ search returns at most.
MAX_MATCH_COUNT = 200

# A question an entry answers (or must not): no NUL or bidi controls, as in any question.
Question = Annotated[PlainText, Field(min_length=1, max_length=2000)]


class FAQEntryPayload(BaseModel):
    """WeKnora's ``FAQEntryPayload``."""

    model_config = ConfigDict(extra="forbid")
    id: int | None = None
    standard_question: PlainText = Field(min_length=1, max_length=2000)
    similar_questions: list[Question] = Field(default_factory=list, max_length=MAX_QUESTIONS_PER_ENTRY)
    negative_questions: list[Question] = Field(default_factory=list, max_length=MAX_QUESTIONS_PER_ENTRY)
    answers: list[Annotated[str, Field(min_length=1, max_length=20_000)]] = Field(
        min_length=1, max_length=MAX_QUESTIONS_PER_ENTRY
    )
    answer_strategy: Literal["all", "random"] | None = None
    tag_id: int | None = None
    tag_name: PlainName | None = Field(default=None, max_length=100)
    is_enabled: bool | None = None
    is_recommended: bool | None = None


class FieldsUpdate(BaseModel):
    """The flags and tag to set on one entry (absent: unchanged)."""

    model_config = ConfigDict(extra="forbid")
    is_enabled: bool | None = None
    is_recommended: bool | None = None
    tag_id: int | None = None


class FieldsBatch(BaseModel):
    """Flag updates by entry number or by tag number, less ``exclude_ids``."""

    model_config = ConfigDict(extra="forbid")
    by_id: dict[int, FieldsUpdate] | None = None
    by_tag: dict[int, FieldsUpdate] | None = None
    exclude_ids: list[int] = Field(default_factory=list, max_length=MAX_BATCH)


class TagsBatch(BaseModel):
    """Entry number → tag number (None: no tag)."""

    model_config = ConfigDict(extra="forbid")
    updates: dict[int, int | None] = Field(min_length=1)


class SimilarQuestions(BaseModel):
    """Questions to add to an entry as similar questions."""

    model_config = ConfigDict(extra="forbid")
    similar_questions: list[Question] = Field(min_length=1, max_length=MAX_QUESTIONS_PER_ENTRY)


class DeleteEntries(BaseModel):
    """The entry numbers to delete."""

    model_config = ConfigDict(extra="forbid")
    ids: list[int] = Field(min_length=1, max_length=MAX_BATCH)


class UpsertBody(BaseModel):
    """WeKnora's ``FAQBatchUpsertPayload``."""

    model_config = ConfigDict(extra="forbid")
    entries: list[FAQEntryPayload] = Field(min_length=1, max_length=MAX_BATCH)
    mode: Literal["append", "replace"]
    knowledge_id: str | None = Field(default=None, max_length=200)
    task_id: str | None = Field(default=None, max_length=200)
    dry_run: bool = False


class DisplayBody(BaseModel):
    """Whether the FAQ is shown open or closed in WeKnora's client."""

    model_config = ConfigDict(extra="forbid")
    display_status: Literal["open", "close"]


class FAQSearchBody(BaseModel):
    """WeKnora's ``FAQSearchRequest``."""

    model_config = ConfigDict(extra="forbid")
    query_text: PlainText = Field(min_length=1, max_length=8000)
    vector_threshold: Threshold | None = None
    match_count: int | None = Field(default=None, ge=0, le=MAX_MATCH_COUNT)
    first_priority_tag_ids: list[int] = Field(default_factory=list, max_length=100)
    second_priority_tag_ids: list[int] = Field(default_factory=list, max_length=100)
    only_recommended: bool = False
