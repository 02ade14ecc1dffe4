import asyncio
import json
import math

import boto3
import httpx
import pytest
from botocore.stub import Stubber

from ragline.models.base import ModelCallError
from ragline.reranking import providers
from ragline.reranking.base import RankResult, RerankModel
from ragline.reranking.config import RerankConfig, RerankModelSpec, RerankProvider
from ragline.reranking.providers import (
    BedrockRerankModel,
    LocalCrossEncoderModel,
    RemoteRerankModel,
    parse_rerank_response,
    register_configured_models,
)
from ragline.reranking.registry import RerankModelRegistry

# --- the remote /rerank API


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (
            {"results": [{"index": 1, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.1}]},
            [(1, 0.9), (0, 0.1)],
        ),
        ({"results": [{"index": 0, "score": 0.7}]}, [(0, 0.7)]),
        ({"data": [{"index": 2, "relevance_score": 0.3}]}, [(2, 0.3)]),
        ([{"index": 0, "score": -2.5}], [(0, -2.5)]),
        ({"results": [{"index": 0, "relevance_score": 1}]}, [(0, 1.0)]),
        (
            {"results": [{"index": "0", "relevance_score": 0.5}, {"index": 1}, "junk", {"index": True, "score": 0.2}]},
            [],
        ),
        ({"results": [{"index": 0, "relevance_score": float("nan")}, {"index": 1, "score": 0.4}]}, [(1, 0.4)]),
    ],
    ids=["jina/cohere", "score key", "data key", "bare list", "integer score", "unreadable rows", "non-finite"],
)
def test_parse_rerank_response(payload, expected):
    assert parse_rerank_response(payload) == [RankResult(i, s) for i, s in expected]


@pytest.mark.parametrize("payload", [{"error": "nope"}, "text", None, {"results": "x"}])
def test_parse_rerank_response_without_a_list_is_an_error(payload):
    with pytest.raises(ModelCallError):
        parse_rerank_response(payload)


def mock_transport(handler, seen: list[httpx.Request]) -> httpx.MockTransport:
    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return handler(request)

    return httpx.MockTransport(record)


def test_remote_posts_the_jina_cohere_shape():
    seen: list[httpx.Request] = []
    reply = {"results": [{"index": 1, "relevance_score": 0.8}, {"index": 0, "relevance_score": 0.2}]}
    transport = mock_transport(lambda r: httpx.Response(200, json=reply), seen)
    model = RemoteRerankModel("http://rerank.test/v1/", "jina-reranker-v2", api_key="k", transport=transport)
    assert isinstance(model, RerankModel)
    ranked = asyncio.run(model.rerank("q", ["a", "b"]))
    assert ranked == [RankResult(1, 0.8), RankResult(0, 0.2)]
    request = seen[0]
    assert request.method == "POST"
    assert str(request.url) == "http://rerank.test/v1/rerank"
    assert request.headers["Authorization"] == "Bearer k"
    assert json.loads(request.content) == {
        "model": "jina-reranker-v2",
        "query": "q",
        "documents": ["a", "b"],
        "top_n": 2,
    }


def test_remote_without_key_sends_no_authorization():
    seen: list[httpx.Request] = []
    transport = mock_transport(lambda r: httpx.Response(200, json={"results": []}), seen)
    asyncio.run(RemoteRerankModel("http://rerank.test", "m", transport=transport).rerank("q", ["a"]))
    assert "Authorization" not in seen[0].headers


def test_remote_no_passages_makes_no_call():
    seen: list[httpx.Request] = []
    transport = mock_transport(lambda r: httpx.Response(200, json={"results": []}), seen)
    assert asyncio.run(RemoteRerankModel("http://x", "m", transport=transport).rerank("q", [])) == []
    assert seen == []


def failing(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("refused", request=request)


@pytest.mark.parametrize(
    "handler",
    [
        lambda r: httpx.Response(500, text="boom"),
        lambda r: httpx.Response(200, text="not json"),
        lambda r: httpx.Response(200, json={"detail": "no results"}),
        failing,
    ],
    ids=["http 500", "not json", "no result list", "connection refused"],
)
def test_remote_failures_raise_model_call_error(handler):
    model = RemoteRerankModel("http://x", "m", transport=httpx.MockTransport(handler))
    with pytest.raises(ModelCallError):
        asyncio.run(model.rerank("q", ["a"]))


def test_remote_uses_one_client_per_event_loop():
    model = RemoteRerankModel(
        "http://x", "m", transport=httpx.MockTransport(lambda r: httpx.Response(200, json={"results": []}))
    )

    async def call_and_release() -> bool:
        await model.rerank("q", ["a"])
        first = model._clients.get()
        await model.rerank("q", ["a"])
        same = model._clients.get() is first
        await model.release_loop()
        return same

    assert asyncio.run(call_and_release())
    # A second loop (a warm Lambda's next invocation) gets a fresh client.
    assert asyncio.run(call_and_release())


def test_remote_default_timeout_is_the_seeds_60_seconds():
    model = RemoteRerankModel("http://x", "m")

    async def timeout() -> float | None:
        read = model._clients.get().timeout.read
        await model.release_loop()
        return read

    assert asyncio.run(timeout()) == 60.0


# --- Bedrock

MODEL_ARN = "arn:aws:bedrock:us-east-1::foundation-model/amazon.rerank-v1:0"


def bedrock_client():
    return boto3.client(
        "bedrock-agent-runtime", region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    )


def bedrock_request(query: str, texts: list[str], next_token: str | None = None, **model_fields) -> dict:
    configuration = {"modelArn": MODEL_ARN, **model_fields}
    request = {
        "queries": [{"type": "TEXT", "textQuery": {"text": query}}],
        "sources": [
            {"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": text}}}
            for text in texts
        ],
        "rerankingConfiguration": {
            "type": "BEDROCK_RERANKING_MODEL",
            "bedrockRerankingConfiguration": {"numberOfResults": len(texts), "modelConfiguration": configuration},
        },
    }
    if next_token:
        request["nextToken"] = next_token
    return request


