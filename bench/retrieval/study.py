"""Offline study of ranking rules on the real indexes: every query's full vector and BM25 score arrays are
computed once from an ingested knowledge base (the benchmark's cache), then fusion, thresholds, BM25
parameters, document aggregation and feedback rules are replayed in numpy, many per second.

    .venv/bin/python bench/retrieval/study.py --sets scifact squad-train-qa cmrc2018-train

It replays what hybrid search does (pool of 500 per list, the thresholds, fusion, 200 chunks kept, documents
ranked by their best chunk); the "replay: defaults" row must equal benchmark.py's "hybrid, default fusion".
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.retrieval.benchmark import PLAN, select, workdir_for  # noqa: E402
from bench.retrieval.scifact import build  # noqa: E402

POOL, KEEP = 500, 200


@dataclass
class Bundle:
    name: str
    queries: list[str]
    qrels: list[dict[str, int]]
    doc_of: np.ndarray  # chunk position → document code
    doc_names: list[str]  # document code → source id
    matrix: np.ndarray  # chunk vectors
    qvecs: np.ndarray  # query vectors
    rowids: np.ndarray
    keyword: Callable[[float, float, float], list[np.ndarray]] = field(repr=False)  # (k1, b, title) → scores
    idf_sums: list[float] = field(default_factory=list)  # Σ IDF of each query's terms (BM25's bound / (k1 + 1))
    last: list[float] = field(default_factory=list, repr=False)
    unread: bool = False  # the embedding model does not read the queries' language (adaptive weight applies)
    cache: dict[tuple[float, float, float], list[np.ndarray]] = field(default_factory=dict, repr=False)

    def bm25(self, k1: float = 1.2, b: float = 0.75, title: float = 1.0) -> list[np.ndarray]:
        key = (k1, b, title)
        if key not in self.cache:
            self.cache[key] = self.keyword(k1, b, title)
        return self.cache[key]


def load_bundle(name: str, model: str, base: Path, queries: int = 0, extra_docs: int = -1) -> tuple[Bundle, Any]:
    from ragline.retrieval.keyword_index import KeywordIndex

    data = select(name, queries, extra_docs)
    workdir = workdir_for(name, data, model, base)
    container, _tenant, kb, sources = build(data, workdir, name=name, model=model, progress=True)
    engine = container.engine
    rowids, knowledge_ids, matrix = engine._block(kb.id, kb.embedding_model).view()
    doc_names = sorted(set(sources.get(k, "") for k in knowledge_ids))
    code = {d: i for i, d in enumerate(doc_names)}
    doc_of = np.array([code[sources.get(k, "")] for k in knowledge_ids])
    position = {int(r): i for i, r in enumerate(rowids)}
    qids = list(data.queries)
    texts = [data.queries[q] for q in qids]
    cache = workdir / "query_vectors.npy"
    if cache.is_file() and len(np.load(cache)) == len(texts):
        qvecs = np.load(cache)
    else:
        embedder = container.models.embedder(kb.embedding_model)
        qvecs = np.stack([embedder.embed_query(t) for t in texts]).astype(np.float32)
        np.save(cache, qvecs)
    terms = [engine.informative_terms(t) for t in texts]

    def idf_sum(words: list[str]) -> float:
        index = engine._keywords
        rows = index.term_rows(words) if words else None
        if not rows:
            return 1.0
        total = index._state.rows
        out = 0.0
        for hits in rows.values():
            if hits:
                idf = math.log((total - hits + 0.5) / (hits + 0.5))
                out += idf if idf > 0 else 1e-6
        return out or 1.0

    idf_sums = [idf_sum(words) for words in terms]

    def keyword(k1: float, b: float, title: float) -> list[np.ndarray]:
        index = KeywordIndex(container.db, (1.0, title), k1=k1, b=b)
        out = []
        for words in terms:
            scores = np.zeros(len(rowids))
            ranking = index.rank(words, [kb.id]) if words else None
            if ranking is not None:
                pairs = ranking.top(len(ranking))
            elif words:
                pairs = engine._fts_ranking(words, [kb.id], (), 100_000)
            else:
                pairs = []
            for score, rowid in pairs:
                if rowid in position:
                    scores[position[rowid]] = score
            out.append(scores)
        return out

    bundle = Bundle(
        name=name,
        queries=texts,
        qrels=[data.qrels[q] for q in qids],
        doc_of=doc_of,
        doc_names=doc_names,
        matrix=np.asarray(matrix, dtype=np.float32),
        qvecs=qvecs,
        rowids=rowids,
        keyword=keyword,
        idf_sums=idf_sums,
        unread=kb.embedding_model in container.config.retrieval.model_languages and name.startswith("cmrc"),
    )
    return bundle, container


def ndcg(ranked: list[str], rel: dict[str, int], k: int = 10) -> float:
    dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rel.values(), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall(ranked: list[str], rel: dict[str, int], k: int = 100) -> float:
    hits = {d for d in ranked[:k] if rel.get(d, 0) > 0}
    return len(hits) / len([d for d, r in rel.items() if r > 0])


def top(scores: np.ndarray, count: int, mask: np.ndarray | None = None) -> np.ndarray:
    """Positions of the ``count`` best scores (where ``mask``), best first."""
    candidates = np.flatnonzero(mask) if mask is not None else np.arange(len(scores))
    if len(candidates) > count:
        part = np.argpartition(-scores[candidates], count - 1)[:count]
        candidates = candidates[part]
    return candidates[np.argsort(-scores[candidates], kind="stable")]


def normalise(values: np.ndarray, how: str) -> np.ndarray:
    if not len(values):
        return values
    if how == "max":
        return values / (values.max() or 1.0)
    if how == "minmax":
        span = values.max() - values.min()
        return (values - values.min()) / span if span > 0 else np.ones_like(values)
    if how == "z":
        sd = values.std()
        return (values - values.mean()) / sd if sd > 0 else np.zeros_like(values)
    raise ValueError(how)


@dataclass(frozen=True)
class Rule:
    k1: float = 1.2
    b: float = 0.75
    title: float = 1.0
    alpha: float = 0.5  # vector weight in score fusion
    norm: str = "max"
    fusion: str = "score"  # score | rrf
    rrf_k: int = 60
    vthr: float = 0.2
    kthr: float = 0.3
    spread: float = 0.0  # a chunk also gets this share of its document's best score in each list
    prf_beta: float = 0.0  # dense Rocchio: query + beta * mean of the top prf_m fused hits' vectors
    prf_m: int = 3
    retrievers: str = "hybrid"
    unread_alpha: float = 0.0  # vector weight when the model does not read the query's language
    vfloor: float = 0.0  # score fusion: vector scores mapped (s - vfloor) / (best - vfloor)
    sibling: float = 0.0  # a chunk's fused score + sibling × the best other chunk of its document in the list
    conf: str = ""  # per-query weights from each list's score distribution: "gap10", "gap3", "z"
    docmean: float = 0.0  # vector score = (1 - docmean) · own cosine + docmean · cosine with the document's mean


def lists(v: np.ndarray, k: np.ndarray, rule: Rule) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(positions, scores) of the vector and keyword lists, as hybrid search recalls them."""
    vi = top(v, POOL)
    vi = vi[v[vi] >= rule.vthr]
    ki = top(k, POOL, k > 0)
    if len(ki):
        kn = k[ki] / k[ki[0]]
        ki = ki[kn >= rule.kthr]
    return vi, v[vi], ki, k[ki]


