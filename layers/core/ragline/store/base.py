"""Store ports. Adapters: SQLite (embedded runtime) and DynamoDB (AWS)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from ragline.store.models import (
    Chunk,
    Document,
    DocumentStatus,
    DocumentTotals,
    KnowledgeBase,
    KnowledgeBaseSettings,
    Message,
    Session,
    SummaryStatus,
    Tag,
    Tenant,
)


class TenantStore(Protocol):
    """Tenants and their API keys; a tenant is found by the hash of a key, never by the key itself."""

    def create(self, name: str, api_key: str | None = None) -> tuple[Tenant, str]:
        """A new tenant with one API key; returns the key in clear text (only its hash is stored)."""
        ...

    def add_key(self, tenant_id: str, api_key: str) -> None:
        """Give the tenant another API key (kept as its hash); adding a key it already has does nothing."""
        ...

    def for_key(self, api_key: str) -> Tenant | None:
        """The tenant an API key belongs to, or None for an unknown or empty key."""
        ...

    def by_id(self, tenant_id: str) -> Tenant | None:
        """The tenant ``tenant_id``, or None."""
        ...

    def by_name(self, name: str) -> Tenant | None:
        """The first tenant created under ``name``, or None (names are not unique)."""
        ...


class KnowledgeStore(Protocol):
    """Every read takes the tenant: another tenant's id reads as absent."""

    def create_knowledge_base(
        self,
        tenant_id: str,
        name: str,
        embedding_model: str,
        description: str = "",
        wiki_enabled: bool = False,
        graph_extraction_enabled: bool = False,
        embedding_model_auto: bool = False,
        settings: KnowledgeBaseSettings | None = None,
    ) -> KnowledgeBase:
        """A new knowledge base of the tenant; a name the tenant already uses raises :class:`DuplicateName`."""
        ...

    def set_embedding_model(
        self, tenant_id: str, kb_id: str, embedding_model: str, *, language: str | None = None, auto: bool | None = None
    ) -> KnowledgeBase | None:
        """Sets the model its vectors are made with (``language`` / ``auto`` when given).

        None when the knowledge base is not this tenant's.
        """
        ...

    def knowledge_base(self, tenant_id: str, kb_id: str) -> KnowledgeBase | None:
        """The tenant's knowledge base ``kb_id``, or None when it is not the tenant's."""
        ...

    def knowledge_bases(self, tenant_id: str, kb_ids: Iterable[str]) -> list[KnowledgeBase]:
        """The tenant's knowledge bases among ``kb_ids`` (each once, unknown ones left out)."""
        ...

    def knowledge_base_by_name(self, tenant_id: str, name: str) -> KnowledgeBase | None:
        """The tenant's knowledge base called ``name``, or None."""
        ...

    def knowledge_base_any_tenant(self, kb_id: str) -> KnowledgeBase | None:
        """For internal settings lookups only (never for serving a request): the knowledge base by id."""
        ...

    def list_knowledge_bases(self, tenant_id: str) -> list[KnowledgeBase]:
        """The tenant's knowledge bases, oldest first."""
        ...

    def document_counts(self, kb_ids: Sequence[str]) -> dict[str, int]:
        """How many documents each knowledge base holds; knowledge bases without any are left out."""
        ...

    def update_knowledge_base(
        self,
        tenant_id: str,
        kb_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        pinned: bool | None = None,
        settings: KnowledgeBaseSettings | None = None,
    ) -> KnowledgeBase | None:
        """Rename, re-describe, pin, unpin or re-set a knowledge base (None: not this tenant's).

        ``settings`` replaces the stored settings whole. A name taken by another of the
        tenant's knowledge bases raises :class:`DuplicateName`.
        """
        ...

    def delete_knowledge_base(self, tenant_id: str, kb_id: str) -> bool:
        """Removes the knowledge base with its documents and chunks; False when it is not this tenant's.

        An external search index and graph are the caller's to clear (see ``ingest/removal.py``).
        """
        ...

    def insert_document(self, document: Document, chunks: Sequence[Chunk]) -> None:
        """Store a new document and its chunks (a pending one is also listed for the indexing worker)."""
        ...

    def delete_document(self, tenant_id: str, document_id: str) -> bool:
        """Removes the document and its chunks; False when it is not this tenant's."""
        ...

    def replace_document(self, document: Document, chunks: Sequence[Chunk]) -> bool:
        """A stored document parsed again.

        Its record becomes ``document`` (same id, tenant, knowledge base and creation time) and its chunks ``chunks``,
        the old ones gone; False when it is not stored. The index is the caller's.
        """
        ...

    def update_chunk(
        self,
        tenant_id: str,
        chunk_id: str,
        *,
        content: str | None = None,
        enabled: bool | None = None,
        metadata: dict[str, object] | None = None,
        searchable: bool | None = None,
    ) -> Chunk | None:
        """A chunk's text, enabled flag or metadata changed (None: not this tenant's).

        The index is the caller's.
        """
        ...

    def delete_chunk(self, tenant_id: str, chunk_id: str) -> bool:
        """Removes one chunk.

        Its neighbours link to each other, its children lose their parent, its document counts one chunk less. False
        when it is not this tenant's.
        """
        ...

    def update_document(
        self,
        tenant_id: str,
        document_id: str,
        *,
        title: str | None = None,
        description: str | None = None,
        tags: Sequence[str] | None = None,
    ) -> Document | None:
        """Change a document's title, description or tags; the document as stored after.

        None leaves a field as it is; a change is activity (``updated_at``). None when the document is not this
        tenant's. The index is the caller's.
        """
        ...

    def replace_document_tag(self, tenant_id: str, kb_id: str, old: str, new: str | None) -> int:
        """Every document of the knowledge base carrying ``old`` carries ``new`` instead (nothing when None).

        Returns how many changed.
        """
        ...

    def document(self, tenant_id: str, document_id: str) -> Document | None:
        """The tenant's document ``document_id``, or None when it is not the tenant's."""
        ...

    def documents(self, tenant_id: str, kb_id: str, limit: int = 1000, offset: int = 0) -> list[Document]:
        """One page of a knowledge base's documents, oldest first."""
        ...

    def document_totals(self, tenant_id: str, kb_id: str) -> DocumentTotals:
        """Every document of the knowledge base counted, however many (not one page of them)."""
        ...

    def documents_by_hash(self, tenant_id: str, kb_id: str, content_hash: str) -> Document | None:
        """The tenant's document of this knowledge base with this content hash (a duplicate upload), or None."""
        ...

    def set_document_status(
        self,
        tenant_id: str,
        document_id: str,
        status: DocumentStatus,
        *,
        reason: str = "",
        embedded_count: int | None = None,
        embedding_model: str | None = None,
    ) -> Document | None:
        """Set a document's status, failure reason and progress; the document as stored after.

        Status, failure reason and progress of a document (None fields keep their value; ``updated_at`` becomes now);
        None when the document is not this tenant's.
        """
        ...

    def set_summary_status(self, tenant_id: str, document_id: str, status: SummaryStatus) -> Document | None:
        """Where the document's enrichment is; None when the document is not this tenant's (or is gone).

        ``updated_at`` is unchanged: it is not an edit.
        """
        ...

    def pending_documents(self, limit: int = 100, updated_before: str = "") -> list[Document]:
        """Pending documents of every tenant, oldest first, for the indexing worker and recovery.

        Pending documents of every tenant, oldest first (for the indexing worker and recovery only, never for serving a
        request); with ``updated_before``, those without progress since then.
        """
        ...

    def document_ids_with_tags(self, tenant_id: str, kb_id: str, tags: Sequence[str]) -> list[str]:
        """Ids of the knowledge base's documents that carry any of ``tags``."""
        ...

    def chunks_of_document(self, tenant_id: str, document_id: str) -> list[Chunk]:
        """The document's chunks (parents and FAQ entries included), in document order."""
        ...

    def chunks(self, tenant_id: str, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The tenant's chunks among ``chunk_ids``, in the order asked; unknown ones are left out."""
        ...

    def atomic(self) -> AbstractContextManager[object]:
        """A scope in which a document and its index entries are written together where the backend can."""
        ...


@runtime_checkable
class PartStore(Protocol):
    """A knowledge store that can store one document in several transactions.

    A document of many chunks stored in one transaction holds the database's writer lock for seconds (a 20 MB upload:
    7 s under load), and every chat turn's writes wait behind it. Stored in parts, the document is marked as being
    stored until its last part commits: indexing leaves it alone meanwhile, and a store that stops part-way (a crash)
    leaves a document that :meth:`sweep_unfinished` removes whole.
    """

    def begin_document(self, document: Document, chunks: Sequence[Chunk], *, searchable_total: int) -> None:
        """The document's row and its first ``chunks``, marked as being stored."""
        ...

    def add_chunks(self, document: Document, chunks: Sequence[Chunk]) -> bool:
        """The next part; False when the document is gone (deleted meanwhile)."""
        ...

    def finish_document(self, document_id: str) -> None:
        """The last part is stored: a whole pending document from now on."""
        ...

    def sweep_unfinished(self, untouched_for_s: float) -> list[Document]:
        """Removes the documents whose store stopped part-way, untouched this long; returns them."""
        ...


class TagStore(Protocol):
    """Tags registered in a knowledge base; a name is unique within it. Another tenant's reads as absent."""

    def create_tag(
        self, tenant_id: str, kb_id: str, name: str, *, color: str = "", sort_order: int = 0, tag_id: str = ""
    ) -> Tag:
        """A new tag (``tag_id`` to register one under a given id); a taken name raises DuplicateName."""
        ...

    def tag(self, tenant_id: str, kb_id: str, tag_id: str) -> Tag | None:
        """The knowledge base's tag ``tag_id``, or None when it is not this tenant's."""
        ...

    def tags(self, tenant_id: str, kb_id: str) -> list[Tag]:
        """By ``sort_order``, then name."""
        ...

    def update_tag(
        self,
        tenant_id: str,
        kb_id: str,
        tag_id: str,
        *,
        name: str | None = None,
        color: str | None = None,
        sort_order: int | None = None,
    ) -> Tag | None:
        """Rename, recolour or reorder a tag; the tag as stored after, or None when it is not this tenant's."""
        ...

    def delete_tag(self, tenant_id: str, kb_id: str, tag_id: str) -> bool:
        """Remove a tag's registration (documents keep the string); False when it is not this tenant's."""
        ...


class SessionStore(Protocol):
    """Sessions and their messages; every read takes the tenant, so another tenant's id reads as absent."""

    def create_session(
        self,
        tenant_id: str,
        knowledge_base_ids: Sequence[str],
        title: str = "",
        options: dict[str, Any] | None = None,
        description: str = "",
    ) -> Session:
        """A new session of the tenant over ``knowledge_base_ids``."""
        ...

    def session(self, tenant_id: str, session_id: str) -> Session | None:
        """The tenant's session ``session_id``, or None when it is not the tenant's."""
        ...

    def update_session(
        self,
        tenant_id: str,
        session_id: str,
        *,
        title: str | None = None,
        description: str | None = None,
        pinned: bool | None = None,
    ) -> Session | None:
        """Changes what is given (None leaves a field as it is).

        The session as stored after, or None when there is no such session of this tenant's. A title or description
        change is activity (``updated_at``); pinning is not.
        """
        ...

    def delete_session(self, tenant_id: str, session_id: str) -> bool:
        """Removes the session and its messages; False when there is no such session of this tenant's."""
        ...

    def clear_messages(self, tenant_id: str, session_id: str) -> int:
        """Removes every message of this tenant's session and keeps the session; how many were removed."""
        ...

    def sessions(self, tenant_id: str, limit: int = 100) -> list[Session]:
        """The tenant's sessions, most recently active first, at most ``limit``."""
        ...

    def set_title(self, tenant_id: str, session_id: str, title: str) -> None:
        """The generated title (no longer provisional); an update is activity (``updated_at``)."""
        ...

    def set_provisional_title(self, tenant_id: str, session_id: str, title: str) -> bool:
        """Title a session that has no title yet with a provisional ``title``.

        Titles a session that has no title yet with ``title``, marked provisional (a generated title replaces it); False
        when the session has a title or is not this tenant's. Not activity.
        """
        ...

    def create_turn(
        self,
        session: Session,
        request_id: str,
        query: str,
        alternative_of: str = "",
        user_id: str = "",
        images: Sequence[dict[str, str]] = (),
    ) -> tuple[Message, Message]:
        """The turn's two messages, stored together.

        ``alternative_of``: the assistant message of the turn this one regenerates or edits; ``user_id``: who
        asked; ``images``: the question's images (``url`` handle, ``caption``), kept on the user message.
        """
        ...

    def set_image_description(self, session_id: str, message_id: str, text: str) -> None:
        """What query understanding saw in a user message's images, as its first image's caption.

        The next turn's history says what the images showed (the reference keeps it so). Nothing for a
        message without images.
        """
        ...

    def add_messages(self, messages: Sequence[Message]) -> None:
        """Stores messages as they are (a forked session's copies)."""
        ...

    def delete_messages(self, tenant_id: str, session_id: str, message_ids: Sequence[str]) -> int:
        """Removes the named messages of this tenant's session; how many were removed."""
        ...

    def set_feedback(
        self, tenant_id: str, session_id: str, message_id: str, rating: str, comment: str
    ) -> Message | None:
        """The reader's rating (``up``, ``down``, ``""``) and comment on a message.

        The message as stored after, or None when it is not this tenant's. Not activity.
        """
        ...

    def complete_assistant_message(
        self, session_id: str, message_id: str, content: str, references: list[dict[str, Any]], stop_reason: str = ""
    ) -> bool:
        """Completes a pending assistant message once; False when it was already completed (or is not one)."""
        ...

    def incomplete_assistant_messages(self, limit: int = 1000) -> list[Message]:
        """Assistant messages not completed yet, of every tenant, oldest first.

        The turns that may still be running, or whose runner is gone (for recovery; never for serving a request).
        """
        ...

    def message_by_request(self, tenant_id: str, session_id: str, request_id: str) -> tuple[Message, Message] | None:
        """The (user, assistant) pair of an earlier turn with this request id: a repeated request is one turn."""
        ...

    def message(self, tenant_id: str, session_id: str, message_id: str) -> Message | None:
        """The tenant's message ``message_id`` of the session, or None."""
        ...

    def messages(self, tenant_id: str, session_id: str, limit: int = 1000) -> list[Message]:
        """The session's messages, oldest first, a turn's question before its answer."""
        ...

    def recent_messages(self, session_id: str, limit: int) -> list[Message]:
        """The newest ``limit`` messages, newest first."""
        ...

    def delete_message(self, tenant_id: str, session_id: str, message_id: str) -> bool:
        """Removes one message of the session; False when there is no such message of this tenant's."""
        ...
