"""Rerank model adapters: a remote ``/rerank`` API, Bedrock, and a local ONNX cross-encoder.

No cross-encoder ships with its weights in a registry package, so nothing here downloads anything: the
remote and Bedrock adapters call a service the user configured, and the local adapter loads files from a
directory the user provides.
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import httpx

from ragline.models.base import ModelCallError
from ragline.models.http import LoopClients
from ragline.reranking.base import RankResult, RerankModel
from ragline.reranking.config import RerankConfig, RerankModelSpec, RerankProvider
from ragline.reranking.registry import RerankModelRegistry

# Jina, Cohere, llama.cpp server and vLLM name the list "results"; a few servers say "data" or answer
# with the bare list. Scores are "relevance_score", or "score" on some servers.
_RESULT_LIST_KEYS = ("results", "data")
_SCORE_KEYS = ("relevance_score", "score")
# How much of an unexpected reply an error message quotes.
_ERROR_EXCERPT_CHARS = 200


def _as_score(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    score = float(value)
    return score if math.isfinite(score) else None


def parse_rerank_response(payload: object) -> list[RankResult]:
    """Rank results from a ``/rerank`` reply in any of the common shapes.

    ``{"results": [{"index": i, "relevance_score": s}, ...]}`` (or ``score``, or ``data``, or a bare list) → rank
    results. A reply that has no readable list is an error; unreadable rows are skipped.
    """
    items: object = payload
    if isinstance(payload, dict):
        items = next((payload[key] for key in _RESULT_LIST_KEYS if key in payload), None)
    if not isinstance(items, list):
        raise ModelCallError(f"rerank reply has no result list: {str(payload)[:_ERROR_EXCERPT_CHARS]}")
    ranked: list[RankResult] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        index = item.get("index")
        score = next((s for key in _SCORE_KEYS if (s := _as_score(item.get(key))) is not None), None)
        if isinstance(index, int) and not isinstance(index, bool) and score is not None:
            ranked.append(RankResult(index, score))
    return ranked


class RemoteRerankModel:
    """Jina/Cohere-style ``POST {base_url}/rerank`` — also what llama.cpp server and vLLM serve.

    ``base_url`` includes any version prefix (``https://api.jina.ai/v1``, ``http://127.0.0.1:8080/v1``).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = RerankConfig().timeout_s,
        max_passage_chars: int = 0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """``model`` at ``base_url``; the stage cuts passages to ``max_passage_chars`` (0: no limit) before sending."""
        self.model_id = f"{model}@{base_url}"
        self.max_passage_chars = max_passage_chars
        self._url = base_url.rstrip("/") + "/rerank"
        self._model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._clients = LoopClients(headers, timeout, transport)

    async def release_loop(self) -> None:
        """Close the client of the running loop (a serverless step's loop ends with its invocation)."""
        await self._clients.release()

    async def rerank(self, query: str, passages: Sequence[str]) -> list[RankResult]:
        """Scores of every passage from one ``/rerank`` call; :class:`ModelCallError` when the call fails."""
        if not passages:
            return []
        body = {"model": self._model, "query": query, "documents": list(passages), "top_n": len(passages)}
        try:
            reply = await self._clients.get().post(self._url, json=body)
            reply.raise_for_status()
            payload = reply.json()
        except httpx.HTTPStatusError as exc:
            raise ModelCallError(
                f"rerank HTTP {exc.response.status_code}: {exc.response.text[:_ERROR_EXCERPT_CHARS]}"
            ) from exc
        except (httpx.HTTPError, ValueError) as exc:
            raise ModelCallError(f"{type(exc).__name__}: {exc}") from exc
        return parse_rerank_response(payload)


# bedrock-agent-runtime Rerank accepts at most 1000 sources per call and 32,000 characters per text.
BEDROCK_MAX_SOURCES = 1000
BEDROCK_MAX_TEXT_CHARS = 32_000


class BedrockRerankModel:
    """Amazon Bedrock reranking models through ``bedrock-agent-runtime``'s ``rerank``.

    Amazon Bedrock reranking models (``amazon.rerank-v1:0``, ``cohere.rerank-v3-5:0``) through
    ``bedrock-agent-runtime``'s ``rerank``. boto3 is synchronous, so calls run in a worker thread.
    """

    def __init__(
        self,
        model_arn: str,
        client: Any | None = None,
        region_name: str | None = None,
        max_passage_chars: int = BEDROCK_MAX_TEXT_CHARS,
        additional_fields: dict[str, Any] | None = None,
    ) -> None:
        """A Bedrock reranking model by ARN; ``max_passage_chars`` never exceeds Bedrock's limit per text."""
        self.model_id = model_arn
        self.max_passage_chars = min(max_passage_chars or BEDROCK_MAX_TEXT_CHARS, BEDROCK_MAX_TEXT_CHARS)
        self._model_arn = model_arn
        self._region_name = region_name
        self._additional_fields = dict(additional_fields or {})
        self._client_instance = client
        self._lock = threading.Lock()

    def _client(self) -> Any:
        with self._lock:
            if self._client_instance is None:
                import boto3

                self._client_instance = boto3.client("bedrock-agent-runtime", region_name=self._region_name)
            return self._client_instance

    def _request(self, query: str, passages: Sequence[str]) -> dict[str, Any]:
        model_configuration: dict[str, Any] = {"modelArn": self._model_arn}
        if self._additional_fields:
            model_configuration["additionalModelRequestFields"] = self._additional_fields
        return {
            "queries": [{"type": "TEXT", "textQuery": {"text": query}}],
            "sources": [
                {"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": passage}}}
                for passage in passages
            ],
            "rerankingConfiguration": {
                "type": "BEDROCK_RERANKING_MODEL",
                "bedrockRerankingConfiguration": {
                    "numberOfResults": len(passages),
                    "modelConfiguration": model_configuration,
                },
            },
        }

    def rerank_sync(self, query: str, passages: Sequence[str]) -> list[RankResult]:
        """Scores of every passage, in calls of at most Bedrock's source limit, following ``nextToken``."""
        from botocore.exceptions import BotoCoreError, ClientError

        ranked: list[RankResult] = []
        client = self._client()
        try:
            for start in range(0, len(passages), BEDROCK_MAX_SOURCES):
                request = self._request(query, passages[start : start + BEDROCK_MAX_SOURCES])
                while True:
                    reply = client.rerank(**request)
                    for item in reply.get("results", []):
                        score = _as_score(item.get("relevanceScore"))
                        if score is not None:
                            ranked.append(RankResult(start + int(item["index"]), score))
                    token = reply.get("nextToken")
                    if not token:
                        break
                    request = {**request, "nextToken": token}
        except (BotoCoreError, ClientError) as exc:
            raise ModelCallError(f"bedrock rerank: {exc}") from exc
        return ranked

    async def rerank(self, query: str, passages: Sequence[str]) -> list[RankResult]:
        """Scores of every passage (:meth:`rerank_sync` in a worker thread)."""
        if not passages:
            return []
        return await asyncio.to_thread(self.rerank_sync, query, passages)


