"""Amazon Bedrock chat models through bedrock-runtime's Converse and ConverseStream.

Converse is Bedrock's model-agnostic message API: one request shape for Claude, Nova, Llama, Mistral,
DeepSeek and the rest, with provider-specific knobs passed through ``additionalModelRequestFields``.

Sources this adapter follows:
- Converse / ConverseStream request and event shapes: the botocore service model of bedrock-runtime
  (``ConverseStreamOutput``: messageStart, contentBlockDelta{delta{text | reasoningContent{text}}},
  messageStop{stopReason}, metadata{usage}) and
  https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStreamOutput.html
- Claude extended thinking on Bedrock, passed as ``additionalModelRequestFields={"thinking": {"type":
  "enabled", "budget_tokens": N}}``, minimum budget 1,024 tokens, incompatible with temperature / top_p
  changes: https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-extended-thinking.html
- Adaptive thinking (``{"thinking": {"type": "adaptive"}}``), recommended from Claude Opus/Sonnet 4.6 and
  the only mode on Opus 4.7, Mythos and Fable:
  https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-adaptive-thinking.html and
  https://docs.aws.amazon.com/bedrock/latest/userguide/model-card-anthropic-claude-opus-4-7.html
- Claude Opus 4.7 rejects ``temperature`` ("temperature is deprecated for this model", 400), as reported
  in github.com/Comfy-Org/ComfyUI/issues/13923 and github.com/github/copilot-sdk/issues/1557.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ragline.models.base import ChatChunk, ChatMessage, ChatResponse, ModelCallError, data_url_bytes
from ragline.types import ChatOptions

logger = logging.getLogger(__name__)

# Anthropic's floor for budget_tokens; a smaller budget is a ValidationException.
MIN_THINKING_BUDGET_TOKENS = 1024
# botocore's default read timeout (60 s) is shorter than a long non-streaming answer; 120 s matches the
# OpenAI-compatible adapter. With streaming it bounds the gap between two events.
READ_TIMEOUT_S = 120.0
# Converse requires user and assistant turns to alternate: same-role neighbours become one turn, their
# texts kept apart as paragraphs.
MERGED_TURN_SEPARATOR = "\n\n"

# Converse stopReason → our finish_reason. "max_tokens" stays as it is: it is one of TRUNCATION_REASONS.
# Everything else (tool_use, guardrail_intervened, content_filtered, model_context_window_exceeded, ...)
# passes through unchanged so callers see what Bedrock said.
STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "max_tokens"}


class ThinkingStyle(Enum):
    """How a model is asked to reason before answering."""

    NONE = "none"
    BUDGET = "budget"
    ADAPTIVE = "adaptive"


@dataclass(frozen=True)
class ModelTraits:
    """What a Bedrock model accepts beyond the common Converse fields."""

    thinking: ThinkingStyle = ThinkingStyle.NONE
    # Claude Opus 4.7 and later answer 400 to any temperature, so sampling is left to the model there.
    accepts_sampling: bool = True


THINKING_FIELDS: dict[ThinkingStyle, Callable[[int], dict[str, Any]]] = {
    ThinkingStyle.NONE: lambda _budget: {},
    ThinkingStyle.BUDGET: lambda budget: {"thinking": {"type": "enabled", "budget_tokens": budget}},
    ThinkingStyle.ADAPTIVE: lambda _budget: {"thinking": {"type": "adaptive"}},
}

# Claude generations, newest first; a model takes the traits of the first generation it is not older than.
# 4.6 still accepts budgets but deprecates them; older ones (Sonnet/Opus 4.5, Haiku 4.5, ...) know no
# "adaptive"; Claude before 3.7 Sonnet does not reason at all.
CLAUDE_GENERATIONS: tuple[tuple[tuple[int, int], ModelTraits], ...] = (
    ((4, 7), ModelTraits(ThinkingStyle.ADAPTIVE, accepts_sampling=False)),
    ((4, 6), ModelTraits(ThinkingStyle.ADAPTIVE)),
    ((3, 7), ModelTraits(ThinkingStyle.BUDGET)),
)
# Families launched after adaptive thinking, without version numbers to compare ("claude-mythos-preview").
ADAPTIVE_ONLY_FAMILIES = frozenset({"mythos", "fable"})

# Anthropic ids come in two namings, "claude-3-7-sonnet-20250219" and "claude-opus-4-1-20250805", behind
# optional inference-profile prefixes ("us.", "global.") or ARNs. A minor version is one digit; the
# eight-digit date that may follow the major is not one.
_CLAUDE_ID = re.compile(
    r"anthropic\.claude-(?:"
    r"(?P<legacy_major>\d+)-(?P<legacy_minor>\d)-[a-z]+"
    r"|(?P<family>[a-z]+)(?:-(?P<major>\d+)(?:-(?P<minor>\d)(?!\d))?)?"
    r")"
)


def model_traits(model_id: str) -> ModelTraits:
    """Traits of a Bedrock model id; models that are not Claude get no thinking fields and keep sampling."""
    match = _CLAUDE_ID.search(model_id.lower())
    if match is None:
        return ModelTraits()
    if match["family"] in ADAPTIVE_ONLY_FAMILIES:
        return ModelTraits(ThinkingStyle.ADAPTIVE, accepts_sampling=False)
    major, minor = match["legacy_major"] or match["major"], match["legacy_minor"] or match["minor"]
    if major is None:
        return ModelTraits()
    version = (int(major), int(minor or 0))
    return next((traits for since, traits in CLAUDE_GENERATIONS if version >= since), ModelTraits())


def converse_messages(messages: Sequence[ChatMessage]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Our messages as Converse's ``system`` blocks and alternating ``messages``.

    Blank messages are dropped because Bedrock rejects blank text blocks; dropping an empty assistant
    answer from history leaves two user turns in a row, which are then merged.
    """
    system = [{"text": m.content} for m in messages if m.role == "system" and m.content.strip()]
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system" or not message.content.strip():
            continue
        if turns and turns[-1]["role"] == message.role:
            previous = turns[-1]["content"][0]["text"]
            turns[-1]["content"][0] = {"text": previous + MERGED_TURN_SEPARATOR + message.content}
            turns[-1]["content"].extend(_image_blocks(message))
        else:
            turns.append({"role": message.role, "content": [{"text": message.content}, *_image_blocks(message)]})
    return system, turns


