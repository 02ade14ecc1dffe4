"""Which rerank models exist in this process, by id; adapters are built on first use.

The lead wires providers from configuration (:func:`ragline.reranking.providers.register_configured_models`)
or adds factories directly; the stage only asks the registry for an id.
"""

from __future__ import annotations

from ragline.models.registry import UnknownModel
from ragline.registry import LazyRegistry
from ragline.reranking.base import RerankModel


class RerankModelRegistry(LazyRegistry[RerankModel]):
    """Model id → factory.

    The default answers requests that name no rerank model; without one, such requests take the stage's ``no_model``
    path. A failed build (a missing model directory, say) raises what its factory raised and is retried on the next
    call.
    """

    def __init__(self) -> None:
        """An empty registry; an unknown model id raises :class:`UnknownModel`."""
        super().__init__(UnknownModel)

    @property
    def default_model_id(self) -> str:
        """The id of the model that answers requests naming none; "" when none is configured."""
        return self.default_id

    def resolve_id(self, requested: str) -> str:
        """The request's model id, else the default; "" means no model is configured."""
        return requested or self.default_id

    def get(self, model_id: str = "") -> RerankModel:
        """The model, built once; raises :class:`UnknownModel` for an id no factory was added under."""
        return super().get(self.resolve_id(model_id))
