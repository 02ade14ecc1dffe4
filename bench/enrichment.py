"""Ingestion enrichment with a scripted chat model: questions per chunk and time per document.

The chat model is scripted (no real endpoint here): it answers the question prompt with three questions made
from the passage's words after ``--latency-ms`` (a hosted model's typical reply time), the summary and
description prompts with one sentence. What is measured is ragline's side: the model calls in flight per
document (``ingestion.enrichment.concurrency``), storing the questions, embedding them with the packaged
MiniLM and writing their vectors. Printed side by side for each latency and for concurrency 1 and 4:
documents, passages, questions per passage, model calls, time per document (p50 / max) and per passage.

No retrieval effect is claimed: questions from a scripted model say nothing about a real one's.

    .venv/bin/python bench/enrichment.py [--documents 20] [--latency-ms 0 200]

The documents are SciFact abstracts read from ../shared/data/scifact, never copied into the repository.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "scifact"

from ragline.config import Settings, load_config  # noqa: E402
from ragline.container import Container, build_models  # noqa: E402
from ragline.ingest.enrichment import DocumentEnricher  # noqa: E402
from ragline.models.base import ChatChunk, ChatMessage, ChatResponse  # noqa: E402
from ragline.types import ChatOptions  # noqa: E402


class TimedScriptedModel:
    """Replies after ``latency_s``: three questions from the passage's words, or one sentence."""

    model_id = "bench-scripted"

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.calls = 0

    async def chat(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        self.calls += 1
        await asyncio.sleep(self.latency_s)
        prompt = messages[-1].content
        if "questions that it answers directly" in prompt:
            words = prompt.split("Passage:", 1)[-1].split()
            return ChatResponse(
                "\n".join(f"{i}. What about {' '.join(words[i * 4 : i * 4 + 4])}?" for i in range(1, 4))
            )
        return ChatResponse("A scripted sentence about these documents.")

    async def chat_stream(self, messages: Sequence[ChatMessage], options: ChatOptions) -> AsyncIterator[ChatChunk]:
        reply = await self.chat(messages, options)
        yield ChatChunk("answer", reply.content)
        yield ChatChunk("end", finish_reason="stop")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def abstracts(data: Path, count: int) -> list[tuple[str, str]]:
    rows = [json.loads(line) for line in (data / "corpus.jsonl").read_text().splitlines() if line.strip()]
    return [(row["title"][:200] or "untitled", row["text"]) for row in rows[:count]]


def run(documents: list[tuple[str, str]], latency_s: float, concurrency: int, models: object) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        container = Container.embedded(Settings(data_dir=Path(tmp)), models=models)  # type: ignore[arg-type]
        try:
            chat = TimedScriptedModel(latency_s)
            container.models.add_chat_model(chat.model_id, lambda: chat, default=True)
            config = container.config.ingestion.enrichment.model_copy(update={"concurrency": concurrency})
            enrichment = DocumentEnricher(
                container.knowledge, container.engine, container.models, container.enricher, config
            )
            tenant, _ = container.tenants.create("bench")
            kb = container.knowledge.create_knowledge_base(tenant.id, "scifact", container.models.default_embedder_id)
            stored = [container.ingest.ingest_text(kb, content=text, title=title).document for title, text in documents]
            times: list[float] = []
            passages = questions = 0
            for document in stored:
                kb_now = container.knowledge.knowledge_base(tenant.id, kb.id) or kb
                started = time.perf_counter()
                result = asyncio.run(enrichment.enrich(kb_now, document))
                times.append(time.perf_counter() - started)
                passages += result.chunks
                questions += result.questions
            return {
                "documents": len(stored),
                "passages": passages,
                "questions_per_passage": questions / max(1, passages),
                "calls": chat.calls,
                "p50_ms": statistics.median(times) * 1000,
                "max_ms": max(times) * 1000,
                "per_passage_ms": sum(times) * 1000 / max(1, passages),
            }
        finally:
            container.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--documents", type=int, default=20)
    parser.add_argument("--latency-ms", type=float, nargs="+", default=[0.0, 200.0])
    args = parser.parse_args()
    config, _ = load_config()
    models = build_models(Settings(), config)
    # One long document too: many passages, where concurrency matters.
    docs = abstracts(args.data, args.documents)
    long_doc = ("Long: SciFact abstracts", "\n\n".join(text for _, text in abstracts(args.data, 40)))
    print(f"load before: {load()}")
    header = f"{'latency':>8} {'conc':>4} {'docs':>4} {'passages':>8} {'q/passage':>9} {'calls':>5}"
    print(header + f" {'p50 ms/doc':>10} {'max ms/doc':>10} {'ms/passage':>10}")
    for latency in args.latency_ms:
        for concurrency in (1, 4):
            for label, batch in (("abstracts", docs), ("long", [long_doc])):
                figures = run(batch, latency / 1000, concurrency, models)
                print(
                    f"{latency:>6.0f}ms {concurrency:>4} {figures['documents']:>4.0f} {figures['passages']:>8.0f}"
                    f" {figures['questions_per_passage']:>9.2f} {figures['calls']:>5.0f} {figures['p50_ms']:>10.1f}"
                    f" {figures['max_ms']:>10.1f} {figures['per_passage_ms']:>10.1f}  {label}"
                )
    print(f"load after: {load()}")


if __name__ == "__main__":
    main()
