"""Tags of a knowledge base (WeKnora's ``/knowledge-bases/{id}/tags``).

Documents carry tags as strings; a tag registered here has an id, a name, a colour and an order, and the
documents given its id (``tag_id`` on upload) carry that id. Tags documents carry that nobody registered
(ragline's free ``tags``) are listed too, their id being the string itself; updating one registers it.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel

from ragline.container import Container
from ragline.server.deps import ContainerDep, TenantDep, knowledge_base_of
from ragline.server.errors import ApiError
from ragline.server.schemas.tags import TagBody, TagUpdateBody
from ragline.server.tagging import TagEntry, TagIndex
from ragline.server.views import Envelope
from ragline.server.wire import tenant_number
from ragline.store.models import DuplicateName, KnowledgeBase

router = APIRouter(prefix="/api/v1/knowledge-bases/{kb_id}/tags", tags=["tags"])

TAG_PAGE_SIZE = 20
MAX_PAGE_SIZE = 1000
# Documents read to count a knowledge base's tags.
MAX_COUNTED_DOCUMENTS = 100_000


class TagView(BaseModel):
    """A tag as WeKnora shows it: id, number, name, colour, order and usage counts."""

    id: str
    seq_id: int
    tenant_id: int
    knowledge_base_id: str
    name: str
    color: str
    sort_order: int
    created_at: str
    updated_at: str
    knowledge_count: int
    chunk_count: int

    @classmethod
    def of(cls, entry: TagEntry, kb: KnowledgeBase) -> TagView:
        """The view of ``entry`` in ``kb``."""
        return cls(
            id=entry.id,
            seq_id=entry.seq_id,
            tenant_id=tenant_number(kb.tenant_id),
            knowledge_base_id=kb.id,
            name=entry.name,
            color=entry.color,
            sort_order=entry.sort_order,
            created_at=entry.created_at or kb.created_at,
            updated_at=entry.updated_at or entry.created_at or kb.created_at,
            knowledge_count=len(entry.documents),
            chunk_count=sum(d.chunk_count for d in entry.documents),
        )


class TagsPage(BaseModel):
    """A page of tags, with the total."""

    total: int
    page: int
    page_size: int
    data: list[TagView]


def tag_index(container: Container, kb: KnowledgeBase) -> TagIndex:
    """The knowledge base's registered and implicit tags, counted over its documents."""
    documents = container.knowledge.documents(kb.tenant_id, kb.id, limit=MAX_COUNTED_DOCUMENTS)
    return TagIndex(container.tags.tags(kb.tenant_id, kb.id), documents)


def tag_value(container: Container, kb: KnowledgeBase, ref: str) -> str:
    """What a document given tag ``ref`` (an id or a number) carries.

    A known tag's id, else ``ref`` itself (a new implicit tag).
    """
    entry = tag_index(container, kb).find(ref)
    return entry.id if entry is not None else ref


def tag_filter(container: Container, tenant_id: str, kb_ids: list[str], refs: list[str] | None) -> list[str] | None:
    """The strings documents carry for tags named by id, number or name, in any of the knowledge bases."""
    if not refs:
        return refs
    values: list[str] = list(refs)
    for kb in container.knowledge.knowledge_bases(tenant_id, kb_ids):
        values.extend(tag_index(container, kb).filter_values(refs))
    return list(dict.fromkeys(values))


def _entry_or_404(index: TagIndex, tag_id: str) -> TagEntry:
    entry = index.find(tag_id)
    if entry is None:
        raise ApiError(404, "not_found", "tag not found", "tag_id")
    return entry


