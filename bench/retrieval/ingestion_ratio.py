"""Ingestion rates of embedding models under the same load: slices of one corpus ingested into one knowledge
base per model, the models taking turns slice by slice (ABAB), so a busy machine slows each alike.

Issue 28's Chinese goal (bge-small-zh ingests ≥ 5× what multilingual e5 did) compares two rates that earlier runs
took minutes apart at different loads; here each slice of CMRC paragraphs goes through ``IngestService`` (chunked,
stored, keyword-indexed, embedded) into each model's knowledge base in turn, and the ratio is of the summed times.

    .venv/bin/python bench/retrieval/ingestion_ratio.py                       # CMRC: e5 against bge-small-zh
    .venv/bin/python bench/retrieval/ingestion_ratio.py --set scifact --models local:all-MiniLM-L6-v2-int8 local:bge-small-en-v1.5-q

The data is read from ../shared/data and never copied into the repository.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.retrieval import datasets  # noqa: E402
from bench.retrieval.benchmark import BGE_ZH, E5_MULTILINGUAL, registered  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", default="cmrc2018-train", choices=datasets.NAMES)
    parser.add_argument("--models", nargs="+", default=[E5_MULTILINGUAL, BGE_ZH])
    parser.add_argument("--documents", type=int, default=160, help="documents of the corpus ingested per model")
    parser.add_argument("--slice", type=int, default=20, help="documents per turn")
    args = parser.parse_args()

    from ragline.bootstrap import ensure_default_tenant
    from ragline.config import Settings
    from ragline.container import Container
    from ragline.ingest.service import DocumentInput

    missing = [m for m in args.models if not registered(m)]
    if missing:
        raise SystemExit(f"not installed here (make install MODELS=all): {', '.join(missing)}")
    corpus = datasets.load(args.set).corpus[: args.documents]
    items = [DocumentInput(content=d["text"], title=d["title"], source=d["_id"], file_type="text") for d in corpus]
    print(f"cpu {os.cpu_count()}; load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as workdir:
        container = Container.embedded(Settings(data_dir=Path(workdir)))
        tenant, _ = ensure_default_tenant(container)
        kbs = {m: container.knowledge.create_knowledge_base(tenant.id, f"kb-{i}", m) for i, m in enumerate(args.models)}
        for model in args.models:  # loaded before the clock starts
            container.models.embedder(model).embed_documents(["warm-up"])
        seconds = dict.fromkeys(args.models, 0.0)
        chunks = dict.fromkeys(args.models, 0)
        for turn, start in enumerate(range(0, len(items), args.slice)):
            batch = items[start : start + args.slice]
            # Alternate who goes first, so neither model always meets the slice's warm caches.
            order = args.models if turn % 2 == 0 else list(reversed(args.models))
            for model in order:
                started = time.perf_counter()
                results = container.ingest.ingest_many(kbs[model], batch)
                seconds[model] += time.perf_counter() - started
                chunks[model] += sum(r.chunk_count for r in results)
        container.close()
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{args.set}: {len(items)} documents per model, {args.slice} per turn, models taking turns")
    base = args.models[0]
    base_rate = chunks[base] / seconds[base]
    print("| model | chunks | seconds | chunks/s | × " + base.removeprefix("local:") + " |")
    print("|---|---:|---:|---:|---:|")
    for model in args.models:
        rate = chunks[model] / seconds[model]
        name = model.removeprefix("local:")
        print(f"| {name} | {chunks[model]} | {seconds[model]:.1f} | {rate:.2f} | {rate / base_rate:.2f} |")


if __name__ == "__main__":
    main()
