"""Stored records, shared by every store adapter (SQLite, DynamoDB)."""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Sequence
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field, PlainSerializer, model_validator

from ragline.store.ids import new_id, utc_now


class Tenant(BaseModel):
    """A tenant: the owner of knowledge bases and sessions, found by API key."""

    id: str
    name: str
    created_at: str


def hash_key(api_key: str) -> str:
    """The SHA-256 of an API key, as keys are stored (the key itself never is)."""
    return hashlib.sha256(api_key.encode("utf-8")).hexdigest()


def generate_key() -> str:
    """A new random API key (``rl-`` and 32 URL-safe characters)."""
    return "rl-" + secrets.token_urlsafe(24)


class KnowledgeBaseSettings(BaseModel):
    """What a client chose for a knowledge base beyond ragline's switches.

    The chunking ragline honours (``chunk_size``, ``chunk_overlap``), the chat model picked for it, who made it, and
    the rest of WeKnora's settings (``indexing_strategy``, ``wiki_config``, ``storage_provider_config``, …) as sent:
    ragline stores and returns them so WeKnora's web app finds the knowledge base as it configured it.
    """

    # Characters per chunk; None: the deployment's (``ingestion.chunk_size``).
    chunk_size: int | None = None
    # Characters a chunk repeats of the one before it (within a section).
    chunk_overlap: int = 0
    summary_model_id: str = ""
    # The account that made it ("" when an API key did).
    creator_id: str = ""
    client_config: dict[str, Any] = Field(default_factory=dict)


def _settings_from_storage(value: Any) -> Any:
    # Both stores keep the settings as one JSON string (a DynamoDB map would turn numbers into Decimals).
    if isinstance(value, str):
        return json.loads(value) if value else {}
    return value


StoredSettings = Annotated[
    KnowledgeBaseSettings,
    BeforeValidator(_settings_from_storage),
    PlainSerializer(lambda settings: settings.model_dump_json(), return_type=str),
]


class KnowledgeBase(BaseModel):
    """A knowledge base: a tenant's collection of documents searched together, with one embedding model."""

    id: str
    tenant_id: str
    name: str
    description: str = ""
    embedding_model: str
    created_at: str
    # Wiki pages (chunk_type wiki_page) of this knowledge base are boosted in rerank when this is on.
    wiki_enabled: bool = False
    # Entities and relations are extracted from this knowledge base's documents for graph search.
    graph_extraction_enabled: bool = False
    # The language mix detected in its documents ("" until the first one): "en", "zh" or "mixed".
    language: str = ""
    # True when nobody chose the embedding model: ingestion picks it from the detected language.
    embedding_model_auto: bool = False
    # When it was pinned to the top of its tenant's list; None when it is not pinned.
    pinned_at: str | None = None
    settings: StoredSettings = Field(default_factory=KnowledgeBaseSettings)


class DocumentStatus(StrEnum):
    """Where a document is in ingestion.

    Stored and keyword-searchable (``pending``: vectors being computed), fully indexed, or failed (``reason`` says why).
    """

    PENDING = "pending"
    INDEXED = "indexed"
    FAILED = "failed"


class SummaryStatus(StrEnum):
    """Where a document's enrichment is (WeKnora's ``summary_status``).

    Enrichment is the generated questions per chunk, the summary and the knowledge base's description;
    ``none`` when nothing is generated for it (no generative model, or enrichment off).
    """

    NONE = "none"
    PENDING = "pending"
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"


