"""Which rerank models exist in this process, by id; adapters are built on first use.

The lead wires providers from configuration (:func:`ragline.reranking.providers.register_configured_models`)
or adds factories directly; the stage only asks the registry for an id.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ragline.models.registry import UnknownModel
from ragline.reranking.base import RerankModel


class RerankModelRegistry:
    """Model id → factory. The default answers requests that name no rerank model; without one, such
    requests take the stage's ``no_model`` path."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._factories: dict[str, Callable[[], RerankModel]] = {}
        self._models: dict[str, RerankModel] = {}
        self.default_model_id = ""

    def add(self, model_id: str, factory: Callable[[], RerankModel], default: bool = False) -> None:
        """Register a factory; the first one added is the default unless a later one says ``default``."""
        with self._lock:
            self._factories[model_id] = factory
            self._models.pop(model_id, None)
            if default or not self.default_model_id:
                self.default_model_id = model_id

    def has(self, model_id: str) -> bool:
        return model_id in self._factories

    def resolve_id(self, requested: str) -> str:
        """The request's model id, else the default; "" means no model is configured."""
        return requested or self.default_model_id

    def get(self, model_id: str = "") -> RerankModel:
        """The model, built once; raises :class:`UnknownModel`, or whatever its factory raised (a missing
        model directory, say) — a failed build is retried on the next call."""
        model_id = self.resolve_id(model_id)
        with self._lock:
            model = self._models.get(model_id)
            if model is None:
                factory = self._factories.get(model_id)
                if factory is None:
                    raise UnknownModel(model_id)
                model = factory()
                self._models[model_id] = model
            return model

    async def release_loop(self) -> None:
        """Let adapters close what they bound to the running event loop (connection pools)."""
        with self._lock:
            models = list(self._models.values())
        for model in models:
            release = getattr(model, "release_loop", None)
            if release is not None:
                await release()
