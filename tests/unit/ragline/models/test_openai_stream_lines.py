"""How OpenAICompatibleChatModel.chat_stream cuts the model's SSE body into lines, whatever the network's chunking.

The body reaches the reader in pieces that fall anywhere: inside a multi-byte character, between the ``\\r`` and
``\\n`` of a line ending, in the middle of ``[DONE]``. Each body below is fed split at every byte position (and one
byte at a time) through httpx's own response machinery (a MockTransport: only it can fix where the pieces fall;
tests/integration/test_openai_compatible.py runs the same reader against a real server), and the chunks yielded
must be the same for every split.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import re
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Any

import httpx
import pytest

from ragline.models.base import ChatChunk, ChatMessage, ModelCallError
from ragline.models.openai_compatible import OpenAICompatibleChatModel
from ragline.types import ChatOptions

QUESTION = ChatMessage("user", "What is the answer?")


def event(delta: dict[str, str], finish: str | None = None) -> bytes:
    """One chunk's ``data:`` payload as servers send it: UTF-8 text raw, not ``\\u`` escaped (vLLM, llama.cpp)."""
    choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish}
    body = {"object": "chat.completion.chunk", "choices": [choice]}
    return b"data: " + json.dumps(body, ensure_ascii=False).encode()


class Body(httpx.AsyncByteStream):
    """A response body arriving in the given pieces; remembers whether the reader closed it."""

    def __init__(self, pieces: list[bytes], fail_after: int | None = None) -> None:
        self.pieces = pieces
        self.fail_after = fail_after
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for index, piece in enumerate(self.pieces):
            if index == self.fail_after:
                raise httpx.ReadError("connection reset by peer")
            yield piece

    async def aclose(self) -> None:
        self.closed = True