class Document(BaseModel):
    """A stored document: its record, its ingestion status and the progress of its vectors."""

    id: str
    tenant_id: str
    knowledge_base_id: str
    title: str
    filename: str = ""
    file_type: str = "text"
    description: str = ""
    source: str = ""
    content_hash: str = ""
    # Searchable chunks (the ones that get a vector); parent chunks are not counted.
    chunk_count: int = 0
    enabled: bool = True
    created_at: str = Field(default_factory=utc_now)
    tags: list[str] = Field(default_factory=list)
    # Records written before statuses existed were indexed in the request that stored them.
    status: DocumentStatus = DocumentStatus.INDEXED
    reason: str = ""
    # Progress of the vectors: ``embedded_count`` of ``chunk_count`` chunks have theirs.
    embedded_count: int = 0
    size_bytes: int = 0
    # Pages of a paged source (PDF, slides); 0 when the format has none.
    pages: int = 0
    # The embedding model of the vectors (the knowledge base's model when the work was scheduled).
    embedding_model: str = ""
    updated_at: str = ""
    summary_status: SummaryStatus = SummaryStatus.NONE

    @model_validator(mode="after")
    def _updated_at_defaults_to_created_at(self) -> Document:
        if not self.updated_at:
            self.updated_at = self.created_at
        return self


def document_changes(
    document: Document, *, title: str | None, description: str | None, tags: Sequence[str] | None
) -> dict[str, Any]:
    """The fields an update of a document's title, description or tags changes (empty: nothing to write).

    Tags are kept stripped, once each, in order.
    """
    changes: dict[str, Any] = {}
    if title is not None and title != document.title:
        changes["title"] = title
    if description is not None and description != document.description:
        changes["description"] = description
    if tags is not None:
        cleaned = list(dict.fromkeys(t.strip() for t in tags if t.strip()))
        if cleaned != document.tags:
            changes["tags"] = cleaned
    return changes


class DocumentTotals(BaseModel):
    """A knowledge base's documents counted whole: how many, their chunks, how many are still indexing."""

    documents: int = 0
    chunks: int = 0
    processing: int = 0


class Tag(BaseModel):
    """A tag registered in a knowledge base: documents given its id carry it."""

    id: str
    tenant_id: str
    knowledge_base_id: str
    name: str
    color: str = ""
    sort_order: int = 0
    created_at: str
    updated_at: str


def new_tag(tenant_id: str, kb_id: str, name: str, *, color: str = "", sort_order: int = 0, tag_id: str = "") -> Tag:
    """A new tag record, created and updated now (``tag_id`` to register one under a given id)."""
    now = utc_now()
    return Tag(
        id=tag_id or new_id(),
        tenant_id=tenant_id,
        knowledge_base_id=kb_id,
        name=name,
        color=color,
        sort_order=sort_order,
        created_at=now,
        updated_at=now,
    )


def tag_changes(tag: Tag, *, name: str | None, color: str | None, sort_order: int | None) -> dict[str, Any]:
    """The fields an update changes (empty: nothing to write)."""
    changes: dict[str, Any] = {}
    if name is not None and name != tag.name:
        changes["name"] = name
    if color is not None and color != tag.color:
        changes["color"] = color
    if sort_order is not None and sort_order != tag.sort_order:
        changes["sort_order"] = sort_order
    return changes


def retagged(tags: Sequence[str], old: str, new: str | None) -> list[str]:
    """``tags`` with ``old`` replaced by ``new`` (dropped when None), each tag once, in their order."""
    kept = [new if tag == old else tag for tag in tags]
    return list(dict.fromkeys(tag for tag in kept if tag is not None))


class Chunk(BaseModel):
    """A passage of a document as stored: its text, its place in the document and its links to its neighbours."""

    id: str
    tenant_id: str
    knowledge_base_id: str
    knowledge_id: str
    chunk_index: int
    chunk_type: str = "text"
    content: str
    header: str = ""
    parent_chunk_id: str = ""
    pre_chunk_id: str = ""
    next_chunk_id: str = ""
    start_at: int = 0
    end_at: int = 0
    metadata: dict[str, object] = Field(default_factory=dict)
    # Parent chunks carry context for their children; they are not matched directly.
    searchable: bool = True
    enabled: bool = True


class DuplicateName(Exception):
    """A name already taken in its scope (a knowledge base's name in its tenant, a tag's in its knowledge base)."""

    pass


