"""Retrieval sets in one shape (documents, queries, graded relevance), read from ../shared/data.

- ``scifact``: BEIR SciFact test split (English scientific claims; 5,183 abstracts, 300 queries).
- ``cmrc2018-train``: CMRC 2018 train paragraphs as retrieval (Chinese; 1,500 paragraphs, 6,362 questions;
  each question's own paragraph is the relevant one).
- ``squad-train-qa``: SQuAD v1.1 train paragraphs with their questions (English; 300 paragraphs, 400
  questions), read as retrieval the same way.
Nothing is copied into the repository.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from bench.retrieval.scifact import SciFact, subset

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
NAMES = ("scifact", "cmrc2018-train", "squad-train-qa")


def _lines(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_beir(folder: Path) -> SciFact:
    corpus = _lines(folder / "corpus.jsonl")
    queries = {str(q["_id"]): q["text"] for q in _lines(folder / "queries.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    for line in (folder / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        query_id, doc_id, score = line.split("\t")
        qrels.setdefault(query_id, {})[doc_id] = int(score)
    return SciFact(corpus, {q: t for q, t in queries.items() if q in qrels}, qrels)


def load_qa(folder: Path) -> SciFact:
    corpus = _lines(folder / "corpus.jsonl")
    questions = _lines(folder / "questions.jsonl")
    return SciFact(
        corpus,
        {q["_id"]: q["question"] for q in questions},
        {q["_id"]: {q["doc_id"]: 1} for q in questions},
    )


def load(name: str, data: Path = DATA) -> SciFact:
    folder = data / name
    return load_qa(folder) if (folder / "questions.jsonl").is_file() else load_beir(folder)


def available(name: str, data: Path = DATA) -> bool:
    return (data / name / "corpus.jsonl").is_file()


def sample_queries(data: SciFact, count: int | None, seed: int = 13) -> SciFact:
    """The whole corpus with ``count`` of its queries (deterministic sample)."""
    if count is None or count >= len(data.queries):
        return data
    chosen = random.Random(seed).sample(sorted(data.queries), count)
    return SciFact(data.corpus, {q: data.queries[q] for q in chosen}, {q: data.qrels[q] for q in chosen})


__all__ = ["NAMES", "SciFact", "available", "load", "sample_queries", "subset"]
