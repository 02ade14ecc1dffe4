"""Which models exist in this process, by id. Adapters are built lazily: loading ONNX weights or a GGUF
file costs time that a process serving only reads never pays."""

from __future__ import annotations

import threading
from collections.abc import Callable

from ragline.models.base import ChatModel, Embedder


class UnknownModel(KeyError):
    pass


class ModelRegistry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._embedder_factories: dict[str, Callable[[], Embedder]] = {}
        self._embedders: dict[str, Embedder] = {}
        self._chat_factories: dict[str, Callable[[], ChatModel]] = {}
        self._chat_models: dict[str, ChatModel] = {}
        self.default_embedder_id = ""
        self.default_chat_model_id = ""

    def add_embedder(self, model_id: str, factory: Callable[[], Embedder], default: bool = False) -> None:
        self._embedder_factories[model_id] = factory
        if default or not self.default_embedder_id:
            self.default_embedder_id = model_id

    def add_chat_model(self, model_id: str, factory: Callable[[], ChatModel], default: bool = False) -> None:
        self._chat_factories[model_id] = factory
        if default or not self.default_chat_model_id:
            self.default_chat_model_id = model_id

    def has_embedder(self, model_id: str) -> bool:
        return model_id in self._embedder_factories

    def embedder(self, model_id: str = "") -> Embedder:
        model_id = model_id or self.default_embedder_id
        with self._lock:
            if model_id not in self._embedders:
                factory = self._embedder_factories.get(model_id)
                if factory is None:
                    raise UnknownModel(model_id)
                self._embedders[model_id] = factory()
            return self._embedders[model_id]

    async def release_loop(self) -> None:
        """Let adapters close what they bound to the running event loop (connection pools)."""
        with self._lock:
            models = list(self._chat_models.values())
        for model in models:
            release = getattr(model, "release_loop", None)
            if release is not None:
                await release()

    def chat_model(self, model_id: str = "") -> ChatModel:
        model_id = model_id or self.default_chat_model_id
        with self._lock:
            if model_id not in self._chat_models:
                factory = self._chat_factories.get(model_id)
                if factory is None:
                    raise UnknownModel(model_id)
                self._chat_models[model_id] = factory()
            return self._chat_models[model_id]
