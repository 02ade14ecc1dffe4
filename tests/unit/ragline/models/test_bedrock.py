"""BedrockChatModel at the wire: requests checked by botocore's Stubber on a real bedrock-runtime client.

Stubber cannot return a ConverseStream EventStream (its response validation rejects anything but a
structure), so streaming tests let Stubber check the request and then swap the parsed ``stream`` for a
fake through the client's own ``after-call`` event. One test encodes real event-stream frames and parses
them with botocore, proving the fake events have exactly the shape botocore produces.
"""

from __future__ import annotations

import asyncio
import binascii
import json
import struct
import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import EventStreamError
from botocore.parsers import EventStreamJSONParser
from botocore.stub import Stubber

from ragline.models.base import TRUNCATION_REASONS, ChatChunk, ChatMessage, ChatResponse, ModelCallError
from ragline.models.bedrock import (
    BedrockCallError,
    BedrockChatModel,
    ModelTraits,
    ThinkingStyle,
    converse_messages,
    model_traits,
    stream_chunks,
)
from ragline.types import ChatOptions
from tests.unit.ragline.moto_env import FAKE_ENVIRONMENT, REGION

SONNET_4_5 = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
OPUS_4_6 = "global.anthropic.claude-opus-4-6-v1"
OPUS_4_7 = "us.anthropic.claude-opus-4-7"
NOVA = "amazon.nova-pro-v1:0"

CONVERSATION = [
    ChatMessage("system", "Answer from the context."),
    ChatMessage("user", "What is the refund window?"),
]
CONVERSATION_TURNS = [{"role": "user", "content": [{"text": "What is the refund window?"}]}]
CONVERSATION_SYSTEM = [{"text": "Answer from the context."}]


@pytest.fixture
def client(monkeypatch):
    """A real bedrock-runtime client with fake credentials; nothing may point it at a real endpoint."""
    for name, value in FAKE_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    return boto3.client("bedrock-runtime", region_name=REGION)


class FakeEventStream:
    """Iterates parsed ConverseStream events like botocore's EventStream and records ``close()``.

    ``hold_after`` blocks the iteration after that many events until ``release`` is set (``waiting`` tells
    when), standing in for a read waiting on a model still generating; ``raise_at`` raises as botocore does
    when an exception frame arrives.
    """

    def __init__(
        self,
        events: list[dict[str, Any]],
        hold_after: int | None = None,
        raise_at: tuple[int, Exception] | None = None,
    ) -> None:
        self.events = events
        self.hold_after = hold_after
        self.raise_at = raise_at
        self.release = threading.Event()
        self.waiting = threading.Event()
        self.closed = threading.Event()
        self.read = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for index, event in enumerate(self.events):
            if self.hold_after is not None and index == self.hold_after:
                self.waiting.set()
                assert self.release.wait(5), "the test never released the stream"
            if self.raise_at is not None and index == self.raise_at[0]:
                raise self.raise_at[1]
            self.read += 1
            yield event

    def close(self) -> None:
        self.closed.set()


def stub_stream(stubber: Stubber, client: Any, request: dict[str, Any], stream: Any) -> None:
    """Queue a ConverseStream call whose request Stubber checks and whose reply carries ``stream``."""
    stubber.add_response("converse_stream", {}, request)

    def swap_stream(parsed: dict[str, Any], **_: Any) -> None:
        if "Error" not in parsed:
            parsed["stream"] = stream

    client.meta.events.register("after-call.bedrock-runtime.ConverseStream", swap_stream)


def run_stream(model: BedrockChatModel, messages: list[ChatMessage], options: ChatOptions) -> list[ChatChunk]:
    async def consume() -> list[ChatChunk]:
        return [chunk async for chunk in model.chat_stream(messages, options)]

    return asyncio.run(consume())


def usage_event() -> dict[str, Any]:
    return {
        "metadata": {
            "usage": {"inputTokens": 12, "outputTokens": 9, "totalTokens": 21},
            "metrics": {"latencyMs": 420},
        }
    }


def text_delta(text: str, index: int = 0) -> dict[str, Any]:
    return {"contentBlockDelta": {"delta": {"text": text}, "contentBlockIndex": index}}


def reasoning_delta(text: str) -> dict[str, Any]:
    return {"contentBlockDelta": {"delta": {"reasoningContent": {"text": text}}, "contentBlockIndex": 0}}


