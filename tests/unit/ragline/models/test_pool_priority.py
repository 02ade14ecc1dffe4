"""A model shared by background work and requests runs each caller's work at the caller's priority.

Linux keeps a nice value per thread and a new thread takes its creator's, so a pool whose threads were started by
whoever called first would run an answer's sentences at the indexer's lowered priority (behind every document) or
the indexer's batches at the answer's (beside the event loop), whichever came first.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="a nice value per thread is Linux's")

_T = TypeVar("_T")
STEP = 10


def nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@pytest.fixture
def base() -> int:
    if nice() + STEP > 19:
        pytest.skip("this process runs too low to lower a thread by 10 steps")
    return nice()


def lowered(call: Callable[[], _T]) -> _T:
    """``call()`` on a new thread ``STEP`` steps below this one (as the indexer and the enrichment worker run)."""
    out: dict[str, _T] = {}

    def body() -> None:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + STEP)
        out["value"] = call()

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    return out["value"]


def test_document_batches_run_at_the_priority_of_whoever_embeds_them(base, monkeypatch):
    from ragline.models.onnx_minilm import OnnxMiniLMEmbedder

    embedder = OnnxMiniLMEmbedder(batch_size=2, threads=2)
    seen: list[int] = []
    run = embedder._run

    def recorded(encodings: Sequence[object]) -> np.ndarray:
        seen.append(nice())
        return run(encodings)

    monkeypatch.setattr(embedder, "_run", recorded)
    texts = [f"passage {i} about rivers and their lengths" for i in range(8)]  # four batches, on the pool
    background = lowered(lambda: embedder.embed_documents(texts))  # the indexer starts the pool first
    assert set(seen) == {base + STEP}
    seen.clear()
    foreground = embedder.embed_documents(texts)  # then an answer scores its sentences
    assert set(seen) == {base}
    assert np.allclose(background, foreground, atol=1e-6)
    seen.clear()
    lowered(lambda: embedder.embed_documents(texts))
    assert set(seen) == {base + STEP}


class Part:
    """An ensemble part that records the priority its query ran at."""

    def __init__(self, model_id: str, axis: int) -> None:
        self.model_id, self.dimensions, self._axis = model_id, 2, axis
        self.seen: list[int] = []

    def embed_query(self, text: str) -> np.ndarray:
        self.seen.append(nice())
        return np.eye(2, dtype=np.float32)[self._axis]

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.tile(np.eye(2, dtype=np.float32)[self._axis], (len(texts), 1))


def test_an_ensembles_parts_read_a_query_at_the_priority_of_whoever_asks(base):
    from ragline.models.ensemble import EnsembleEmbedder

    first, second = Part("a", 0), Part("b", 1)
    ensemble = EnsembleEmbedder("a+b", [(lambda: first, 0.5), (lambda: second, 0.5)])
    lowered(lambda: ensemble.embed_query("a question asked by a background job"))
    assert (first.seen, second.seen) == ([base + STEP], [base + STEP])
    vector = ensemble.embed_query("a question asked by a search")
    assert (first.seen[-1], second.seen[-1]) == (base, base)  # the second part ran on the ensemble's pool
    assert np.allclose(vector, np.sqrt([0.5, 0, 0, 0.5]), atol=1e-6)