def spread(pos: np.ndarray, scores: np.ndarray, doc_of: np.ndarray, share: float) -> tuple[np.ndarray, np.ndarray]:
    """Each chunk of the list's documents gets max(own score, share × its document's best score in the list)."""
    if share <= 0 or not len(pos):
        return pos, scores
    docs = doc_of[pos]
    best: dict[int, float] = {}
    for d, s in zip(docs.tolist(), scores.tolist(), strict=True):
        if s > best.get(d, -np.inf):
            best[d] = s
    return pos, np.array([max(s, share * best[d]) for d, s in zip(docs.tolist(), scores.tolist(), strict=True)])


def fuse(
    vi,
    vs,
    ki,
    ks,
    rule: Rule,
    n: int,
    doc_of: np.ndarray,
    bound: float = 1.0,
    unread: bool = False,
    background: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    if rule.retrievers == "vector":
        return vi, vs
    if rule.retrievers == "keyword":
        return ki, ks
    if not len(vi) or not len(ki):
        return (vi, vs) if len(vi) else (ki, ks)
    fused = np.zeros(n)
    present = np.zeros(n, dtype=bool)
    if rule.fusion == "rrf":
        wv, wk = (rule.unread_alpha if unread else rule.alpha), 1 - rule.alpha
        fused[vi] += wv / (rule.rrf_k + np.arange(1, len(vi) + 1))
        fused[ki] += wk / (rule.rrf_k + np.arange(1, len(ki) + 1))
    else:
        if rule.norm == "tmm":
            vn, kn = vs, ks / (bound * (rule.k1 + 1))
        elif rule.norm == "tmm-k":  # keyword list by its bound, vector list by its best
            vn, kn = normalise(vs, "max"), ks / (bound * (rule.k1 + 1))
        elif rule.norm == "tmm-v":  # vector list raw, keyword list by its best
            vn, kn = vs, normalise(ks, "max")
        elif (
            rule.norm == "vbg"
        ):  # vector list from the knowledge base's mean similarity to its best, keyword by its best
            vn = np.clip((vs - background) / ((vs.max() - background) or 1.0), 0, None)
            kn = normalise(ks, "max")
        elif rule.norm == "vminmax":  # vector list from its worst to its best, keyword list by its best
            vn, kn = normalise(vs, "minmax"), normalise(ks, "max")
        elif rule.norm == "vz":  # vector list as z-scores mapped onto [0, 1] by the list's best, keyword by its best
            z = normalise(vs, "z")
            vn, kn = np.clip(z / (z.max() or 1.0), 0, None), normalise(ks, "max")
        else:
            vn = normalise(vs, rule.norm) if rule.vfloor <= 0 else (vs - rule.vfloor) / (vs.max() - rule.vfloor)
            kn = normalise(ks, rule.norm)
        vi2, vs2 = spread(vi, vn, doc_of, rule.spread)
        ki2, ks2 = spread(ki, kn, doc_of, rule.spread)
        alpha = rule.alpha
        if rule.conf:
            cv, ck = confidence(vs, rule.conf), confidence(ks, rule.conf)
            alpha = cv / (cv + ck) if cv + ck > 0 else 0.5
            alpha = 0.5 * alpha + 0.5 * rule.alpha if rule.conf.endswith("+") else alpha
        if unread:
            alpha = rule.unread_alpha
        rule = Rule(**{**rule.__dict__, "alpha": alpha})
        if rule.norm == "z":
            # a hit absent from a list scores that list's worst
            base_v, base_k = vs2.min(), ks2.min()
            fused[:] = 0
            fv = np.full(n, base_v)
            fv[vi2] = vs2
            fk = np.full(n, base_k)
            fk[ki2] = ks2
            fused = rule.alpha * fv + (1 - rule.alpha) * fk
        else:
            fused[vi2] += rule.alpha * vs2
            fused[ki2] += (1 - rule.alpha) * ks2
    present[vi] = True
    present[ki] = True
    if rule.sibling > 0:
        cand = np.flatnonzero(present)
        firsts: dict[int, float] = {}
        seconds: dict[int, float] = {}
        for c, sc in sorted(zip(cand.tolist(), fused[cand].tolist(), strict=True), key=lambda p: -p[1]):
            d = int(doc_of[c])
            if d not in firsts:
                firsts[d] = sc
            elif d not in seconds:
                seconds[d] = sc
        bonus = np.zeros(n)
        for c in cand.tolist():
            d = int(doc_of[c])
            other = seconds.get(d, 0.0) if fused[c] >= firsts[d] else firsts[d]
            bonus[c] = rule.sibling * other
        fused = fused + bonus
    order = top(fused, KEEP, present)
    return order, fused[order]


def confidence(scores: np.ndarray, how: str) -> float:
    """How far a list's best stands above the rest of its head (scores best first)."""
    how = how.rstrip("+")
    s = scores / (scores[0] or 1.0)
    if how == "gap10":
        return float(s[0] - s[min(9, len(s) - 1)])
    if how == "gap3":
        return float(s[0] - s[min(2, len(s) - 1)])
    if how == "z":
        head = s[:100]
        return float((head[0] - head.mean()) / (head.std() or 1.0))
    raise ValueError(how)


def rank_docs(order: np.ndarray, doc_of: np.ndarray, names: list[str]) -> list[str]:
    seen: dict[int, None] = {}
    for d in doc_of[order].tolist():
        seen.setdefault(d, None)
    return [names[d] for d in seen]


def per_query(bundle: Bundle, rule: Rule) -> list[float]:
    """nDCG@10 of each query."""
    kws = bundle.bm25(rule.k1, rule.b, rule.title)
    n = len(bundle.doc_of)
    out = []
    for i, rel in enumerate(bundle.qrels):
        vi, vs, ki, ks = lists(bundle.matrix @ bundle.qvecs[i], kws[i], rule)
        order, _ = fuse(vi, vs, ki, ks, rule, n, bundle.doc_of, bundle.idf_sums[i], bundle.unread)
        out.append(ndcg(rank_docs(order, bundle.doc_of, bundle.doc_names), rel))
    return out


def oracle(bundle: Bundle) -> float:
    """nDCG@10 if each query had its best vector weight (0, 0.1 ... 1): the head-room of per-query weights."""
    runs = [per_query(bundle, Rule(alpha=a)) for a in np.linspace(0, 1, 11)]
    return statistics.fmean(max(r[i] for r in runs) for i in range(len(bundle.qrels)))


def evaluate(bundle: Bundle, rule: Rule) -> tuple[float, float]:
    kws = bundle.bm25(rule.k1, rule.b, rule.title)
    n = len(bundle.doc_of)
    nd, rc = [], []
    docvecs = None
    if rule.docmean > 0:
        docvecs = np.zeros((len(bundle.doc_names), bundle.matrix.shape[1]), dtype=np.float32)
        np.add.at(docvecs, bundle.doc_of, bundle.matrix)
        docvecs /= np.linalg.norm(docvecs, axis=1, keepdims=True)
    for i, rel in enumerate(bundle.qrels):
        q = bundle.qvecs[i]
        v = bundle.matrix @ q
        if docvecs is not None:
            v = (1 - rule.docmean) * v + rule.docmean * (docvecs @ q)[bundle.doc_of]
        vi, vs, ki, ks = lists(v, kws[i], rule)
        order, _ = fuse(vi, vs, ki, ks, rule, n, bundle.doc_of, bundle.idf_sums[i], bundle.unread, float(v.mean()))
        if rule.prf_beta > 0 and len(order) and rule.retrievers != "keyword":
            feedback = bundle.matrix[order[: rule.prf_m]].mean(axis=0)
            q2 = q + rule.prf_beta * feedback
            q2 = q2 / np.linalg.norm(q2)
            v = bundle.matrix @ q2
            vi, vs, ki, ks = lists(v, kws[i], rule)
            order, _ = fuse(vi, vs, ki, ks, rule, n, bundle.doc_of, bundle.idf_sums[i], bundle.unread)
        ranked = rank_docs(order, bundle.doc_of, bundle.doc_names)
        nd.append(ndcg(ranked, rel))
        rc.append(recall(ranked, rel))
    bundle.last = nd
    return statistics.fmean(nd), statistics.fmean(rc)


def paired(bundle: Bundle, rule: Rule, base: Rule | None = None) -> tuple[float, float]:
    """Mean per-query nDCG@10 difference of ``rule`` over ``base`` (defaults) and its standard error."""
    evaluate(bundle, base or Rule())
    before = bundle.last
    evaluate(bundle, rule)
    diffs = [a - b for a, b in zip(bundle.last, before, strict=True)]
    return statistics.fmean(diffs), statistics.stdev(diffs) / math.sqrt(len(diffs))


def grid(**axes: list[Any]) -> list[Rule]:
    keys = list(axes)
    return [Rule(**dict(zip(keys, values, strict=True))) for values in itertools.product(*axes.values())]


STUDIES: dict[str, list[Rule]] = {
    "base": [Rule(retrievers="keyword"), Rule(retrievers="vector"), Rule(), Rule(fusion="rrf", alpha=0.7)],
    "alpha": grid(alpha=[0.3, 0.4, 0.5, 0.6, 0.7]),
    "norm": grid(norm=["minmax", "z"], alpha=[0.4, 0.5, 0.6]),
    "bm25": grid(k1=[0.9, 1.2, 1.5], b=[0.4, 0.6, 0.75, 0.9], retrievers=["keyword", "hybrid"]),
    "title": grid(title=[0.5, 1.0, 2.0, 3.0], retrievers=["keyword", "hybrid"]),
    "spread": grid(spread=[0.3, 0.5, 0.7, 0.9, 1.0], retrievers=["keyword", "vector", "hybrid"]),
    "prf": grid(prf_beta=[0.3, 0.5, 1.0], prf_m=[1, 3, 5, 10], retrievers=["vector", "hybrid"]),
    "thresholds": grid(vthr=[0.0, 0.1, 0.2], kthr=[0.0, 0.1, 0.3]),
    "vfloor": grid(vfloor=[0.1, 0.2, 0.3], alpha=[0.4, 0.5, 0.6]),
    "sibling": grid(sibling=[0.1, 0.2, 0.3, 0.5]),
    "tmm": grid(norm=["tmm", "tmm-k", "tmm-v"], alpha=[0.3, 0.4, 0.5, 0.6, 0.7]),
    "combo": [
        Rule(prf_beta=0.5, vfloor=0.2),
        Rule(prf_beta=0.5, docmean=0.6),
        Rule(prf_beta=0.5, norm="minmax"),
        Rule(prf_beta=0.5, vfloor=0.2, docmean=0.6),
    ],
    "final": [Rule(norm=n, alpha=a) for n in ["max", "minmax", "tmm"] for a in [0.4, 0.5, 0.6]]
    + [Rule(prf_beta=0.5), Rule(norm="minmax", prf_beta=0.5), Rule(fusion="rrf", alpha=0.5)],
    "vnorm": [
        *grid(norm=["vminmax", "vz"], alpha=[0.3, 0.4, 0.5, 0.6]),
        Rule(norm="minmax"),
        Rule(norm="z", alpha=0.4),
    ],
    "bg": grid(norm=["vbg"], alpha=[0.4, 0.5, 0.55, 0.6, 0.65]),
    "e5floor": grid(vfloor=[0.5, 0.6, 0.7, 0.75, 0.8], alpha=[0.4, 0.5, 0.6]),
    "conf": grid(conf=["gap10", "gap3", "z", "gap10+", "z+"]),
    "docmean": grid(docmean=[0.2, 0.4, 0.6], retrievers=["vector", "hybrid"]),
    "bgmix": [
        *grid(norm=["vbg"], alpha=[0.5, 0.6], docmean=[0.2, 0.4]),
        *grid(norm=["vbg"], alpha=[0.5, 0.6], sibling=[0.1, 0.2]),
        *grid(norm=["vbg"], alpha=[0.5, 0.6], spread=[0.5, 0.9]),
        *grid(norm=["vbg"], alpha=[0.5, 0.6], title=[2.0]),
        *grid(norm=["vbg"], alpha=[0.5, 0.6], prf_beta=[0.3], prf_m=[1]),
        *grid(norm=["vbg"], alpha=[0.5, 0.6], vthr=[0.0], kthr=[0.0]),
    ],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", nargs="*", default=list(PLAN))
    parser.add_argument("--model", default="", help="embedding model ('' = detected)")
    parser.add_argument("--studies", nargs="*", default=list(STUDIES))
    parser.add_argument("--workdir", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--queries", type=int, default=0, help="queries per set (0: the plan's sample)")
    parser.add_argument("--extra-docs", type=int, default=-1, help="as benchmark.py's (-1: the plan's choice)")
    args = parser.parse_args()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    bundles = []
    for name in args.sets:
        started = time.perf_counter()
        bundle, _container = load_bundle(name, args.model, args.workdir, args.queries, args.extra_docs)
        bundle.bm25()
        bundles.append(bundle)
        print(
            f"{name}: {len(bundle.queries)} queries, {len(bundle.doc_of)} chunks, {time.perf_counter() - started:.0f} s",
            flush=True,
        )
    print("| study | rule | " + " | ".join(b.name for b in bundles) + " |")
    print("|---|---|" + "---:|" * len(bundles))
    if "oracle" in args.studies:
        print("| oracle | best vector weight per query | " + " | ".join(f"{oracle(b):.3f}" for b in bundles) + " |")
    for study in (s for s in args.studies if s != "oracle"):
        for rule in STUDIES[study]:
            changed = {k: v for k, v in rule.__dict__.items() if v != getattr(Rule(), k)}
            figures = [evaluate(b, rule) for b in bundles]
            cells = " | ".join(f"{n:.3f} / {r:.3f}" for n, r in figures)
            print(f"| {study} | {changed or 'defaults'} | {cells} |", flush=True)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