def test_bedrock_rerank_request_and_response_shapes():
    client = bedrock_client()
    with Stubber(client) as stubber:
        stubber.add_response(
            "rerank",
            {"results": [{"index": 1, "relevanceScore": 0.91}, {"index": 0, "relevanceScore": 0.12}]},
            bedrock_request("refund window", ["shipping costs", "refunds within 7 days"]),
        )
        model = BedrockRerankModel(MODEL_ARN, client=client)
        ranked = asyncio.run(model.rerank("refund window", ["shipping costs", "refunds within 7 days"]))
        stubber.assert_no_pending_responses()
    assert ranked == [RankResult(1, pytest.approx(0.91)), RankResult(0, pytest.approx(0.12))]
    assert model.model_id == MODEL_ARN
    assert model.max_passage_chars == providers.BEDROCK_MAX_TEXT_CHARS


def test_bedrock_follows_next_token_and_batches_sources(monkeypatch):
    monkeypatch.setattr(providers, "BEDROCK_MAX_SOURCES", 2)
    client = bedrock_client()
    with Stubber(client) as stubber:
        stubber.add_response(
            "rerank",
            {"results": [{"index": 0, "relevanceScore": 0.5}], "nextToken": "page2"},
            bedrock_request("q", ["a", "b"]),
        )
        stubber.add_response(
            "rerank", {"results": [{"index": 1, "relevanceScore": 0.6}]}, bedrock_request("q", ["a", "b"], "page2")
        )
        stubber.add_response("rerank", {"results": [{"index": 0, "relevanceScore": 0.7}]}, bedrock_request("q", ["c"]))
        ranked = asyncio.run(BedrockRerankModel(MODEL_ARN, client=client).rerank("q", ["a", "b", "c"]))
        stubber.assert_no_pending_responses()
    assert [(r.index, round(r.score, 2)) for r in ranked] == [(0, 0.5), (1, 0.6), (2, 0.7)]


def test_bedrock_passes_additional_model_fields():
    client = bedrock_client()
    fields = {"additionalModelRequestFields": {"max_tokens_per_doc": 512}}
    with Stubber(client) as stubber:
        stubber.add_response("rerank", {"results": []}, bedrock_request("q", ["a"], **fields))
        model = BedrockRerankModel(MODEL_ARN, client=client, additional_fields={"max_tokens_per_doc": 512})
        assert asyncio.run(model.rerank("q", ["a"])) == []
        stubber.assert_no_pending_responses()


def test_bedrock_errors_raise_model_call_error():
    client = bedrock_client()
    with Stubber(client) as stubber:
        stubber.add_client_error("rerank", service_error_code="ThrottlingException", http_status_code=429)
        with pytest.raises(ModelCallError, match="ThrottlingException"):
            asyncio.run(BedrockRerankModel(MODEL_ARN, client=client).rerank("q", ["a"]))


def test_bedrock_passage_limit_never_exceeds_the_api_limit():
    assert BedrockRerankModel(MODEL_ARN, client=object(), max_passage_chars=10**6).max_passage_chars == 32_000
    assert BedrockRerankModel(MODEL_ARN, client=object(), max_passage_chars=1000).max_passage_chars == 1000


# --- local ONNX cross-encoder

VOCAB = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "refund": 4, "policy": 5, "shipping": 6, "cost": 7}
REFUND_ID = VOCAB["refund"]


def write_tokenizer(directory) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    tokenizer = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", VOCAB["[CLS]"]), ("[SEP]", VOCAB["[SEP]"])],
    )
    tokenizer.save(str(directory / "tokenizer.json"))