# Converse's image formats by media type.
_IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}


def _image_blocks(message: ChatMessage) -> list[dict[str, Any]]:
    """Converse image blocks of the message's ``data:`` URL images (other URLs cannot be sent as bytes)."""
    blocks = []
    for url in message.images:
        decoded = data_url_bytes(url)
        if decoded is None or decoded[1] not in _IMAGE_FORMATS:
            continue
        blocks.append({"image": {"format": _IMAGE_FORMATS[decoded[1]], "source": {"bytes": decoded[0]}}})
    return blocks


def finish_reason(stop_reason: str | None) -> str | None:
    """Our finish_reason for a Converse stopReason (see :data:`STOP_REASONS`)."""
    return STOP_REASONS.get(stop_reason, stop_reason) if stop_reason else None


def stream_chunks(events: Iterable[Mapping[str, Any]], stop: threading.Event) -> Iterator[ChatChunk]:
    """Chunks from ConverseStream events, closed by the "end" chunk.

    ``stop`` is checked before each (blocking) read, so a consumer that went away costs at most one more event.
    """
    finish: str | None = None
    pending = iter(events)
    while not stop.is_set():
        event = next(pending, None)
        if event is None:
            yield ChatChunk("end", finish_reason=finish)
            return
        if "contentBlockDelta" in event:
            delta = event["contentBlockDelta"].get("delta", {})
            # Signature and redactedContent deltas carry no readable reasoning.
            reasoning = delta.get("reasoningContent", {}).get("text")
            if reasoning:
                yield ChatChunk("thinking", reasoning)
            if delta.get("text"):
                yield ChatChunk("answer", delta["text"])
        elif "messageStop" in event:
            finish = finish_reason(event["messageStop"].get("stopReason"))
        elif "metadata" in event:
            logger.debug("bedrock usage: %s", event["metadata"].get("usage"))


def parse_converse_reply(reply: Mapping[str, Any]) -> ChatResponse:
    """A Converse reply's text and reasoning blocks, each joined in order, with the mapped stop reason."""
    blocks = reply.get("output", {}).get("message", {}).get("content", [])
    answer = "".join(block["text"] for block in blocks if "text" in block)
    thinking = "".join(
        block["reasoningContent"].get("reasoningText", {}).get("text", "")
        for block in blocks
        if "reasoningContent" in block
    )
    return ChatResponse(answer, thinking, finish_reason(reply.get("stopReason")))


class BedrockCallError(ModelCallError):
    """A Bedrock call failed.

    ``code`` is the service's error code (``ThrottlingException``, ``AccessDeniedException``,
    ``modelStreamErrorException`` mid-stream) or the botocore error class.
    """

    def __init__(self, code: str, message: str) -> None:
        """The error ``code`` and the service's ``message``."""
        super().__init__(f"bedrock {code}: {message}")
        self.code = code


def call_error(exc: BaseException) -> BedrockCallError | None:
    """The :class:`ModelCallError` for a botocore failure; None for anything else (a bug stays a bug)."""
    from botocore.exceptions import BotoCoreError, ClientError

    if isinstance(exc, ClientError):  # EventStreamError, the mid-stream failure, is a ClientError too
        error = exc.response.get("Error", {})
        return BedrockCallError(error.get("Code") or type(exc).__name__, error.get("Message") or str(exc))
    if isinstance(exc, BotoCoreError):
        return BedrockCallError(type(exc).__name__, str(exc))
    return None