@router.get("")
def list_tags(
    kb_id: str,
    tenant: TenantDep,
    container: ContainerDep,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = TAG_PAGE_SIZE,
    keyword: Annotated[str, Query(max_length=200)] = "",
) -> Envelope[TagsPage]:
    """The knowledge base's tags by their order, then name, with how many documents and chunks carry each.

    WeKnora nests the page inside ``data``.
    """
    kb = knowledge_base_of(container, tenant, kb_id)
    entries = tag_index(container, kb).listing()
    if keyword.strip():
        entries = [e for e in entries if keyword.strip().casefold() in e.name.casefold()]
    start = (page - 1) * page_size
    views = [TagView.of(e, kb) for e in entries[start : start + page_size]]
    return Envelope(data=TagsPage(total=len(entries), page=page, page_size=page_size, data=views))


def _duplicate(name: str) -> ApiError:
    return ApiError(409, "duplicate_name", f"a tag named {name!r} exists in this knowledge base", "name")


@router.post("")
def create_tag(kb_id: str, body: TagBody, tenant: TenantDep, container: ContainerDep) -> Envelope[TagView]:
    """Register a tag in a knowledge base; a name a tag already has (registered or carried) is refused (409)."""
    kb = knowledge_base_of(container, tenant, kb_id)
    name = body.name.strip()
    if not name:
        raise ApiError(422, "invalid_field", "name must not be blank", "name")
    if name in {e.name for e in tag_index(container, kb).listing()}:
        raise _duplicate(name)
    try:
        tag = container.tags.create_tag(tenant.id, kb.id, name, color=body.color, sort_order=body.sort_order)
    except DuplicateName:
        raise _duplicate(name) from None
    return Envelope(data=TagView.of(TagIndex([tag], []).entries[tag.id], kb))


@router.put("/{tag_id}")
def update_tag(
    kb_id: str, tag_id: str, body: TagUpdateBody, tenant: TenantDep, container: ContainerDep
) -> Envelope[TagView]:
    """A registered tag's name, colour or order.

    An implicit tag (a string documents carry) is registered under a new id of its own, and the documents carrying
    it carry that id from then on: a registered tag's id is always one the server made, never a string a client
    chose (another tenant's tag id among them).
    """
    kb = knowledge_base_of(container, tenant, kb_id)
    index = tag_index(container, kb)
    entry = _entry_or_404(index, tag_id)
    name = body.name.strip() if body.name is not None else None
    if name == "":
        raise ApiError(422, "invalid_field", "name must not be blank", "name")
    if name is not None and name != entry.name and name in {e.name for e in index.listing()}:
        raise _duplicate(name)
    try:
        if entry.registered:
            tag = container.tags.update_tag(
                tenant.id, kb.id, entry.id, name=name, color=body.color, sort_order=body.sort_order
            )
        else:
            tag = container.tags.create_tag(
                tenant.id, kb.id, name or entry.name, color=body.color or "", sort_order=body.sort_order or 0
            )
            container.knowledge.replace_document_tag(tenant.id, kb.id, entry.id, tag.id)
    except DuplicateName:
        raise _duplicate(name or entry.name) from None
    if tag is None:
        raise ApiError(404, "not_found", "tag not found", "tag_id")
    return Envelope(data=TagView.of(tag_index(container, kb).entries[tag.id], kb))


class Success(BaseModel):
    """WeKnora's bare success reply."""

    success: bool = True


@router.delete("/{tag_id}")
def delete_tag(
    kb_id: str,
    tag_id: str,
    tenant: TenantDep,
    container: ContainerDep,
    force: Annotated[bool, Query()] = False,
) -> Success:
    """A tag no document carries.

    With ``force=true`` also one in use, which its documents then lose (the documents stay: WeKnora deletes them,
    ragline will not delete content to delete a label).
    """
    kb = knowledge_base_of(container, tenant, kb_id)
    entry = _entry_or_404(tag_index(container, kb), tag_id)
    if entry.documents and not force:
        raise ApiError(
            409,
            "tag_in_use",
            f"{len(entry.documents)} documents carry this tag; force=true removes it from them",
            "tag_id",
        )
    for value in entry.stored:
        container.knowledge.replace_document_tag(tenant.id, kb.id, value, None)
    if entry.registered:
        container.tags.delete_tag(tenant.id, kb.id, entry.id)
    return Success()
