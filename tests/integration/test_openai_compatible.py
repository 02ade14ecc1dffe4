"""OpenAICompatibleChatModel and OpenAICompatibleEmbedder against a real OpenAI-format server (the scripted model).

The stream is parsed with json.loads rather than the OpenAI SDK's pydantic models; these tests hold it to what the
SDK did — the same retries before a reply, the same text — and to what it did not: a stream cut mid-reply is a
ModelCallError with the text so far already yielded, not a raw transport error.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from ragline.models.base import ChatChunk, ChatMessage, ModelCallError
from ragline.models.openai_compatible import OpenAICompatibleChatModel, OpenAICompatibleEmbedder
from ragline.types import ChatOptions
from tests.support.scripted_model import Piece, Script, ScriptedModel

SYSTEM = ChatMessage("system", "Answer from the passages.")
QUESTION = ChatMessage("user", "What is the answer?")


@pytest.fixture
def model(scripted: ScriptedModel, fresh_scripts: None) -> OpenAICompatibleChatModel:
    return OpenAICompatibleChatModel(f"{scripted.url}/v1", "scripted", "test-key")  # type: ignore[attr-defined]


def stream(model: OpenAICompatibleChatModel) -> tuple[list[ChatChunk], ModelCallError | None]:
    async def run() -> tuple[list[ChatChunk], ModelCallError | None]:
        chunks: list[ChatChunk] = []
        try:
            async for chunk in model.chat_stream([SYSTEM, QUESTION], ChatOptions(max_tokens=64, top_p=0.9)):
                chunks.append(chunk)
        except ModelCallError as exc:
            return chunks, exc
        finally:
            await model.release_loop()
        return chunks, None

    return asyncio.run(run())


def test_answer_and_reasoning_stream_in_order_and_the_request_is_openais(
    model: OpenAICompatibleChatModel, scripted: ScriptedModel
) -> None:
    scripted.queue(
        Script([Piece(reasoning="Looking. "), Piece(content="The "), Piece(content="answer 你好.")], "length")
    )
    chunks, error = stream(model)
    assert error is None
    assert [(c.type, c.content) for c in chunks[:-1]] == [
        ("thinking", "Looking. "),
        ("answer", "The "),
        ("answer", "answer 你好."),
    ]
    assert chunks[-1].type == "end"
    assert chunks[-1].finish_reason == "length"
    body = scripted.answers[-1].body
    assert body["stream"] is True
    assert body["model"] == "scripted"
    assert body["max_tokens"] == 64
    assert body["top_p"] == 0.9
    assert body["messages"] == [
        {"role": "system", "content": "Answer from the passages."},
        {"role": "user", "content": "What is the answer?"},
    ]


def test_two_server_errors_are_retried_as_the_sdk_retried(
    model: OpenAICompatibleChatModel, scripted: ScriptedModel
) -> None:
    scripted.queue(Script(status=503), Script(status=429), Script.answer("after ", "retries"))
    chunks, error = stream(model)
    assert error is None
    assert "".join(c.content for c in chunks if c.type == "answer") == "after retries"
    assert len(scripted.answers) == 3


def test_a_third_server_error_ends_the_call_with_the_status(
    model: OpenAICompatibleChatModel, scripted: ScriptedModel
) -> None:
    scripted.queue(Script(status=500), Script(status=500), Script(status=500), Script.answer("never"))
    chunks, error = stream(model)
    assert chunks == []
    assert error is not None
    assert "HTTP 500" in str(error)
    assert "scripted failure" in str(error)
    assert len(scripted.answers) == 3


def test_a_client_error_is_not_retried(model: OpenAICompatibleChatModel, scripted: ScriptedModel) -> None:
    scripted.queue(Script(status=400), Script.answer("never"))
    _, error = stream(model)
    assert error is not None
    assert "HTTP 400" in str(error)
    assert len(scripted.answers) == 1


def test_a_stream_cut_mid_reply_is_a_model_error_after_the_text_so_far(
    model: OpenAICompatibleChatModel, scripted: ScriptedModel
) -> None:
    script = Script([Piece(content="first "), Piece(content="second", delay=0.5)])
    scripted.queue(script)

    async def run() -> tuple[list[str], ModelCallError | None]:
        texts: list[str] = []
        try:
            async for chunk in model.chat_stream([SYSTEM, QUESTION], ChatOptions()):
                texts.append(chunk.content)
                received = scripted.answers[-1]
                received.break_now = True  # the server cuts the connection instead of sending the next piece
        except ModelCallError as exc:
            return texts, exc
        finally:
            await model.release_loop()
        return texts, None

    texts, error = asyncio.run(run())
    assert texts == ["first "]
    assert error is not None
    assert "stream cut" in str(error)
    assert not scripted.answers[-1].completed


def test_a_connection_refused_is_a_model_error(fresh_scripts: None) -> None:
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAICompatibleChatModel(f"http://127.0.0.1:{port}/v1", "nobody")
    chunks, error = stream(model)
    assert chunks == []
    assert error is not None
    assert "ConnectError" in str(error)


def test_embeddings_come_back_in_input_order_normalised_in_batches(
    scripted: ScriptedModel, fresh_scripts: None
) -> None:
    scripted.embedding_batches.clear()
    embedder = OpenAICompatibleEmbedder(f"{scripted.url}/v1", "scripted-embed", "k", batch_size=2)  # type: ignore[attr-defined]
    texts = ["alpha", "beta", "gamma", "alpha"]
    matrix = embedder.embed_documents(texts)
    assert matrix.shape == (4, 8)
    assert embedder.dimensions == 8
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0)
    assert np.allclose(matrix[0], matrix[3])  # the same text, the same vector, whatever the reply's order
    assert not np.allclose(matrix[0], matrix[1])
    assert scripted.embedding_batches == [["alpha", "beta"], ["gamma", "alpha"]]
    assert np.allclose(embedder.embed_query("beta"), matrix[1])


def test_embeddings_retry_twice_then_name_the_status(scripted: ScriptedModel, fresh_scripts: None) -> None:
    scripted.embedding_batches.clear()
    embedder = OpenAICompatibleEmbedder(f"{scripted.url}/v1", "scripted-embed")  # type: ignore[attr-defined]
    scripted.embedding_failures.extend([502, 503])
    assert embedder.embed_documents(["after retries"]).shape == (1, 8)
    scripted.embedding_failures.extend([500, 500, 500])
    with pytest.raises(ModelCallError, match="HTTP 500"):
        embedder.embed_documents(["never"])
    scripted.embedding_failures.extend([401])
    with pytest.raises(ModelCallError, match="HTTP 401"):
        embedder.embed_documents(["refused once, not retried"])
    assert not scripted.embedding_failures
    assert scripted.embedding_batches == [["after retries"]]