def write_cross_encoder(path) -> None:
    """logit = 2 × (occurrences of "refund" in the passage segment) − 1, as a (batch, 1) output."""
    onnx = pytest.importorskip(
        "onnx", reason="building the test cross-encoder needs the onnx package (pip install onnx), not a dependency"
    )
    from onnx import TensorProto, helper

    batch_by_tokens = ["batch", "tokens"]
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, batch_by_tokens)
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])
    constants = [
        helper.make_tensor("refund_id", TensorProto.INT64, [], [REFUND_ID]),
        helper.make_tensor("axis", TensorProto.INT64, [1], [1]),
        helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]),
        helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]),
    ]
    nodes = [
        helper.make_node("Equal", ["input_ids", "refund_id"], ["is_refund"]),
        helper.make_node("Cast", ["is_refund"], ["refund_f"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["token_type_ids"], ["passage_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["refund_f", "passage_f"], ["refund_in_passage"]),
        helper.make_node("ReduceSum", ["refund_in_passage", "axis"], ["count"], keepdims=1),
        helper.make_node("Mul", ["count", "two"], ["doubled"]),
        helper.make_node("Sub", ["doubled", "one"], ["logits"]),
    ]
    graph = helper.make_graph(nodes, "tiny_cross_encoder", inputs, [output], initializer=constants)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def test_local_cross_encoder_scores_pairs_with_sigmoid(tmp_path):
    write_cross_encoder(tmp_path / "model.onnx")
    write_tokenizer(tmp_path)
    model = LocalCrossEncoderModel(tmp_path, batch_size=2)
    passages = ["refund policy", "shipping cost", "refund refund policy"]
    # The query's own "refund" is segment 0 and must not count.
    ranked = asyncio.run(model.rerank("refund", passages))
    assert [r.index for r in ranked] == [2, 0, 1]
    assert [r.score for r in ranked] == pytest.approx([sigmoid(3), sigmoid(1), sigmoid(-1)])
    assert model.model_id == f"local:{tmp_path.name}"


def test_local_cross_encoder_finds_the_hugging_face_layout(tmp_path):
    (tmp_path / "onnx").mkdir()
    write_cross_encoder(tmp_path / "onnx" / "model.onnx")
    write_tokenizer(tmp_path)
    assert LocalCrossEncoderModel(tmp_path).scores("q", ["refund"]) == pytest.approx([sigmoid(1)])


def test_local_cross_encoder_needs_its_files(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"tokenizer\.json"):
        LocalCrossEncoderModel(tmp_path)
    write_tokenizer(tmp_path)
    with pytest.raises(FileNotFoundError, match="ONNX"):
        LocalCrossEncoderModel(tmp_path)


# --- the registry and configuration wiring


class StubModel:
    max_passage_chars = 0

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id
        self.released = 0

    async def rerank(self, query, passages):
        return []

    async def release_loop(self) -> None:
        self.released += 1


def test_registry_builds_each_model_once_and_defaults_to_the_first():
    built: list[str] = []

    def factory(model_id: str):
        def build() -> StubModel:
            built.append(model_id)
            return StubModel(model_id)

        return build

    registry = RerankModelRegistry()
    assert registry.resolve_id("") == ""
    registry.add("a", factory("a"))
    registry.add("b", factory("b"))
    assert registry.default_model_id == "a"
    assert registry.get().model_id == "a"
    assert registry.get("b") is registry.get("b")
    assert built == ["a", "b"]
    registry.add("c", factory("c"), default=True)
    assert registry.resolve_id("") == "c"
    assert registry.resolve_id("b") == "b"


def test_registry_unknown_and_failing_factories():
    from ragline.models.registry import UnknownModel

    registry = RerankModelRegistry()
    with pytest.raises(UnknownModel):
        registry.get("missing")
    attempts: list[int] = []

    def broken() -> StubModel:
        attempts.append(1)
        raise FileNotFoundError("no model directory")

    registry.add("broken", broken)
    for _ in range(2):
        with pytest.raises(FileNotFoundError):
            registry.get("broken")
    assert len(attempts) == 2


def test_registry_release_loop_reaches_built_models():
    registry = RerankModelRegistry()
    registry.add("a", lambda: StubModel("a"))
    model = registry.get("a")
    asyncio.run(registry.release_loop())
    assert model.released == 1


def test_register_configured_models(tmp_path):
    config = RerankConfig(
        timeout_s=5,
        models=[
            RerankModelSpec(id="jina", provider=RerankProvider.REMOTE, base_url="http://r/v1", model="jina-m"),
            RerankModelSpec(id="aws", provider=RerankProvider.BEDROCK, model_arn=MODEL_ARN, region_name="us-east-1"),
            RerankModelSpec(id="local", provider=RerankProvider.LOCAL, model_dir=str(tmp_path / "missing")),
        ],
        default_model_id="aws",
    )
    registry = register_configured_models(RerankModelRegistry(), config)
    assert registry.default_model_id == "aws"
    remote = registry.get("jina")
    assert isinstance(remote, RemoteRerankModel)
    assert remote.model_id == "jina-m@http://r/v1"
    assert isinstance(registry.get("aws"), BedrockRerankModel)
    with pytest.raises(FileNotFoundError):
        registry.get("local")