# A BERT-sized cross-encoder reads 512 word pieces at most.
LOCAL_MAX_TOKENS = 512
LOCAL_BATCH_SIZE = 16
LOCAL_MAX_THREADS = 4
_MODEL_FILE_CANDIDATES = ("model.onnx", "onnx/model.onnx")
_PAD_TOKEN_CANDIDATES = ("[PAD]", "<pad>")
# A model head is (batch,), (batch, 1) logits, or (batch, 2) negative/positive class logits.
_BATCH_BY_CLASS_NDIM = 2
_BINARY_CLASSES = 2


def _sigmoid(values: Any) -> Any:
    import numpy as np

    # tanh form: no overflow for large negative logits.
    return 0.5 * (1.0 + np.tanh(0.5 * values))


def find_model_file(model_dir: Path) -> Path:
    """``model.onnx`` or ``onnx/model.onnx`` (the Hugging Face export layout), else the only ``*.onnx``."""
    for name in _MODEL_FILE_CANDIDATES:
        if (model_dir / name).is_file():
            return model_dir / name
    found = sorted(model_dir.glob("*.onnx"))
    if len(found) == 1:
        return found[0]
    raise FileNotFoundError(f"no single ONNX model in {model_dir} (expected model.onnx)")


class LocalCrossEncoderModel:
    """An ONNX cross-encoder and its ``tokenizer.json`` from a directory the user provides.

    Query and passage are encoded as a pair; the score is the sigmoid of the logit (for a two-class head,
    of the positive-minus-negative logit, which is the softmax probability of "relevant").
    """

    def __init__(
        self,
        model_dir: str | Path,
        max_length: int = LOCAL_MAX_TOKENS,
        batch_size: int = LOCAL_BATCH_SIZE,
        threads: int | None = None,
        max_passage_chars: int = 0,
    ) -> None:
        """A cross-encoder ONNX model from ``model_dir`` (with its ``tokenizer.json``), run on this machine."""
        import onnxruntime as ort
        from tokenizers import Tokenizer

        directory = Path(model_dir)
        tokenizer_path = directory / "tokenizer.json"
        if not tokenizer_path.is_file():
            raise FileNotFoundError(f"no tokenizer.json in {directory}")
        self.model_id = f"local:{directory.name}"
        self.max_passage_chars = max_passage_chars
        self._batch_size = batch_size
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        tokenizer.enable_truncation(max_length=max_length)
        pad_id = next(
            (i for token in _PAD_TOKEN_CANDIDATES if (i := tokenizer.token_to_id(token)) is not None),
            0,
        )
        pad_token = tokenizer.id_to_token(pad_id) or _PAD_TOKEN_CANDIDATES[0]
        tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token)
        self._tokenizer = tokenizer
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or min(LOCAL_MAX_THREADS, os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(
            str(find_model_file(directory)), options, providers=["CPUExecutionProvider"]
        )
        self._input_names = {i.name for i in self._session.get_inputs()}
        # One run at a time keeps latency predictable on small machines.
        self._lock = threading.Lock()

    def _logits(self, query: str, passages: Sequence[str]) -> list[float]:
        import numpy as np

        encodings = self._tokenizer.encode_batch([(query, passage) for passage in passages])
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64)}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        feeds = {name: value for name, value in feeds.items() if name in self._input_names}
        with self._lock:
            output = np.asarray(self._session.run(None, feeds)[0], dtype=np.float64)
        if output.ndim == 1:
            logits = output
        elif output.ndim == _BATCH_BY_CLASS_NDIM and output.shape[1] == 1:
            logits = output[:, 0]
        elif output.ndim == _BATCH_BY_CLASS_NDIM and output.shape[1] == _BINARY_CLASSES:
            logits = output[:, 1] - output[:, 0]
        else:
            raise ModelCallError(f"unexpected cross-encoder output shape {output.shape}")
        return [float(v) for v in _sigmoid(logits)]

    def scores(self, query: str, passages: Sequence[str]) -> list[float]:
        """Relevance in (0, 1) per passage, in input order; batches sorted by length to limit padding."""
        order = sorted(range(len(passages)), key=lambda i: len(passages[i]))
        out = [0.0] * len(passages)
        for start in range(0, len(order), self._batch_size):
            batch = order[start : start + self._batch_size]
            for index, score in zip(batch, self._logits(query, [passages[i] for i in batch]), strict=True):
                out[index] = score
        return out

    async def rerank(self, query: str, passages: Sequence[str]) -> list[RankResult]:
        """Scores of every passage, best first; any failure of the runtime is a :class:`ModelCallError`."""
        if not passages:
            return []
        try:
            scores = await asyncio.to_thread(self.scores, query, passages)
        except ModelCallError:
            raise
        except Exception as exc:  # onnxruntime raises its own exception types
            raise ModelCallError(f"{type(exc).__name__}: {exc}") from exc
        ranked = [RankResult(i, s) for i, s in enumerate(scores)]
        return sorted(ranked, key=lambda r: -r.score)