class Session(BaseModel):
    """A conversation: its title, the knowledge bases it searches and its options."""

    id: str
    tenant_id: str
    title: str = ""
    description: str = ""
    # When the session was pinned to the top of its tenant's list; None when it is not pinned.
    pinned_at: str | None = None
    # The title is the first question's words, shown until the generated title replaces it.
    title_provisional: bool = False
    knowledge_base_ids: list[str] = Field(default_factory=list)
    options: dict[str, Any] = Field(default_factory=dict)
    created_at: str
    updated_at: str


class Message(BaseModel):
    """One message of a session: a user's question or an assistant's answer (pending until completed)."""

    id: str
    session_id: str
    tenant_id: str
    request_id: str
    role: str
    content: str = ""
    knowledge_references: list[dict[str, Any]] = Field(default_factory=list)
    is_completed: bool = False
    stop_reason: str = ""
    created_at: str
    updated_at: str
    # The reader's rating of an answer ("up", "down" or "" for none) and what they wrote about it.
    feedback: str = ""
    feedback_comment: str = ""
    # A regenerated or edited turn: the assistant message of the turn it is an alternative to (the first of
    # its group); the history a model reads keeps the newest alternative only.
    alternative_of: str = ""
    # Who asked (the caller's X-User-Id; "" is the tenant's default user): the memory-affinity boost counts
    # only the documents this person's answers cited.
    user_id: str = ""
    # The images of a user's question (WeKnora's ``images``): ``{"url": "resource://images/…", "caption"}``,
    # the caption being what query understanding saw in the image (for the next turn's history).
    images: list[dict[str, str]] = Field(default_factory=list)


def new_session(
    tenant_id: str,
    knowledge_base_ids: Sequence[str],
    title: str = "",
    options: dict[str, Any] | None = None,
    description: str = "",
) -> Session:
    """A new session record, created and updated now."""
    now = utc_now()
    return Session(
        id=new_id(),
        tenant_id=tenant_id,
        title=title,
        description=description,
        knowledge_base_ids=list(knowledge_base_ids),
        options=options or {},
        created_at=now,
        updated_at=now,
    )


def new_turn(
    session: Session,
    request_id: str,
    query: str,
    alternative_of: str = "",
    user_id: str = "",
    images: Sequence[dict[str, str]] = (),
) -> tuple[Message, Message]:
    """The user message (complete) and the assistant message (pending) of one turn, not yet stored."""
    now = utc_now()
    user = Message(
        id=new_id(),
        session_id=session.id,
        tenant_id=session.tenant_id,
        request_id=request_id,
        role="user",
        content=query,
        is_completed=True,
        created_at=now,
        updated_at=now,
        alternative_of=alternative_of,
        user_id=user_id,
        images=[dict(image) for image in images],
    )
    assistant = user.model_copy(
        update={"id": new_id(), "role": "assistant", "content": "", "is_completed": False, "images": []}
    )
    return user, assistant


class FAQEntry(BaseModel):
    """One FAQ: a standard question, its paraphrases, questions it must NOT answer, and the answer(s)."""

    standard_question: str = Field(min_length=1)
    similar_questions: list[str] = Field(default_factory=list)
    negative_questions: list[str] = Field(default_factory=list)
    answers: list[str] = Field(min_length=1)
    # WeKnora's entry fields: marked as recommended, its tag (the string documents carry), how its answers
    # are given ("all", or one at "random").
    is_recommended: bool = False
    tag_id: str = ""
    answer_strategy: str = "all"

    @model_validator(mode="before")
    @classmethod
    def _answer_alias(cls, data: Any) -> Any:
        """Accept ``answer`` (one string) and ``question`` as spellings of ``answers`` / ``standard_question``."""
        if isinstance(data, dict):
            data = dict(data)
            if "answers" not in data and "answer" in data:
                answer = data.pop("answer")
                data["answers"] = answer if isinstance(answer, list) else [answer]
            if "standard_question" not in data and "question" in data:
                data["standard_question"] = data.pop("question")
        return data