class BedrockChatModel:
    """Claude and other Bedrock models through Converse; ``reasoningContent`` deltas become thinking.

    boto3 is synchronous: ConverseStream is read in a worker thread that hands chunks to the event loop
    through a queue, and Converse runs in ``asyncio.to_thread``. One client serves every loop and thread
    (boto3 clients are thread-safe and hold no loop-bound state), built on first use.
    """

    def __init__(
        self,
        model_id: str,
        client: Any | None = None,
        region_name: str | None = None,
        additional_fields: dict[str, Any] | None = None,
        thinking_budget_tokens: int = MIN_THINKING_BUDGET_TOKENS,
    ) -> None:
        """A Bedrock model by id through the Converse API; ``thinking_budget_tokens`` where the model reasons."""
        self.model_id = f"bedrock:{model_id}"
        self._model_id = model_id
        self._region_name = region_name
        self._additional_fields = dict(additional_fields or {})
        self._thinking_budget = max(thinking_budget_tokens, MIN_THINKING_BUDGET_TOKENS)
        self._traits = model_traits(model_id)
        self._client_instance = client
        self._lock = threading.Lock()

    def _client(self) -> Any:
        # boto3's default session is not thread-safe to build from, and two workers may start at once.
        with self._lock:
            if self._client_instance is None:
                import boto3
                from botocore.config import Config

                self._client_instance = boto3.client(
                    "bedrock-runtime",
                    region_name=self._region_name,
                    config=Config(read_timeout=READ_TIMEOUT_S, retries={"mode": "standard"}),
                )
            return self._client_instance

    def converse_request(self, messages: Sequence[ChatMessage], options: ChatOptions) -> dict[str, Any]:
        """Keyword arguments for ``converse`` / ``converse_stream``."""
        system, turns = converse_messages(messages)
        thinking = options.thinking is True and self._traits.thinking is not ThinkingStyle.NONE
        inference: dict[str, Any] = {"maxTokens": options.max_tokens}
        fields: dict[str, Any] = {}
        if thinking:
            fields.update(THINKING_FIELDS[self._traits.thinking](self._thinking_budget))
            # Thinking tokens count against maxTokens (and a budget must stay below it): the budget is
            # reserved on top, so turning thinking on never shortens the answer the caller asked for.
            inference["maxTokens"] = options.max_tokens + self._thinking_budget
        elif self._traits.accepts_sampling:
            # Claude rejects temperature / top_p changes while thinking, so they are sent only without it.
            inference["temperature"] = options.temperature
            if options.top_p is not None:
                inference["topP"] = options.top_p
        fields.update(self._additional_fields)
        request: dict[str, Any] = {"modelId": self._model_id, "messages": turns, "inferenceConfig": inference}
        if system:
            request["system"] = system
        if fields:
            request["additionalModelRequestFields"] = fields
        return request

    async def chat_stream(self, messages: Sequence[ChatMessage], options: ChatOptions) -> AsyncIterator[ChatChunk]:
        """Stream the reply of ``converse_stream``, read in a worker thread and handed to the event loop."""
        request = self.converse_request(messages, options)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[ChatChunk | BaseException | None] = asyncio.Queue()
        stop = threading.Event()

        def post(item: ChatChunk | BaseException | None) -> None:
            # A closed loop raises RuntimeError: nobody is listening any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(queue.put_nowait, item)

        def produce() -> None:
            try:
                stream = self._client().converse_stream(**request)["stream"]
                try:
                    for chunk in stream_chunks(stream, stop):
                        post(chunk)
                finally:
                    # Closed here, never from the loop: closing a response body waits for the read in
                    # progress in this thread, which would block the event loop until the next event.
                    stream.close()
            except BaseException as exc:
                post(exc)
            finally:
                post(None)

        threading.Thread(target=produce, name="bedrock-converse-stream", daemon=True).start()
        try:
            while (item := await queue.get()) is not None:
                if isinstance(item, BaseException):
                    error = call_error(item)
                    if error is None:
                        raise item
                    raise error from item
                yield item
        finally:
            # A user stop (or any early exit) ends the HTTP stream: the worker closes it at its next read.
            stop.set()

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        """The whole reply of one ``converse`` call, run in a worker thread."""
        request = self.converse_request(messages, options)
        try:
            reply = await asyncio.to_thread(lambda: self._client().converse(**request))
        except Exception as exc:
            error = call_error(exc)
            if error is None:
                raise
            raise error from exc
        return parse_converse_reply(reply)
