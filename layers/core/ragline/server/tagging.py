"""A knowledge base's tags as WeKnora's clients see them, registered and implicit.

A knowledge base's tags as WeKnora's clients see them: the registered ones (created through the tag API: a name, a
colour, an order) and the implicit ones, strings documents carry that were never registered (ragline's free ``tags``),
whose id is the string itself. Either is found by its id, its number (``seq_id``: WeKnora's FAQ and filter fields name
tags by an integer) or, for a filter, its name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ragline.server.wire import stable_number
from ragline.store.models import Document, Tag


@dataclass
class TagEntry:
    """A tag as listed: registered or implicit, with the documents that carry it."""

    id: str
    name: str
    color: str = ""
    sort_order: int = 0
    created_at: str = ""
    updated_at: str = ""
    registered: bool = False
    documents: list[Document] = field(default_factory=list)

    @property
    def seq_id(self) -> int:
        """The tag's number (WeKnora's ``seq_id``): the stable number of its id."""
        return stable_number(self.id)

    @property
    def stored(self) -> set[str]:
        """The strings a document carries when it has this tag: its id, and its name."""
        return {self.id, self.name}


class TagIndex:
    """A knowledge base's tags, registered and implicit, with the documents carrying each."""

    def __init__(self, registered: Iterable[Tag], documents: Iterable[Document]) -> None:
        """An index of ``registered`` tags and the tags ``documents`` carry (a registered tag is found by id or name)."""
        self.entries: dict[str, TagEntry] = {}
        by_name: dict[str, TagEntry] = {}
        for tag in registered:
            entry = TagEntry(tag.id, tag.name, tag.color, tag.sort_order, tag.created_at, tag.updated_at, True)
            self.entries[tag.id] = entry
            by_name.setdefault(tag.name, entry)
        for document in sorted(documents, key=lambda d: d.created_at):
            carried: set[str] = set()
            for value in dict.fromkeys(document.tags):
                found = self.entries.get(value) or by_name.get(value)
                if found is None:
                    found = TagEntry(value, value, created_at=document.created_at, updated_at=document.created_at)
                    self.entries[value] = found
                if found.id not in carried:  # a document carrying a tag's id and its name counts once
                    carried.add(found.id)
                    found.documents.append(document)
        self._by_name = by_name
        self._by_number = {e.seq_id: e for e in self.entries.values()}

    def find(self, ref: str) -> TagEntry | None:
        """A tag by id, or by its number."""
        entry = self.entries.get(ref)
        if entry is None and ref.strip().isdigit():
            entry = self._by_number.get(int(ref))
        return entry

    def listing(self) -> list[TagEntry]:
        """The tags by order, then name."""
        return sorted(self.entries.values(), key=lambda e: (e.sort_order, e.name))

    def filter_values(self, refs: Iterable[str]) -> list[str]:
        """What documents carry for any of ``refs`` (ids, numbers or names).

        An unknown ref stays as it is (it matches the documents carrying that very string, if any).
        """
        values: list[str] = []
        for ref in refs:
            entry = self.find(ref) or self._by_name.get(ref)
            values.extend(sorted(entry.stored) if entry is not None else [ref])
        return list(dict.fromkeys(values))