def reply_events(stop_reason: str) -> list[dict[str, Any]]:
    return [
        {"messageStart": {"role": "assistant"}},
        reasoning_delta("The policy says "),
        reasoning_delta("seven days."),
        {"contentBlockDelta": {"delta": {"reasoningContent": {"signature": "c2ln"}}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        text_delta("Refunds within ", 1),
        text_delta("7 days.", 1),
        {"contentBlockStop": {"contentBlockIndex": 1}},
        {"messageStop": {"stopReason": stop_reason}},
        usage_event(),
    ]


# --- messages


def test_messages_alternate_and_blank_ones_are_dropped():
    messages = [
        ChatMessage("system", "Be brief."),
        ChatMessage("system", "  "),
        ChatMessage("user", "first question"),
        ChatMessage("assistant", ""),  # an aborted round left no answer
        ChatMessage("user", "second question"),
        ChatMessage("assistant", "an answer"),
        ChatMessage("assistant", "more of it"),
        ChatMessage("user", "\n"),
        ChatMessage("system", "Cite sources."),
        ChatMessage("user", "third question"),
    ]
    system, turns = converse_messages(messages)
    assert system == [{"text": "Be brief."}, {"text": "Cite sources."}]
    assert turns == [
        {"role": "user", "content": [{"text": "first question\n\nsecond question"}]},
        {"role": "assistant", "content": [{"text": "an answer\n\nmore of it"}]},
        {"role": "user", "content": [{"text": "third question"}]},
    ]


# --- model traits


@pytest.mark.parametrize(
    ("model_id", "traits"),
    [
        ("anthropic.claude-3-7-sonnet-20250219-v1:0", ModelTraits(ThinkingStyle.BUDGET)),
        ("us.anthropic.claude-opus-4-20250514-v1:0", ModelTraits(ThinkingStyle.BUDGET)),
        ("anthropic.claude-opus-4-1-20250805-v1:0", ModelTraits(ThinkingStyle.BUDGET)),
        (SONNET_4_5, ModelTraits(ThinkingStyle.BUDGET)),
        ("anthropic.claude-haiku-4-5-20251001-v1:0", ModelTraits(ThinkingStyle.BUDGET)),
        (OPUS_4_6, ModelTraits(ThinkingStyle.ADAPTIVE)),
        ("anthropic.claude-sonnet-4-6", ModelTraits(ThinkingStyle.ADAPTIVE)),
        (OPUS_4_7, ModelTraits(ThinkingStyle.ADAPTIVE, accepts_sampling=False)),
        ("anthropic.claude-mythos-preview", ModelTraits(ThinkingStyle.ADAPTIVE, accepts_sampling=False)),
        (
            "arn:aws:bedrock:us-west-2:123456789012:inference-profile/global.anthropic.claude-sonnet-4-20250514-v1:0",
            ModelTraits(ThinkingStyle.BUDGET),
        ),
        ("anthropic.claude-3-5-sonnet-20240620-v1:0", ModelTraits()),
        ("anthropic.claude-3-haiku-20240307-v1:0", ModelTraits()),
        ("anthropic.claude-instant-v1", ModelTraits()),
        (NOVA, ModelTraits()),
        ("us.deepseek.r1-v1:0", ModelTraits()),
    ],
)
def test_model_traits(model_id, traits):
    assert model_traits(model_id) == traits


# --- Converse (chat)


def converse_reply(content: list[dict[str, Any]], stop_reason: str = "end_turn") -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop_reason,
        "usage": {"inputTokens": 12, "outputTokens": 9, "totalTokens": 21},
        "metrics": {"latencyMs": 420},
    }


def test_converse_request_and_reply_shapes(client):
    messages = [*CONVERSATION, ChatMessage("assistant", "Seven days."), ChatMessage("user", "And for sale items?")]
    request = {
        "modelId": NOVA,
        "system": CONVERSATION_SYSTEM,
        "messages": [
            *CONVERSATION_TURNS,
            {"role": "assistant", "content": [{"text": "Seven days."}]},
            {"role": "user", "content": [{"text": "And for sale items?"}]},
        ],
        "inferenceConfig": {"maxTokens": 512, "temperature": 0.2, "topP": 0.9},
    }
    with Stubber(client) as stubber:
        stubber.add_response("converse", converse_reply([{"text": "Sale items are final."}]), request)
        model = BedrockChatModel(NOVA, client=client)
        reply = asyncio.run(model.chat(messages, ChatOptions(temperature=0.2, top_p=0.9, max_tokens=512)))
        stubber.assert_no_pending_responses()
    assert reply == ChatResponse("Sale items are final.", "", "stop")
    assert model.model_id == f"bedrock:{NOVA}"


def test_converse_with_budgeted_thinking(client):
    request = {
        "modelId": SONNET_4_5,
        "system": CONVERSATION_SYSTEM,
        "messages": CONVERSATION_TURNS,
        # The budget rides on top of the answer's limit; temperature and top_p are not sent while thinking.
        "inferenceConfig": {"maxTokens": 2048 + 2000},
        "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 2000}, "top_k": 40},
    }
    content = [
        {"reasoningContent": {"reasoningText": {"text": "The policy says ", "signature": "c2ln"}}},
        {"reasoningContent": {"redactedContent": b"\x00"}},
        {"reasoningContent": {"reasoningText": {"text": "seven days."}}},
        {"text": "Refunds within "},
        {"text": "7 days."},
    ]
    with Stubber(client) as stubber:
        stubber.add_response("converse", converse_reply(content, "max_tokens"), request)
        model = BedrockChatModel(
            SONNET_4_5, client=client, additional_fields={"top_k": 40}, thinking_budget_tokens=2000
        )
        reply = asyncio.run(model.chat(CONVERSATION, ChatOptions(temperature=0.7, top_p=0.9, thinking=True)))
        stubber.assert_no_pending_responses()
    assert reply == ChatResponse("Refunds within 7 days.", "The policy says seven days.", "max_tokens")
    assert reply.finish_reason in TRUNCATION_REASONS


@pytest.mark.parametrize(
    ("model_id", "thinking", "budget", "inference", "fields"),
    [
        # Below Anthropic's 1,024-token floor the budget is raised to it.
        (SONNET_4_5, True, 10, {"maxTokens": 1000 + 1024}, {"thinking": {"type": "enabled", "budget_tokens": 1024}}),
        (OPUS_4_6, True, 4096, {"maxTokens": 1000 + 4096}, {"thinking": {"type": "adaptive"}}),
        (OPUS_4_6, False, 4096, {"maxTokens": 1000, "temperature": 0.3}, None),
        (OPUS_4_6, None, 4096, {"maxTokens": 1000, "temperature": 0.3}, None),
        (OPUS_4_7, True, 1024, {"maxTokens": 1000 + 1024}, {"thinking": {"type": "adaptive"}}),
        # Opus 4.7 rejects temperature outright, thinking or not.
        (OPUS_4_7, False, 1024, {"maxTokens": 1000}, None),
        # A model that cannot be asked to reason is asked as if thinking were off.
        (NOVA, True, 1024, {"maxTokens": 1000, "temperature": 0.3}, None),
    ],
)
def test_thinking_and_sampling_fields_per_model(client, model_id, thinking, budget, inference, fields):
    request: dict[str, Any] = {"modelId": model_id, "messages": CONVERSATION_TURNS, "inferenceConfig": inference}
    request["system"] = CONVERSATION_SYSTEM
    if fields is not None:
        request["additionalModelRequestFields"] = fields
    with Stubber(client) as stubber:
        stubber.add_response("converse", converse_reply([{"text": "ok"}]), request)
        model = BedrockChatModel(model_id, client=client, thinking_budget_tokens=budget)
        asyncio.run(model.chat(CONVERSATION, ChatOptions(max_tokens=1000, thinking=thinking)))
        stubber.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("stop_reason", "finish"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "max_tokens"),
        ("guardrail_intervened", "guardrail_intervened"),
        ("model_context_window_exceeded", "model_context_window_exceeded"),
    ],
)
def test_converse_stop_reasons(client, stop_reason, finish):
    with Stubber(client) as stubber:
        stubber.add_response("converse", converse_reply([{"text": "ok"}], stop_reason))
        reply = asyncio.run(BedrockChatModel(NOVA, client=client).chat(CONVERSATION, ChatOptions()))
    assert reply.finish_reason == finish


