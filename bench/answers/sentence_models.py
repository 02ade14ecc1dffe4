"""The extractive answerer's sentence model, compared on recorded answerer inputs (``qa.py --record``).

For each language, each candidate sentence model re-ranks the answerer's candidate sentences on the same recorded
inputs (the passages retrieval gave each question), with its constants tuned on one half of the questions
(coordinate search over the relevance bars and the weight of the model's cosine, starting from the constants the
library has for it) and reported on the other half (split by paragraph, as ``qa.py --part``). Beside each, the
ceiling of the model's ranking: how often the best-ranked sentence holds a gold answer, and the best two.

    .venv/bin/python bench/answers/qa.py --record /tmp/qa.jsonl      # once: the inputs, through the real path
    .venv/bin/python bench/answers/sentence_models.py /tmp/qa.jsonl  # every model, tuned and held out

Goals (issue 28): contains gold ≥ 0.85, token F1 ≥ 0.25, mean ≤ 300 characters, off-topic "not found" ≥ 0.9.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.answers.qa import Outcome, Question, Summary, load, normalize, part, summarize, visible_answer  # noqa: E402

MINILM = "local:all-MiniLM-L6-v2-int8"
E5_MULTILINGUAL = "local:multilingual-e5-small-q4"
BGE_EN = "local:bge-small-en-v1.5-q"
BGE_ZH = "local:bge-small-zh-v1.5-q"
E5_EN = "local:e5-small-v2-q"
CANDIDATES = {"en": [MINILM, BGE_EN, E5_EN], "zh": [E5_MULTILINGUAL, BGE_ZH]}

# The constants searched, one at a time, each over its grid (two rounds).
GRID: dict[str, list[float]] = {
    "similarity": [0.5, 1.0, 2.0, 3.0, 4.0, 6.0],
    "min_similarity": [round(0.30 + 0.05 * i, 2) for i in range(14)] + [2.0],
    "agree_similarity": [-1.0] + [round(0.10 + 0.05 * i, 2) for i in range(18)],
    "agree_coverage": [0.0, 0.1, 0.25, 0.4],
    "min_coverage": [0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6],
    "companion": [0.5, 0.6, 0.7, 0.8, 2.0],
}
OFF_TOPIC_GOAL = 0.9
MEAN_CHARS_GOAL = 300.0


@dataclasses.dataclass
class Item:
    question: Question
    messages: list[Any]
    reference_docs: list[str]


def read_recording(path: Path, lang: str) -> list[Item]:
    """The recorded inputs of one language's questions (on-topic and off-topic)."""
    from ragline.models.base import ChatMessage

    data = load(lang)
    by_text = {q.text: q for q in [*data.questions, *data.off_topic]}
    items = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        question = by_text.get(record.get("question", ""))
        if question is not None:
            messages = [ChatMessage(m["role"], m["content"]) for m in record["messages"]]
            items.append(Item(question, messages, record["reference_docs"]))
    return items


def halves(items: list[Item], lang: str) -> dict[str, list[Item]]:
    """The tuning and held-out halves, as qa.py --part splits them."""
    data = load(lang)
    out = {}
    for which in ("tune", "held-out"):
        half = part(data, which)
        ids = {q.id for q in [*half.questions, *half.off_topic]}
        out[which] = [i for i in items if i.question.id in ids]
    return out


def memoise_candidates() -> None:
    """Sentence splitting and term sets once per set of passages: ``score`` only sets attributes on copies."""
    from ragline.answering import selection

    original = selection.candidates
    cache: dict[tuple[Any, ...], list[Any]] = {}

    def cached(sources: Sequence[Any]) -> list[Any]:
        key = tuple((s.handle, s.content, s.context) for s in sources)
        if key not in cache:
            cache[key] = original(sources)
        return [dataclasses.replace(c) for c in cache[key]]

    selection.candidates = cached  # type: ignore[assignment]


def cached_similarity(embedder: Any) -> Callable[[str, list[str]], list[float]]:
    """The model's cosine of a question and sentences, each vector computed once."""
    import numpy as np

    vectors: dict[str, Any] = {}

    def similarity(question: str, sentences: list[str]) -> list[float]:
        missing = [s for s in dict.fromkeys(sentences) if s not in vectors]
        if missing:
            for sentence, vector in zip(missing, embedder.embed_documents(missing), strict=True):
                vectors[sentence] = vector
        query = embedder.embed_query(question)
        return [float(np.dot(vectors[s], query)) for s in sentences]

    return similarity


