"""The models of this deployment (WeKnora's ``GET /models``).

Which chat model answers and which embedding models knowledge bases can use. Models are configured by the deployment
(environment), not by tenants, so the list is read-only and the same for every tenant.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel

from ragline.models.registry import describe_chat_model
from ragline.server.deps import ContainerDep, TenantDep
from ragline.server.views import Envelope

router = APIRouter(prefix="/api/v1", tags=["models"])


class ModelView(BaseModel):
    """WeKnora's model record and ragline's ``kind``.

    WeKnora's model record (no parameters: nothing of a deployment's endpoints or keys is shown) and ragline's ``kind``.
    """

    id: str
    name: str
    type: Literal["KnowledgeQA", "Embedding"]
    source: Literal["local", "remote"]
    description: str
    is_default: bool
    status: Literal["active"] = "active"
    # ragline's own: extractive, gguf, bedrock, endpoint (chat); onnx, endpoint (embeddings).
    kind: str


@router.get("/models")
def list_models(tenant: TenantDep, container: ContainerDep) -> Envelope[list[ModelView]]:
    """The chat models (the default one answers unless a question names another) and the embedding models."""
    del tenant  # any tenant's key: the models are the deployment's
    models = container.models
    views: list[ModelView] = []
    for model_id in models.chat_model_ids():
        kind, name, description = describe_chat_model(model_id)
        views.append(
            ModelView(
                id=model_id,
                name=name,
                type="KnowledgeQA",
                source="remote" if kind in ("bedrock", "endpoint") else "local",
                description=description,
                is_default=model_id == models.default_chat_model_id,
                kind=kind,
            )
        )
    for model_id in models.embedder_ids():
        remote = "@" in model_id or model_id.startswith(("http://", "https://"))
        views.append(
            ModelView(
                id=model_id,
                name=model_id.partition("@")[0],
                type="Embedding",
                source="remote" if remote else "local",
                description="An embedding model for knowledge bases.",
                is_default=model_id == models.default_embedder_id,
                kind="endpoint" if remote else "onnx",
            )
        )
    return Envelope(data=views)
