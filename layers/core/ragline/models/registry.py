"""Which models exist in this process, by id.

Adapters are built lazily: loading ONNX weights or a GGUF file costs time that a process serving only reads never pays.
"""

from __future__ import annotations

from collections.abc import Callable

from ragline.models.base import ChatModel, Embedder
from ragline.registry import LazyRegistry


class UnknownModel(KeyError):
    """No model is registered under the requested id."""

    pass


class ModelRegistry:
    """The deployment's embedders and chat models by id, each built on first use."""

    def __init__(self) -> None:
        """An empty registry."""
        self._embedders: LazyRegistry[Embedder] = LazyRegistry(UnknownModel)
        self._chat_models: LazyRegistry[ChatModel] = LazyRegistry(UnknownModel)

    @property
    def default_embedder_id(self) -> str:
        """The embedder used when none is named; "" when none is registered."""
        return self._embedders.default_id

    @property
    def default_chat_model_id(self) -> str:
        """The chat model used when none is named; "" when none is registered."""
        return self._chat_models.default_id

    def add_embedder(self, model_id: str, factory: Callable[[], Embedder], default: bool = False) -> None:
        """Register an embedder's factory (built on first use); ``default`` makes it the one used when none is named."""
        self._embedders.add(model_id, factory, default)

    def add_chat_model(self, model_id: str, factory: Callable[[], ChatModel], default: bool = False) -> None:
        """Register a chat model's factory (built on first use); ``default`` makes it the one used when none is named."""
        self._chat_models.add(model_id, factory, default)

    def embedder_ids(self) -> list[str]:
        """The registered embedder ids."""
        return self._embedders.ids()

    def chat_model_ids(self) -> list[str]:
        """The registered chat model ids."""
        return self._chat_models.ids()

    def has_embedder(self, model_id: str) -> bool:
        """True when an embedder is registered under ``model_id``."""
        return self._embedders.has(model_id)

    def has_chat_model(self, model_id: str) -> bool:
        """True when a chat model is registered under ``model_id``."""
        return self._chat_models.has(model_id)

    def embedder(self, model_id: str = "") -> Embedder:
        """The embedder ``model_id`` (the default when ""), built on first use; :class:`UnknownModel` otherwise."""
        return self._embedders.get(model_id or self.default_embedder_id)

    def chat_model(self, model_id: str = "") -> ChatModel:
        """The chat model ``model_id`` (the default when ""), built on first use; :class:`UnknownModel` otherwise."""
        return self._chat_models.get(model_id or self.default_chat_model_id)

    async def release_loop(self) -> None:
        """Let chat adapters close what they bound to the running event loop (connection pools)."""
        await self._chat_models.release_loop()


def describe_chat_model(model_id: str) -> tuple[str, str, str]:
    """What a chat model id says about the model, for people: (kind, name, description).

    Kinds: ``extractive`` (no generative model: answers quote the documents), ``gguf`` (a local file run by llama.cpp),
    ``bedrock`` (Amazon Bedrock) and ``endpoint`` (an OpenAI-compatible server).
    """
    if model_id == "local:extractive":
        return "extractive", "Extractive answers", "No generative model is configured: answers quote the documents."
    if model_id.startswith("local:"):
        return "gguf", model_id.removeprefix("local:"), "A local GGUF model run by llama.cpp in this process."
    if model_id.startswith("bedrock:"):
        return "bedrock", model_id.removeprefix("bedrock:"), "Amazon Bedrock."
    name, _, base_url = model_id.partition("@")
    return "endpoint", name, f"An OpenAI-compatible endpoint ({base_url})." if base_url else "A chat model."