def _remote(spec: RerankModelSpec, config: RerankConfig) -> RerankModel:
    return RemoteRerankModel(
        spec.base_url, spec.model, spec.api_key, timeout=config.timeout_s, max_passage_chars=spec.max_passage_chars
    )


def _bedrock(spec: RerankModelSpec, config: RerankConfig) -> RerankModel:
    return BedrockRerankModel(spec.model_arn, region_name=spec.region_name, max_passage_chars=spec.max_passage_chars)


def _local(spec: RerankModelSpec, config: RerankConfig) -> RerankModel:
    return LocalCrossEncoderModel(spec.model_dir, max_passage_chars=spec.max_passage_chars)


_BUILDERS: dict[RerankProvider, Callable[[RerankModelSpec, RerankConfig], RerankModel]] = {
    RerankProvider.REMOTE: _remote,
    RerankProvider.BEDROCK: _bedrock,
    RerankProvider.LOCAL: _local,
}


def register_configured_models(registry: RerankModelRegistry, config: RerankConfig) -> RerankModelRegistry:
    """Add a lazy factory per configured model; ``config.default_model_id`` (else the first) is the default."""
    for spec in config.models:
        registry.add(
            spec.id, partial(_BUILDERS[spec.provider], spec, config), default=spec.id == config.default_model_id
        )
    return registry