@pytest.mark.parametrize(
    ("code", "status"), [("ThrottlingException", 429), ("AccessDeniedException", 403), ("ValidationException", 400)]
)
def test_converse_errors_carry_the_code(client, code, status):
    with Stubber(client) as stubber:
        stubber.add_client_error("converse", service_error_code=code, service_message="nope", http_status_code=status)
        with pytest.raises(ModelCallError, match=code) as raised:
            asyncio.run(BedrockChatModel(NOVA, client=client).chat(CONVERSATION, ChatOptions()))
    assert isinstance(raised.value, BedrockCallError)
    assert raised.value.code == code


# --- ConverseStream


def test_stream_yields_thinking_answer_and_truncation(client):
    request = {
        "modelId": SONNET_4_5,
        "system": CONVERSATION_SYSTEM,
        "messages": CONVERSATION_TURNS,
        "inferenceConfig": {"maxTokens": 256 + 1024},
        "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 1024}},
    }
    stream = FakeEventStream(reply_events("max_tokens"))
    with Stubber(client) as stubber:
        stub_stream(stubber, client, request, stream)
        chunks = run_stream(
            BedrockChatModel(SONNET_4_5, client=client), CONVERSATION, ChatOptions(max_tokens=256, thinking=True)
        )
        stubber.assert_no_pending_responses()
    assert chunks == [
        ChatChunk("thinking", "The policy says "),
        ChatChunk("thinking", "seven days."),
        ChatChunk("answer", "Refunds within "),
        ChatChunk("answer", "7 days."),
        ChatChunk("end", finish_reason="max_tokens"),
    ]
    assert chunks[-1].finish_reason in TRUNCATION_REASONS
    assert stream.closed.wait(2), "a finished stream is closed too"


