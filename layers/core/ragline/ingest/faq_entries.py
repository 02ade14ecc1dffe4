"""FAQ entries one by one.

Each is an ``faq`` chunk of an FAQ document, found, edited and deleted in place (WeKnora's FAQ API; ragline's bulk
import makes the same chunks).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragline.ingest.chunk_edits import ChunkEditor
from ragline.ingest.removal import KnowledgeRemoval
from ragline.ingest.service import IngestService
from ragline.store.base import KnowledgeStore
from ragline.store.models import Chunk, Document, FAQEntry, KnowledgeBase
from ragline.types import ChunkType

# Documents read to gather a knowledge base's FAQ entries.
MAX_FAQ_DOCUMENTS = 100_000


def faq_content(entry: FAQEntry) -> str:
    """What keyword search reads of an entry: its questions and answers (its vector: the questions)."""
    return "\n".join([entry.standard_question, *entry.similar_questions, *entry.answers])


def question_keys(entry: FAQEntry) -> set[str]:
    """An entry's questions as compared for duplicates: whitespace collapsed, case folded."""
    return {" ".join(q.split()).casefold() for q in (entry.standard_question, *entry.similar_questions)}


@dataclass
class StoredEntry:
    """An FAQ entry as stored: its chunk, its document and the entry read from the chunk."""

    chunk: Chunk
    document: Document
    entry: FAQEntry


class DuplicateQuestion(ValueError):
    """A standard or similar question another entry of the knowledge base already has."""


class FAQEntries:
    """The FAQ entries of a knowledge base: listed, added, edited and deleted one by one."""

    def __init__(
        self, knowledge: KnowledgeStore, ingest: IngestService, edits: ChunkEditor, removal: KnowledgeRemoval
    ) -> None:
        """Entries kept through ``knowledge`` and ``ingest``, edited with ``edits``, deleted with ``removal``."""
        self._knowledge = knowledge
        self._ingest = ingest
        self._edits = edits
        self._removal = removal

    def entries(self, tenant_id: str, kb_id: str) -> list[StoredEntry]:
        """Every FAQ entry of the knowledge base, oldest document first, in each document's order."""
        found: list[StoredEntry] = []
        documents = self._knowledge.documents(tenant_id, kb_id, limit=MAX_FAQ_DOCUMENTS)
        for document in sorted(documents, key=lambda d: d.created_at):
            if document.file_type != "faq":
                continue
            for chunk in self._knowledge.chunks_of_document(tenant_id, document.id):
                if chunk.chunk_type == ChunkType.FAQ:
                    found.append(StoredEntry(chunk, document, FAQEntry.model_validate(chunk.metadata)))
        return found

    def check_new(self, existing: Sequence[StoredEntry], entries: Sequence[FAQEntry], *, skip: str = "") -> None:
        """No question of ``entries`` may be one another entry already asks (the entry ``skip`` aside)."""
        taken: dict[str, str] = {}
        for stored in existing:
            if stored.chunk.id != skip:
                taken.update(dict.fromkeys(question_keys(stored.entry), stored.entry.standard_question))
        for entry in entries:
            clash = question_keys(entry) & set(taken)
            if clash:
                raise DuplicateQuestion(f"{entry.standard_question!r} repeats a question of {taken[min(clash)]!r}")
            taken.update(dict.fromkeys(question_keys(entry), entry.standard_question))

    def add(self, kb: KnowledgeBase, entries: Sequence[FAQEntry], title: str) -> list[StoredEntry]:
        """New entries as one FAQ document (chunked, embedded and indexed before returning)."""
        result = self._ingest.ingest_faq(kb, list(entries), title=title)
        chunks = self._knowledge.chunks_of_document(kb.tenant_id, result.document.id)
        document = self._knowledge.document(kb.tenant_id, result.document.id) or result.document
        return [StoredEntry(c, document, FAQEntry.model_validate(c.metadata)) for c in chunks]

    def update(self, tenant_id: str, stored: StoredEntry, entry: FAQEntry, enabled: bool | None = None) -> StoredEntry:
        """The entry changed in place: same id, its text and vector made again."""
        chunk = self._edits.update(
            tenant_id, stored.chunk.id, content=faq_content(entry), metadata=entry.model_dump(), enabled=enabled
        )
        if chunk is None:
            raise LookupError(stored.chunk.id)
        return StoredEntry(chunk, stored.document, entry)

    def delete(self, tenant_id: str, stored: StoredEntry) -> None:
        """The entry; its document too once it holds no entry."""
        self._removal.delete_chunk(tenant_id, stored.chunk.id)
        left = [
            c
            for c in self._knowledge.chunks_of_document(tenant_id, stored.document.id)
            if c.chunk_type == ChunkType.FAQ
        ]
        if not left:
            self._removal.delete_document(tenant_id, stored.document.id)
