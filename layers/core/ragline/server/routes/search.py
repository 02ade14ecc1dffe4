"""Knowledge search: ranked passages without generation."""

from __future__ import annotations

from fastapi import APIRouter

from ragline.runtime.search import SearchBody, SearchFailed, SearchHit, search_hit
from ragline.runtime.turns import UnknownKnowledgeBase
from ragline.server.deps import ContainerDep, TenantDep, check_query_length
from ragline.server.errors import ApiError, not_found
from ragline.server.views import Items

router = APIRouter(prefix="/api/v1", tags=["knowledge"])


@router.post("/knowledge-search")
async def knowledge_search(body: SearchBody, tenant: TenantDep, container: ContainerDep) -> Items[SearchHit]:
    """Ranked passages through the chat pipeline's search → rerank → MMR path, with their scores."""
    check_query_length(container, body.query)
    try:
        results = await container.search.search(tenant.id, body)
    except UnknownKnowledgeBase as exc:
        raise not_found(f"knowledge base {exc.value}", exc.field) from None
    except SearchFailed as exc:
        raise ApiError(502, exc.error.error_type, exc.error.message) from None
    return Items(items=[search_hit(r) for r in results])