def model_serving(make_body: Callable[[], Body], headers: dict[str, str] | None = None) -> OpenAICompatibleChatModel:
    def reply(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream", **(headers or {})}, stream=make_body())

    return OpenAICompatibleChatModel("http://model.test/v1", "m", transport=httpx.MockTransport(reply))


async def read(model: OpenAICompatibleChatModel) -> list[ChatChunk]:
    return [chunk async for chunk in model.chat_stream([QUESTION], ChatOptions())]


def splits(body: bytes) -> list[list[bytes]]:
    """The body whole, in two pieces cut at every position, and one byte at a time."""
    cuts = [[body[:i], body[i:]] for i in range(1, len(body))]
    return [[body], *cuts, [body[i : i + 1] for i in range(len(body))]]


def streamed_every_way(body: bytes) -> list[list[ChatChunk]]:
    """The chunks chat_stream yields for each way of splitting ``body``."""

    async def run() -> list[list[ChatChunk]]:
        outcomes = []
        for pieces in splits(body):
            model = model_serving(partial(Body, pieces))
            outcomes.append(await read(model))
            await model.release_loop()
        return outcomes

    return asyncio.run(run())


def answer(*texts: str, finish: str | None) -> list[ChatChunk]:
    return [*(ChatChunk("answer", t) for t in texts), ChatChunk("end", finish_reason=finish)]


def assert_every_split_yields(body: bytes, expected: list[ChatChunk]) -> None:
    for index, chunks in enumerate(streamed_every_way(body)):
        assert chunks == expected, f"split #{index} of {body!r}"


def test_chinese_split_inside_a_character_comments_and_done() -> None:
    body = b"".join(
        [
            b": keep-alive\n\n",
            event({"role": "assistant", "reasoning_content": "想一想"}) + b"\n\n",
            event({"content": "你好"}) + b"\n\n",
            b": keep-alive\n\n",
            event({"content": "，世界"}, finish="stop") + b"\n\n",
            b"data: [DONE]\n\n",
            event({"content": "after DONE: never read"}) + b"\n\n",
        ]
    )
    expected = [ChatChunk("thinking", "想一想"), *answer("你好", "，世界", finish="stop")]
    assert_every_split_yields(body, expected)


def test_crlf_line_endings_split_between_cr_and_lf() -> None:
    body = event({"content": "一"}) + b"\r\n\r\n" + event({"content": "二"}, "length") + b"\r\n\r\ndata: [DONE]\r\n\r\n"
    assert_every_split_yields(body, answer("一", "二", finish="length"))


def test_lone_cr_line_endings_as_the_sse_spec_allows() -> None:
    body = (
        b": ping\r\r" + event({"content": "一"}) + b"\r\r" + event({"content": "二"}, "stop") + b"\r\rdata: [DONE]\r\r"
    )
    assert_every_split_yields(body, answer("一", "二", finish="stop"))


def test_mixed_line_endings_and_other_fields() -> None:
    body = b"id: 1\r\n" + event({"content": "a"}) + b"\r\revent: x\n" + event({"content": "b"}) + b"\n\r\ndata: [DONE]"
    assert_every_split_yields(body, answer("a", "b", finish=None))


def test_a_last_line_without_newline_and_no_done_is_still_the_answer() -> None:
    body = event({"content": "第一"}) + b"\n\n" + event({"content": "第二"})
    assert_every_split_yields(body, answer("第一", "第二", finish=None))


def test_unicode_line_separators_inside_the_text_are_text() -> None:
    """U+2028, U+2029 and U+0085 are legal raw in JSON strings, and a model may emit them.

    httpx's ``aiter_lines`` (the reader before) splits lines as ``str.splitlines`` does, on these too, so such a
    token cut its ``data:`` line in two and the turn failed with "malformed stream chunk"; the SSE spec ends lines
    only at CRLF, LF or CR.
    """
    body = event({"content": "line\u2028sep\u2029para\x85nel"}) + b"\n\ndata: [DONE]\n\n"
    assert_every_split_yields(body, answer("line\u2028sep\u2029para\x85nel", finish=None))


def test_an_invalid_utf8_byte_is_replaced_not_fatal() -> None:
    body = b'data: {"choices":[{"delta":{"content":"a\xffb"}}]}\n\ndata: [DONE]\n\n'
    assert_every_split_yields(body, answer("a\ufffdb", finish=None))


def test_a_malformed_data_line_is_a_model_call_error() -> None:
    model = model_serving(lambda: Body([event({"content": "ok"}) + b"\n\n", b"data: {not json\n\n"]))
    with pytest.raises(ModelCallError, match=re.escape("malformed stream chunk: {not json")):
        asyncio.run(read(model))


def test_gzip_content_encoding_is_decoded() -> None:
    whole = gzip.compress(event({"content": "压缩"}, "stop") + b"\n\ndata: [DONE]\n\n")
    pieces = [whole[i : i + 7] for i in range(0, len(whole), 7)]
    model = model_serving(lambda: Body(pieces), {"content-encoding": "gzip"})
    assert asyncio.run(read(model)) == answer("压缩", finish="stop")


def test_a_transport_error_mid_stream_is_a_stream_cut_after_the_text_so_far() -> None:
    model = model_serving(lambda: Body([event({"content": "so far"}) + b"\n\n", b"never"], fail_after=1))

    async def run() -> tuple[list[ChatChunk], ModelCallError | None]:
        chunks: list[ChatChunk] = []
        try:
            async for chunk in model.chat_stream([QUESTION], ChatOptions()):
                chunks.append(chunk)
        except ModelCallError as exc:
            return chunks, exc
        return chunks, None

    chunks, error = asyncio.run(run())
    assert chunks == [ChatChunk("answer", "so far")]
    assert error is not None
    assert str(error) == "stream cut: ReadError: connection reset by peer"


def test_a_reader_that_stops_early_closes_the_http_stream() -> None:
    bodies: list[Body] = []

    def make_body() -> Body:
        bodies.append(Body([event({"content": "one"}) + b"\n\n", event({"content": "two"}) + b"\n\n"]))
        return bodies[-1]

    model = model_serving(make_body)

    async def first_only() -> ChatChunk:
        stream = model.chat_stream([QUESTION], ChatOptions())
        first = await anext(stream)
        assert not bodies[0].closed
        await stream.aclose()  # type: ignore[attr-defined]
        return first

    assert asyncio.run(first_only()) == ChatChunk("answer", "one")
    assert bodies[0].closed


class BodyHeldOpen(Body):
    """Sends its pieces, then neither sends nor ends (a proxy holding the body open after [DONE])."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece
        await asyncio.Event().wait()


class EndlessBody(Body):
    """Sends its pieces, then goes on sending comment lines forever."""

    def __init__(self, pieces: list[bytes]) -> None:
        super().__init__(pieces)
        self.sent_after = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece
        while True:
            self.sent_after += 1
            yield b": still here\n" * 100


def test_what_follows_done_is_read_to_the_body_end_within_bounds() -> None:
    """After [DONE] the body is read to its end, so its connection serves the next answer; a body held open or
    endless is given up on (its connection closed) and the answer still ends."""
    pieces = [event({"content": "whole"}, "stop") + b"\n\ndata: [DONE]\n\n"]
    expected = answer("whole", finish="stop")
    for make in (Body, BodyHeldOpen, EndlessBody):
        body = make(list(pieces))
        model = model_serving(lambda body=body: body)

        async def run(model: OpenAICompatibleChatModel = model) -> list[ChatChunk]:
            # A backstop, not a measure: without a bound the held-open body never ends.
            return await asyncio.wait_for(read(model), timeout=30)

        assert asyncio.run(run()) == expected, make.__name__
        assert body.closed, make.__name__
        if isinstance(body, EndlessBody):
            assert 0 < body.sent_after * 1300 <= 64 * 1024 + 1300  # read up to the limit, not forever
