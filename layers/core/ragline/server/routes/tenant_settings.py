"""A tenant's settings by key (WeKnora's ``/tenants/kv/:key``), read from the deployment's configuration.

ragline's retrieval, conversation and storage settings are the deployment's (config.yaml and the environment), the
same for every tenant: each key answers what is in force. Writing them per tenant is not served.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from ragline.container import Container
from ragline.server.deps import ContainerDep, TenantDep
from ragline.server.errors import ApiError
from ragline.server.routes.knowledge_bases import storage_provider
from ragline.server.views import Envelope

router = APIRouter(prefix="/api/v1/tenants/kv", tags=["tenant settings"])


def _retrieval(container: Container) -> dict[str, Any]:
    conversation = container.config.conversation
    return {
        "embedding_top_k": conversation.embedding_top_k,
        "vector_threshold": conversation.vector_threshold,
        "keyword_threshold": conversation.keyword_threshold,
        "rerank_top_k": conversation.rerank_top_k,
        "rerank_threshold": conversation.rerank_threshold,
        # Rerank is ragline's own (a cross-encoder when configured, else its scores): no WeKnora model id.
        "rerank_model_id": "",
    }


def _conversation(container: Container) -> dict[str, Any]:
    conversation = container.config.conversation
    return {
        **_retrieval(container),
        "max_rounds": conversation.max_rounds,
        "enable_rewrite": conversation.enable_rewrite,
        "enable_query_expansion": conversation.enable_query_expansion,
        "fallback_strategy": conversation.fallback_strategy,
        "fallback_response": conversation.fallback_response,
        "temperature": conversation.summary.temperature,
        "max_completion_tokens": conversation.summary.max_completion_tokens,
        "summary_model_id": container.models.default_chat_model_id,
    }


def _storage(container: Container) -> dict[str, Any]:
    # The deployment's store alone; no credentials are shown (there are none to set per tenant).
    return {"default_provider": storage_provider(container), "local": {"path_prefix": ""}}


def _memory(container: Container) -> dict[str, Any]:
    return {"enabled": container.config.conversation.memory_enabled}


def _chat_history(container: Container) -> dict[str, Any]:
    # ragline searches sessions by keyword (GET /sessions?keyword=); it keeps no knowledge base of past chats.
    del container
    return {"enabled": False, "embedding_model_id": "", "knowledge_base_id": ""}


def _web_search(container: Container) -> dict[str, Any]:
    provider = container.settings.web_search_provider or ""
    return {"provider": provider, "enabled": bool(provider)}


def _parser_engines(container: Container) -> dict[str, Any]:
    # ragline reads documents in-process: no remote engine (DocReader, MinerU, …) to connect to.
    del container
    return {}


KEYS = {
    "retrieval-config": _retrieval,
    "conversation-config": _conversation,
    "storage-engine-config": _storage,
    "memory-config": _memory,
    "chat-history-config": _chat_history,
    "web-search-config": _web_search,
    "parser-engine-config": _parser_engines,
}


@router.get("/{key}")
def tenant_setting(key: str, tenant: TenantDep, container: ContainerDep) -> Envelope[dict[str, Any]]:
    """The setting ``key`` in force for the tenant (the deployment's); an unknown key is a 400 naming ``key``."""
    del tenant
    read = KEYS.get(key)
    if read is None:
        raise ApiError(400, "unsupported_key", f"unsupported key {key!r}", "key")
    return Envelope(data=read(container))
