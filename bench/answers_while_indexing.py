"""How long the default answerer takes while a large upload indexes, on a busy machine.

The extractive answerer (the default: no chat model configured) scores each question's sentences with MiniLM, the
model instance the indexer embeds English documents with (as a part of the MiniLM + bge-small-en default). Indexing
runs ten steps below the API (``ingestion.background_nice``); the answer must not run down there with it.

Run from the repository root::

    .venv/bin/python bench/answers_while_indexing.py                    # this checkout
    .venv/bin/python bench/answers_while_indexing.py --compare ../main  # ../main's code, then this one's
    [--questions 20 --large-mb 2 --busy 1]

For each checkout in turn, a fresh ``ragline serve`` (its own ``.venv``, no chat model): a knowledge base of three
seed documents indexed, a session on it, one warm-up question; ``--questions`` asked one after another (idle); then
a ``--large-mb`` MiB Markdown document uploaded to another knowledge base, ``--busy`` processes spinning at the
default priority (other work on the machine), and, once the indexer embeds its chunks, ``--questions`` asked one
after another.
Printed side by side: turn latency (the question's 202 → its terminal frame) p50 / p95 / max idle and while indexing,
and how many of the upload's chunks were embedded meanwhile.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.background_writes import spin  # noqa: E402
from bench.ingestion_limits import load  # noqa: E402
from bench.mixed_load import Words, ask, client, seeded_knowledge_bases, start_server, summary3  # noqa: E402


async def measure(process: Any, args: argparse.Namespace) -> dict[str, Any]:
    words = Words(7)
    fig: dict[str, Any] = {}
    async with client(process) as http:
        kb, upload_kb = await seeded_knowledge_bases(http, words)
        session = (await http.post("/api/v1/sessions", json={"knowledge_base_ids": [kb]})).json()["data"]["id"]
        await ask(http, session, f"Warm-up: what does {words.query()} say?")
        idle = [await ask(http, session, f"What does {words.query()} say?") for _ in range(args.questions)]
        content = words.large_markdown(int(args.large_mb * 1024 * 1024))
        reply = await http.post(
            f"/api/v1/knowledge-bases/{upload_kb}/documents", json={"title": "Large", "content": content}
        )
        reply.raise_for_status()
        document = reply.json()["data"]["id"]
        spinners = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.busy)]
        for spinner in spinners:
            spinner.start()
        try:
            # The questions start once the indexer embeds the upload's chunks (its accept, chunking, comes first).
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                doc = (await http.get(f"/api/v1/knowledge-bases/{upload_kb}/documents/{document}")).json()["data"]
                if int(doc.get("embedded_count", 0)) > 0:
                    break
                await asyncio.sleep(0.5)
            fig["embedded_before"] = int(doc.get("embedded_count", 0))
            fig["load_start"] = load()
            busy = []
            for _ in range(args.questions):
                busy.append(await ask(http, session, f"What does {words.query()} say?"))
            fig["load_end"] = load()
        finally:
            for spinner in spinners:
                spinner.terminate()
        doc = (await http.get(f"/api/v1/knowledge-bases/{upload_kb}/documents/{document}")).json()["data"]
        fig["embedded"] = f"{fig['embedded_before']} -> {doc.get('embedded_count', 0)} of {doc.get('chunk_count', 0)}"
    for name, turns in (("idle", idle), ("indexing", busy)):
        done = [t.turn_ms for t in turns if t.terminals == 1]
        fig[f"{name}_n"] = f"{len(done)} of {len(turns)}"
        fig[f"{name}_p50"], fig[f"{name}_p95"], fig[f"{name}_max"] = summary3(done, (50, 95))
    return fig


def run(repo: Path, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ragline-answers-") as tmp:
        process = start_server(repo, Path(tmp), "", {})
        try:
            return asyncio.run(measure(process, args))
        finally:
            process.stop()


ROWS = [
    ("turns ended with one terminal frame, idle", "idle_n", ""),
    ("turn p50 idle (202 -> terminal, ms)", "idle_p50", ".0f"),
    ("turn p95 idle (ms)", "idle_p95", ".0f"),
    ("turn max idle (ms)", "idle_max", ".0f"),
    ("turns ended with one terminal frame, indexing", "indexing_n", ""),
    ("turn p50 while indexing, machine busy (ms)", "indexing_p50", ".0f"),
    ("turn p95 while indexing (ms)", "indexing_p95", ".0f"),
    ("turn max while indexing (ms)", "indexing_max", ".0f"),
    ("large upload's chunks embedded at the first / last question", "embedded", ""),
    ("load average at the start / end", "load_start", ""),
    ("", "load_end", ""),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compare", type=Path, default=None, help="another checkout, measured first")
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--large-mb", type=float, default=2.0)
    parser.add_argument("--busy", type=int, default=1, help="processes spinning at the default priority")
    args = parser.parse_args()
    columns = [(str(args.compare), run(args.compare.resolve(), args))] if args.compare else []
    columns.append((str(ROOT), run(ROOT, args)))
    print(f"{'':<48}" + "".join(f"{label[-28:]:>30}" for label, _ in columns))
    for title, key, fmt in ROWS:
        cells = []
        for _, fig in columns:
            value = fig.get(key, "")
            cells.append(format(value, fmt) if fmt and isinstance(value, float) else str(value))
        print(f"{title:<48}" + "".join(f"{c:>30}" for c in cells))


if __name__ == "__main__":
    main()