def run(items: list[Item], lang: str, weights: Any, similarity: Any, label: str) -> tuple[Summary, float, float]:
    """The answerer's figures on ``items`` with these constants, and the ceiling (best sentence, best two)."""
    from ragline.answering.selection import select
    from ragline.models.extractive import _question, _sources, compose

    answered: list[Outcome] = []
    off: list[Outcome] = []
    top1 = top2 = 0
    for item in items:
        question = _question(item.messages)
        selection = select(question, _sources(item.messages), weights=weights, similarity=similarity)
        text = compose(question, selection, cite=False)
        outcome = Outcome(item.question, visible_answer(text), item.reference_docs, False, 0.0)
        (answered if item.question.doc_id else off).append(outcome)
        if item.question.doc_id:
            golds = [normalize(g, lang) for g in item.question.answers if normalize(g, lang)]
            held = [any(g in normalize(c.text, lang) for g in golds) for c in selection.ranked[:2]]
            top1 += bool(held[:1] and held[0])
            top2 += any(held)
    count = max(1, len(answered))
    return summarize(lang, label, answered, off), top1 / count, top2 / count


def objective(summary: Summary) -> float:
    """Contains gold plus F1, where off-topic questions stay "not found" and answers stay short; else nothing."""
    if summary.off_topic_not_found < OFF_TOPIC_GOAL or summary.mean_chars > MEAN_CHARS_GOAL:
        return -1.0 + summary.off_topic_not_found
    return summary.contains_gold + summary.f1


def tune(items: list[Item], lang: str, start: Any, similarity: Any, rounds: int = 2) -> Any:
    """Coordinate search over GRID from ``start``: each constant in turn set to its best value on ``items``."""
    best = start
    best_value = objective(run(items, lang, best, similarity, "")[0])
    for _ in range(rounds):
        for name, values in GRID.items():
            for value in values:
                trial = dataclasses.replace(best, **{name: value})
                figure = objective(run(items, lang, trial, similarity, "")[0])
                if figure > best_value + 1e-9:
                    best, best_value = trial, figure
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("recording", type=Path, help="a qa.py --record file")
    parser.add_argument("--lang", choices=["en", "zh", "both"], default="both")
    parser.add_argument("--models", nargs="*", default=[], help="only these sentence models")
    args = parser.parse_args(argv)

    from ragline.config import Settings, load_config
    from ragline.container import build_models
    from ragline.models.extractive import sentence_weights

    memoise_candidates()
    config, _ = load_config()
    models = build_models(Settings(), config)
    print(f"cpu {os.cpu_count()}; load average at start: {os.getloadavg()[0]:.2f}")
    rows: list[tuple[Summary, float, float]] = []
    chosen: list[str] = []
    for lang in ["en", "zh"] if args.lang == "both" else [args.lang]:
        split = halves(read_recording(args.recording, lang), lang)
        for model_id in CANDIDATES[lang]:
            if args.models and model_id not in args.models:
                continue
            if not models.has_embedder(model_id):
                print(f"{lang}: {model_id} is not installed here (make install MODELS=all); skipped")
                continue
            similarity = cached_similarity(models.embedder(model_id))
            start = sentence_weights(model_id, lang)
            started = time.perf_counter()
            as_shipped = run(split["held-out"], lang, start, similarity, f"{model_id}, library's constants")
            tuned = tune(split["tune"], lang, start, similarity)
            name = model_id.removeprefix("local:")
            rows.append(run(split["tune"], lang, tuned, similarity, f"{name}, tuned (tuning half)"))
            rows.append(as_shipped)
            rows.append(run(split["held-out"], lang, tuned, similarity, f"{name}, tuned (held-out half)"))
            changed = {
                f.name: getattr(tuned, f.name)
                for f in dataclasses.fields(tuned)
                if getattr(tuned, f.name) != getattr(start, f.name)
            }
            chosen.append(f"{lang} {name}: {changed or 'unchanged'} ({time.perf_counter() - started:.0f} s)")
    print(
        "| language | sentence model | questions | contains gold | token F1 | mean chars | off-topic not found"
        " | best sentence holds gold | best two |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for s, top1, top2 in rows:
        print(
            f"| {s.lang} | {s.answerer} | {s.questions} | {s.contains_gold:.3f} | {s.f1:.3f} | {s.mean_chars:.0f}"
            f" | {s.off_topic_not_found:.3f} ({s.off_topic}) | {top1:.3f} | {top2:.3f} |"
        )
    print("\nConstants tuned (changed from the library's):")
    for line in chosen:
        print(f"- {line}")
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