@pytest.mark.parametrize(
    ("stop_reason", "finish"),
    [("end_turn", "stop"), ("stop_sequence", "stop"), ("content_filtered", "content_filtered")],
)
def test_stream_finish_reasons(client, stop_reason, finish):
    # Only the events matter here; the request shape is checked through Stubber above.
    client.converse_stream = lambda **_: {"stream": FakeEventStream(reply_events(stop_reason))}
    chunks = run_stream(BedrockChatModel(NOVA, client=client), CONVERSATION, ChatOptions())
    assert chunks[-1] == ChatChunk("end", finish_reason=finish)


def test_stream_without_message_stop_ends_without_a_reason(client):
    client.converse_stream = lambda **_: {"stream": FakeEventStream([text_delta("partial")])}
    chunks = run_stream(BedrockChatModel(NOVA, client=client), CONVERSATION, ChatOptions())
    assert chunks == [ChatChunk("answer", "partial"), ChatChunk("end", finish_reason=None)]


def test_client_error_at_start_is_a_model_call_error_with_the_code(client):
    with Stubber(client) as stubber:
        stubber.add_client_error(
            "converse_stream",
            service_error_code="ThrottlingException",
            service_message="slow down",
            http_status_code=429,
        )
        with pytest.raises(ModelCallError, match="ThrottlingException") as raised:
            run_stream(BedrockChatModel(NOVA, client=client), CONVERSATION, ChatOptions())
    assert raised.value.code == "ThrottlingException"


def test_error_mid_stream_is_a_model_call_error_after_the_chunks_before_it(client):
    # botocore raises EventStreamError when an exception frame arrives, coded with the event member name.
    failure = EventStreamError(
        {"Error": {"Code": "modelStreamErrorException", "Message": "the model stopped"}}, "ConverseStream"
    )
    stream = FakeEventStream(reply_events("end_turn"), raise_at=(3, failure))
    client.converse_stream = lambda **_: {"stream": stream}
    received: list[ChatChunk] = []

    async def consume() -> None:
        async for chunk in BedrockChatModel(NOVA, client=client).chat_stream(CONVERSATION, ChatOptions()):
            received.append(chunk)

    with pytest.raises(ModelCallError, match="modelStreamErrorException") as raised:
        asyncio.run(consume())
    assert raised.value.code == "modelStreamErrorException"
    assert received == [ChatChunk("thinking", "The policy says "), ChatChunk("thinking", "seven days.")]
    assert stream.closed.wait(2)


def test_early_stop_closes_the_stream(client):
    stream = FakeEventStream(reply_events("end_turn"), hold_after=2)
    client.converse_stream = lambda **_: {"stream": stream}

    async def first_chunk_then_stop() -> ChatChunk:
        chunks = BedrockChatModel(NOVA, client=client).chat_stream(CONVERSATION, ChatOptions())
        first = await anext(chunks)
        # The user presses stop while the worker is blocked reading the model's next event.
        assert await asyncio.to_thread(stream.waiting.wait, 2)
        await chunks.aclose()
        return first

    assert asyncio.run(first_chunk_then_stop()) == ChatChunk("thinking", "The policy says ")
    assert not stream.closed.is_set(), "the loop never closes the body under the worker's read"
    stream.release.set()  # the model sends one more event
    assert stream.closed.wait(2), "the HTTP stream must end when the consumer stops"
    assert stream.read < len(stream.events), "nothing past the stop is read"


