"""A knowledge base's models and chunking as WeKnora's settings dialog saves them (``/initialization/config``).

The web app saves a knowledge base's settings in two calls: ``PUT /knowledge-bases/:id`` (name, description, config)
and this one (chat model, embedding model, chunking, multimodal). ragline honours the chat model chosen, the chunk size
and overlap (documents uploaded after it) and the embedding model (its documents re-embedded in the background); it
keeps the rest as sent. Ollama, remote-model checks and the other setup routes of WeKnora are not served.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel

from ragline.server.deps import ContainerDep, TenantDep, knowledge_base_of
from ragline.server.errors import ApiError, not_found
from ragline.server.routes.knowledge_bases import settings_of
from ragline.server.schemas.initialization import ModelConfigBody
from ragline.server.schemas.knowledge_bases import ChunkingBody
from ragline.server.views import Envelope

router = APIRouter(prefix="/api/v1/initialization", tags=["knowledge bases"])


class ModelIds(BaseModel):
    """WeKnora's models of a knowledge base."""

    chat_model_id: str
    embedding_model_id: str
    rerank_model_id: str = ""
    multimodal_id: str = ""


@router.get("/config/{kb_id}")
def model_config(kb_id: str, tenant: TenantDep, container: ContainerDep) -> Envelope[ModelIds]:
    """The knowledge base's chat model (as chosen, else the deployment's) and embedding model."""
    kb = knowledge_base_of(container, tenant, kb_id)
    chat = kb.settings.summary_model_id or container.models.default_chat_model_id
    return Envelope(data=ModelIds(chat_model_id=chat, embedding_model_id=kb.embedding_model))


@router.put("/config/{kb_id}")
def update_model_config(
    kb_id: str, body: ModelConfigBody, tenant: TenantDep, container: ContainerDep
) -> Envelope[ModelIds]:
    """Save the knowledge base's chat model, chunking and (when it changes) embedding model.

    An embedding model this deployment does not have is a 422 naming ``embeddingModelId``.
    """
    kb = knowledge_base_of(container, tenant, kb_id)
    chunking = None
    sent: dict[str, Any] = {key: getattr(body, key) for key in ("vlm_config", "asr_config") if getattr(body, key)}
    if body.documentSplitting is not None:
        splitting = body.documentSplitting
        try:
            chunking = ChunkingBody(
                chunk_size=splitting.chunkSize, chunk_overlap=splitting.chunkOverlap, separators=splitting.separators
            )
        except ValueError as exc:
            raise ApiError(422, "invalid_field", str(exc), "documentSplitting") from None
        kept = kb.settings.client_config.get("chunking_config") or {}
        sent["chunking_config"] = {**kept, **chunking.model_dump(exclude_none=True)}
    settings = settings_of(sent, chunking, kb.settings)
    if body.llmModelId:
        settings = settings.model_copy(update={"summary_model_id": body.llmModelId})
    embedder = body.embeddingModelId
    if embedder and embedder != kb.embedding_model:
        if not container.models.has_embedder(embedder):
            raise ApiError(422, "invalid_field", f"unknown embedding model {embedder!r}", "embeddingModelId")
        kb = container.ingest.change_embedding_model(kb, embedder)
    updated = container.knowledge.update_knowledge_base(tenant.id, kb.id, settings=settings)
    if updated is None:
        raise not_found("knowledge base", "kb_id")
    chat = updated.settings.summary_model_id or container.models.default_chat_model_id
    return Envelope(data=ModelIds(chat_model_id=chat, embedding_model_id=updated.embedding_model))
