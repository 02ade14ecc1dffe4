"""Knowledge search: ranked passages without generation (WeKnora's ``/knowledge-search``)."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

from ragline.container import Container
from ragline.reads import read_off_loop
from ragline.runtime.search import SearchBody, SearchFailed
from ragline.runtime.turns import UnknownKnowledgeBase, mentioned_scope
from ragline.server.deps import ContainerDep, TenantDep, check_query_length
from ragline.server.errors import ApiError, not_found
from ragline.server.records import SearchResultView
from ragline.server.routes.tags import tag_filter
from ragline.server.schemas.search import KeywordsBody, KnowledgeSearchBody
from ragline.server.views import Envelope

router = APIRouter(prefix="/api/v1", tags=["search"])


async def run_search(container: Container, tenant_id: str, body: SearchBody) -> list[SearchResultView]:
    """Run the knowledge search for ``body``; errors become the API's replies."""
    check_query_length(container, body.query)
    try:
        results = await container.search.search(tenant_id, body)
    except UnknownKnowledgeBase as exc:
        what = "document" if exc.field == "knowledge_ids" else "knowledge base"
        raise not_found(f"{what} {exc.value}", exc.field) from None
    except SearchFailed as exc:
        raise ApiError(502, exc.error.error_type, exc.error.message) from None
    return [SearchResultView.of(r, rank) for rank, r in enumerate(results, start=1)]


def search_body(container: Container, tenant_id: str, body: KnowledgeSearchBody) -> SearchBody:
    """The knowledge bases searched.

    Those named (one, several, or mentioned); with documents only, the knowledge bases of those documents.
    """
    kb_ids, knowledge_ids = mentioned_scope(
        [*(body.knowledge_base_ids or []), *([body.knowledge_base_id] if body.knowledge_base_id else [])],
        body.knowledge_ids or [],
        body.mentioned_items or [],
    )
    if not kb_ids:
        for knowledge_id in knowledge_ids:
            document = container.knowledge.document(tenant_id, knowledge_id)
            if document is None:
                raise not_found(f"document {knowledge_id}", "knowledge_ids")
            kb_ids.append(document.knowledge_base_id)
        kb_ids = list(dict.fromkeys(kb_ids))
    if not kb_ids:
        raise ApiError(
            422,
            "missing_field",
            "knowledge_base_ids (or knowledge_base_id, knowledge_ids) is required",
            "knowledge_base_ids",
        )
    options = body.model_dump(include=set(SearchBody.model_fields) - {"knowledge_base_ids", "knowledge_ids", "tags"})
    return SearchBody(
        **options,
        knowledge_base_ids=kb_ids,
        knowledge_ids=knowledge_ids or None,
        tags=tag_filter(container, tenant_id, kb_ids, [*(body.tags or []), *(body.tag_ids or [])] or None),
    )


@router.post("/knowledge-search")
async def knowledge_search(
    body: KnowledgeSearchBody, tenant: TenantDep, container: ContainerDep
) -> Envelope[list[SearchResultView]]:
    """Ranked passages through the chat pipeline's search → rerank → MMR path, with their scores."""
    search = await read_off_loop(search_body, container, tenant.id, body)
    return Envelope(data=await run_search(container, tenant.id, search))


class KeywordsView(BaseModel):
    """At most five keywords, and where they came from.

    ``model`` (the chat model, the reference's keywords_extraction prompt) or ``terms`` (the question's own
    words, without a generative model).
    """

    keywords: list[str]
    source: str


@router.post("/keywords")
async def extract_keywords(body: KeywordsBody, tenant: TenantDep, container: ContainerDep) -> Envelope[KeywordsView]:
    """The search keywords of a question (at most five), names and technical terms kept as written."""
    check_query_length(container, body.query)
    if not body.query.strip():
        raise ApiError(422, "invalid_field", "query is blank", "query")
    keywords, source = await container.enricher.keywords(body.query)
    return Envelope(data=KeywordsView(keywords=keywords, source=source))
