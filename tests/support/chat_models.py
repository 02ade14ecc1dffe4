"""The one scripted chat model of the in-process tests (the HTTP one, for whole runs, is scripted_model.py).

It replies from a script — ``replies`` taken in order ("" once they run out), or ``reply``: one text, or a
function of the prompt, for every call — and an exception in the script is raised instead. It records every
call, how many ran at once, and streams its reply in ``pieces``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from ragline.models.base import ChatChunk, ChatMessage, ChatOptions, ChatResponse
from ragline.models.registry import ModelRegistry


class ScriptedChatModel:
    def __init__(
        self,
        model_id: str = "scripted",
        *replies: object,
        reply: Callable[[str], object] | object | None = None,
        finish_reason: str = "stop",
        delay_s: float = 0.0,
        pieces: int = 1,
        streams_only: bool = False,
    ) -> None:
        self.model_id = model_id
        self.replies = list(replies)
        self._reply = reply
        self.finish_reason = finish_reason
        self._delay_s = delay_s
        self._pieces = max(1, pieces)
        self._streams_only = streams_only
        self.calls: list[tuple[list[ChatMessage], ChatOptions]] = []
        self.in_flight = 0
        self.peak = 0

    # What it was sent ------------------------------------------------------------------------------------
    @property
    def prompts(self) -> list[str]:
        """The last message of every call."""
        return [messages[-1].content for messages, _ in self.calls]

    @property
    def options(self) -> list[ChatOptions]:
        return [options for _, options in self.calls]

    @property
    def messages(self) -> list[ChatMessage]:
        """The messages of its only call."""
        assert len(self.calls) == 1, self.calls
        return self.calls[0][0]

    @property
    def only_options(self) -> ChatOptions:
        """The options of its only call."""
        assert len(self.calls) == 1, self.calls
        return self.calls[0][1]

    # The model port --------------------------------------------------------------------------------------
    async def _answer(self, messages: Sequence[ChatMessage], options: ChatOptions) -> str:
        self.calls.append((list(messages), options))
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            if self._delay_s:
                await asyncio.sleep(self._delay_s)
            if self._reply is not None:
                reply: Any = self._reply(messages[-1].content) if callable(self._reply) else self._reply
            else:
                reply = self.replies.pop(0) if self.replies else ""
        finally:
            self.in_flight -= 1
        if isinstance(reply, BaseException):
            raise reply
        return str(reply)

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        if self._streams_only:
            raise AssertionError("this caller must assemble the stream")
        return ChatResponse(await self._answer(messages, options), finish_reason=self.finish_reason)

    async def chat_stream(self, messages: Sequence[ChatMessage], options: ChatOptions) -> AsyncIterator[ChatChunk]:
        text = await self._answer(messages, options)
        size = -(-len(text) // self._pieces) if text else 0
        for start in range(0, len(text), size or 1):
            yield ChatChunk("answer", text[start : start + size])
        yield ChatChunk("end", finish_reason=self.finish_reason)


def registry_with(*models: ScriptedChatModel, default: str | None = None) -> ModelRegistry:
    """A registry of ``models``; the default chat model is ``default`` (by id), else the last one given."""
    registry = ModelRegistry()
    for model in models:
        is_default = model.model_id == default if default is not None else True
        registry.add_chat_model(model.model_id, lambda model=model: model, default=is_default)
    return registry