def test_a_stop_before_the_next_read_reads_nothing_more():
    stop = threading.Event()
    stop.set()
    stream = FakeEventStream(reply_events("end_turn"))
    assert list(stream_chunks(stream, stop)) == []
    assert stream.read == 0


# --- the fake events against botocore's own parsing


def event_frame(headers: dict[str, str], payload: dict[str, Any]) -> bytes:
    """One AWS event-stream message: prelude (lengths + CRC), string headers, JSON payload, message CRC."""
    encoded_headers = b"".join(
        struct.pack("!B", len(name)) + name.encode() + struct.pack("!BH", 7, len(value)) + value.encode()
        for name, value in headers.items()
    )
    body = json.dumps(payload).encode()
    total = 12 + len(encoded_headers) + len(body) + 4
    prelude = struct.pack("!II", total, len(encoded_headers))
    prelude += struct.pack("!I", binascii.crc32(prelude))
    message = prelude + encoded_headers + body
    return message + struct.pack("!I", binascii.crc32(message))


class RawBody:
    """The urllib3 response botocore's EventStream reads from: ``stream()`` of byte chunks and ``close()``."""

    def __init__(self, frames: list[bytes]) -> None:
        self.frames = frames
        self.closed = False

    def stream(self) -> Iterator[bytes]:
        yield from self.frames

    def close(self) -> None:
        self.closed = True


def wire_stream(client: Any, frames: list[bytes]) -> Any:
    from botocore.eventstream import EventStream

    shape = client.meta.service_model.operation_model("ConverseStream").output_shape.members["stream"]
    return EventStream(RawBody(frames), shape, EventStreamJSONParser(), "ConverseStream")


def event_frames(events: list[dict[str, Any]]) -> list[bytes]:
    frames = []
    for event in events:
        (event_type, body), *_ = event.items()
        headers = {":message-type": "event", ":event-type": event_type, ":content-type": "application/json"}
        frames.append(event_frame(headers, body))
    return frames


def test_fake_events_are_what_botocore_parses_from_the_wire(client):
    events = reply_events("max_tokens")
    assert list(wire_stream(client, event_frames(events))) == events


def test_exception_frame_from_the_wire_is_a_model_call_error(client):
    throttled = event_frame(
        {":message-type": "exception", ":exception-type": "throttlingException", ":content-type": "application/json"},
        {"message": "Too many tokens, please wait before trying again."},
    )
    stream = wire_stream(client, [*event_frames(reply_events("end_turn")[:6]), throttled])
    client.converse_stream = lambda **_: {"stream": stream}
    with pytest.raises(ModelCallError, match="throttlingException: Too many tokens") as raised:
        run_stream(BedrockChatModel(NOVA, client=client), CONVERSATION, ChatOptions())
    assert raised.value.code == "throttlingException"


# --- the client it builds itself


def test_builds_its_client_in_the_given_region(monkeypatch):
    for name, value in FAKE_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    model = BedrockChatModel("anthropic.claude-sonnet-4-6", region_name="eu-west-1")
    client = model._client()
    assert client.meta.region_name == "eu-west-1"
    assert client.meta.config.read_timeout == 120.0
    assert model._client() is client


def test_images_go_as_converse_image_blocks_after_the_text():
    from ragline.models.base import data_url

    png = b"\x89PNG\r\n\x1a\nrest"
    messages = [
        ChatMessage("user", "earlier"),
        ChatMessage("user", "What does this say?", images=(data_url(png, "image/png"), "https://x/y.png")),
    ]
    _, turns = converse_messages(messages)
    # The two user messages merged into one turn; the web URL cannot be sent as bytes and is left out.
    [turn] = turns
    assert turn["content"][0]["text"].endswith("What does this say?")
    assert turn["content"][1:] == [{"image": {"format": "png", "source": {"bytes": png}}}]


def test_openai_compatible_requests_carry_image_url_parts():
    from ragline.models.openai_compatible import OpenAICompatibleChatModel

    model = OpenAICompatibleChatModel("http://127.0.0.1:9/v1", "vision", "key")
    body = model._request(
        [ChatMessage("system", "s"), ChatMessage("user", "look", images=("data:image/png;base64,AAAA",))],
        ChatOptions(),
    )
    assert body["messages"] == [
        {"role": "system", "content": "s"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
    ]
