"""Model ports and their adapters: embeddings and chat."""

from ragline.models.base import ChatChunk, ChatMessage, ChatModel, ChatResponse, Embedder, ModelCallError

__all__ = ["ChatChunk", "ChatMessage", "ChatModel", "ChatResponse", "Embedder", "ModelCallError"]
