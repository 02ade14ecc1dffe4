"""The memory API: a caller lists and deletes their own memories.

The tenant comes from the app's API-key dependency; the user from the optional ``X-User-Id`` header
(absent: the tenant's default user ""), the same user id the chat request carries. Whoever holds the
tenant's key can name any of its users: the key is the trust boundary, as for every other route.
"""

# No ``from __future__ import annotations``: FastAPI reads the dependency annotations of the routes
# defined inside the factory, and string annotations would not resolve in its closure.

import asyncio
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header
from pydantic import BaseModel

from ragline.memory.models import Memory
from ragline.memory.store import MemoryStore
from ragline.server.errors import not_found
from ragline.server.views import Envelope
from ragline.store.models import Tenant

MEMORIES_PATH = "/api/v1/memories"
MAX_USER_ID_LENGTH = 200


class MemoryView(BaseModel):
    """A memory as the API shows it: no vector, no embedding model, no tenant."""

    id: str
    user_id: str
    content: str
    source_session_id: str
    source_message_id: str
    created_at: str
    updated_at: str

    @classmethod
    def of(cls, memory: Memory) -> "MemoryView":
        """The view of ``memory``."""
        return cls.model_validate(memory.model_dump(include=set(cls.model_fields)))


class MemoryDeleted(BaseModel):
    """A memory delete's reply: the id and whether it existed."""

    id: str
    deleted: bool


class MemoriesDeleted(BaseModel):
    """A delete-all's reply: how many memories went."""

    deleted: int


def memory_router(
    get_store: Callable[..., MemoryStore],
    tenant_dependency: Callable[..., Any],
) -> APIRouter:
    """The memory routes.

    ``get_store`` and ``tenant_dependency`` are FastAPI dependencies: the store (e.g. ``lambda: container.memories``)
    and the caller's :class:`Tenant` (the app's ``tenant_of``).
    """
    router = APIRouter(prefix=MEMORIES_PATH, tags=["memories"])
    StoreDep = Annotated[MemoryStore, Depends(get_store)]
    TenantDep = Annotated[Tenant, Depends(tenant_dependency)]
    UserDep = Annotated[str, Header(alias="X-User-Id", max_length=MAX_USER_ID_LENGTH)]

    @router.get("")
    async def list_memories(store: StoreDep, tenant: TenantDep, user_id: UserDep = "") -> Envelope[list[MemoryView]]:
        memories = await asyncio.to_thread(store.list, tenant.id, user_id)
        return Envelope(data=[MemoryView.of(m) for m in memories])

    @router.delete("/{memory_id}")
    async def delete_memory(
        memory_id: str, store: StoreDep, tenant: TenantDep, user_id: UserDep = ""
    ) -> Envelope[MemoryDeleted]:
        # Another user's memory is not in this user's store: it reads as absent, never as forbidden.
        if not await asyncio.to_thread(store.delete, tenant.id, user_id, memory_id):
            raise not_found("memory", "memory_id")
        return Envelope(data=MemoryDeleted(id=memory_id, deleted=True))

    @router.delete("")
    async def delete_all_memories(
        store: StoreDep, tenant: TenantDep, user_id: UserDep = ""
    ) -> Envelope[MemoriesDeleted]:
        deleted = await asyncio.to_thread(store.delete_all, tenant.id, user_id)
        return Envelope(data=MemoriesDeleted(deleted=deleted))

    return router
