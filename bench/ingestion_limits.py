"""Bounded ingestion, through a real ``ragline serve``: work proportional to the text, the API answering
during a large upload, cancellation when the client goes away, and a prompt exit on SIGTERM.

Printed, in one run (the machine is shared: the load average is printed beside the figures):
1. one repeated line of 0.5, 1 and 2 MB through the documents API: time until accepted (202, chunked and
   keyword-searchable) and until indexed (vectors) — seconds per MB must stay flat (linear work);
2. 1 MB of varied text (SciFact abstracts): accepted and indexed times, chunks;
3. the largest document of varied text one upload may be (~19 MB: under ``limits.max_upload_bytes``, 20 MiB,
   and within ``ingestion.max_chunks_per_document``, 30,000 chunks) POSTed as JSON while a second client asks
   ``/healthz`` every ``--probe-ms``: p50 / p95 / max of the health check during the upload's accept step
   and during ``--index-s`` seconds of its background indexing (goal: ≤ 50 ms);
4. SIGTERM while that document is being indexed: seconds until the process exits (its grace period is
   ``RAGLINE_SHUTDOWN_GRACE_S``), and whether the next start resumes the document (still ``pending``);
5. (run before 3) a client that sends the same document and goes away before the reply: the server's CPU time in the
   seconds after (goal: idle at once) and whether anything was stored.

    .venv/bin/python bench/ingestion_limits.py [--probe-ms 20] [--index-s 20]

The data is read from ../shared/data/scifact and never copied into the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "scifact"

from bench.stats import percentile  # noqa: E402
from tests.support.process import RaglineProcess  # noqa: E402

GRACE_S = 10.0  # the default shutdown grace period, set explicitly so the figure says what it is measured against


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def varied_text(data: Path, size: int) -> str:
    """SciFact abstracts as Markdown sections until ``size`` characters; later rounds are numbered so no
    section repeats an earlier one."""
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").read_text().splitlines() if line.strip()]
    parts: list[str] = []
    total = 0
    round_ = 0
    while total < size:
        for doc in corpus:
            section = f"## {doc['title']} ({round_})\n\n{doc['text']}\n\n"
            parts.append(section)
            total += len(section)
            if total >= size:
                break
        round_ += 1
    return "".join(parts)[:size]


def large_text(data: Path, body_bytes: int) -> str:
    """Varied text as large as one document may be: its JSON body under ``body_bytes`` (escapes make it
    longer than the text) and its chunks within ``ingestion.max_chunks_per_document``."""
    from ragline.config import load_config
    from ragline.ingest.chunker import plan_chunks

    config, _ = load_config()
    ing = config.ingestion
    text = varied_text(data, body_bytes)
    while True:
        overflow = len(json.dumps({"title": "t", "content": text, "file_type": "markdown"}).encode()) - body_bytes
        plan = plan_chunks(
            text,
            markdown=True,
            chunk_size=ing.chunk_size,
            min_size=ing.chunk_min_size,
            parent_size=ing.parent_chunk_size,
        )
        chunks = len(plan.children)
        if overflow <= 0 and chunks <= ing.max_chunks_per_document * 0.98:
            return text
        keep = min(1.0, ing.max_chunks_per_document * 0.97 / chunks)
        text = text[: int(len(text) * keep) - max(0, overflow) - 1024]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def upload(client: httpx.Client, kb: str, title: str, text: str) -> tuple[httpx.Response, float]:
    started = time.perf_counter()
    reply = client.post(
        f"/api/v1/knowledge-bases/{kb}/documents",
        json={"title": title, "content": text, "file_type": "markdown"},
        timeout=600,
    )
    return reply, time.perf_counter() - started


def wait_indexed(client: httpx.Client, kb: str, document_id: str, timeout: float = 1800) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        doc = client.get(f"/api/v1/knowledge-bases/{kb}/documents/{document_id}").json()["data"]
        if doc["status"] != "pending":
            return dict(doc)
        time.sleep(0.1)
    raise TimeoutError(document_id)


class Prober:
    """GET /healthz every ``interval`` s from a process of its own (so the uploading client's own work —
    encoding 19 MB — cannot delay it), latencies (ms) grouped by the phase the main process was in."""

    def __init__(self, url: str, interval: float) -> None:
        self.url = url
        self.interval = interval
        self.samples: dict[str, list[float]] = {}
        self.failures = 0
        self._phases: list[tuple[float, str]] = [(time.time(), "idle")]
        self._log = Path(tempfile.mkstemp(prefix="healthz-", suffix=".log")[1])
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def phase(self) -> str:
        return self._phases[-1][1]

    @phase.setter
    def phase(self, name: str) -> None:
        self._phases.append((time.time(), name))

    def __enter__(self) -> Prober:
        self._process = subprocess.Popen(
            [sys.executable, "-c", _PROBE, self.url, str(self.interval), str(self._log)], cwd=ROOT
        )
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._process is not None
        self._process.terminate()
        self._process.wait(30)
        for line in self._log.read_text().splitlines():
            at, took, ok = line.split()
            if ok != "1":
                self.failures += 1
                continue
            phase = next(name for since, name in reversed(self._phases) if since <= float(at))
            self.samples.setdefault(phase, []).append(float(took))
        self._log.unlink()


_PROBE = """
import sys, time, httpx
url, interval, path = sys.argv[1], float(sys.argv[2]), sys.argv[3]
with httpx.Client(base_url=url, timeout=10) as client, open(path, "a", buffering=1) as log:
    while True:
        at, started = time.time(), time.perf_counter()
        try:
            ok = client.get("/healthz").status_code == 200
        except httpx.HTTPError:
            ok = False
        took = (time.perf_counter() - started) * 1000
        log.write(f"{at} {took:.3f} {int(ok)}\\n")
        time.sleep(max(0.0, interval - took / 1000))
"""


def summary(values: list[float]) -> str:
    if not values:
        return "no samples"
    return (
        f"n={len(values)} p50 {percentile(values, 50):.1f} ms, p95 {percentile(values, 95):.1f} ms, "
        f"max {max(values):.1f} ms, over 50 ms: {sum(v > 50 for v in values)}"
    )


def accept_and_index(client: httpx.Client, kb: str, title: str, text: str) -> tuple[float, float, int]:
    """Seconds until accepted (202) and until indexed, and the document's chunks."""
    reply, accepted = upload(client, kb, title, text)
    reply.raise_for_status()
    started = time.perf_counter()
    doc = wait_indexed(client, kb, reply.json()["data"]["id"])
    return accepted, accepted + time.perf_counter() - started, int(doc["chunk_count"])


def repeated_line(process: RaglineProcess, kb: str) -> None:
    print(f"\n1. one repeated line through the documents API (load {load()})")
    print("| size | accepted (s) | s/MB | indexed (s) | chunks |")
    print("|---:|---:|---:|---:|---:|")
    line = "The same line of text, repeated again and again.\n"
    with process.client() as client:
        for size in (500_000, 1_000_000, 2_000_000):
            text = f"# Repeated {size}\n\n" + line * (size // len(line))
            accepted, indexed, chunks = accept_and_index(client, kb, f"repeated {size}", text)
            print(
                f"| {size / 1e6:.1f} MB | {accepted:.2f} | {accepted / (size / 1e6):.2f} | {indexed:.2f} | {chunks} |"
            )


def one_mb_varied(process: RaglineProcess, kb: str, data: Path) -> None:
    print(f"\n2. 1 MB of varied text (load {load()})")
    with process.client() as client:
        accepted, indexed, chunks = accept_and_index(client, kb, "varied 1 MB", varied_text(data, 1_000_000))
    print(
        f"accepted in {accepted:.2f} s, indexed in {indexed:.2f} s, {chunks} chunks "
        f"({chunks / indexed:.1f} chunks/s end to end); load {load()}"
    )


def health_during_large_upload(process: RaglineProcess, kb: str, data: Path, args: argparse.Namespace) -> None:
    text = large_text(data, 20 * 1024 * 1024 - 64 * 1024)
    # The same size again as a multipart file, with other text (each section's heading says its round).
    other = text.replace(" (0)\n", " (multipart)\n")
    print(
        f"\n3. /healthz every {args.probe_ms:.0f} ms during a {len(text) / 1e6:.1f} MB upload as JSON, then one "
        f"as a multipart file (load {load()})"
    )
    with Prober(process.url, args.probe_ms / 1000) as prober, process.client() as client:
        time.sleep(args.baseline_s)
        prober.phase = "accept"
        reply, accepted = upload(client, kb, "varied 20 MB", text)
        prober.phase = "indexing"
        reply.raise_for_status()
        document_id = reply.json()["data"]["id"]
        time.sleep(args.index_s)
        prober.phase = "multipart"
        started = time.perf_counter()
        file = {"file": ("large.md", other.encode(), "text/markdown")}
        second = client.post(f"/api/v1/knowledge-bases/{kb}/documents", files=file, timeout=600)
        multipart_s = time.perf_counter() - started
        prober.phase = "after"
        second.raise_for_status()
        progress = client.get(f"/api/v1/knowledge-bases/{kb}/documents/{document_id}").json()["data"]
    print(f"JSON accepted (202) in {accepted:.1f} s: {progress['chunk_count']} chunks")
    print(
        f"multipart accepted ({second.status_code}) in {multipart_s:.1f} s: {second.json()['data']['chunk_count']} chunks"
    )
    print(f"  idle, same machine ({args.baseline_s:.0f} s): {summary(prober.samples.get('idle', []))}")
    print(f"  during the JSON accept step:      {summary(prober.samples.get('accept', []))}")
    print(f"  during indexing ({args.index_s:.0f} s):          {summary(prober.samples.get('indexing', []))}")
    print(f"  during the multipart accept step: {summary(prober.samples.get('multipart', []))}")
    print(f"  failed probes: {prober.failures}; {progress['embedded_count']} of {progress['chunk_count']} embedded")
    print(f"  load {load()}")

    print(f"\n4. SIGTERM while it is being indexed (grace {GRACE_S:.0f} s)")
    assert process.proc is not None
    started = time.perf_counter()
    process.terminate()
    code = process.wait(timeout=120)
    exited = time.perf_counter() - started
    print(f"exited in {exited:.2f} s (code {code}); within the grace period: {exited <= GRACE_S}")
    process.start()
    with process.client() as client:
        doc = client.get(f"/api/v1/knowledge-bases/{kb}/documents/{document_id}").json()["data"]
    print(f"after restart: status {doc['status']}, {doc['embedded_count']} of {doc['chunk_count']} embedded (resumed)")


def client_goes_away(process: RaglineProcess, kb: str, data: Path, gone_after_s: float) -> None:
    text = large_text(data, 20 * 1024 * 1024 - 64 * 1024)
    body = json.dumps({"title": "abandoned", "content": text}).encode()
    print(f"\n5. a client sends {len(body) / 1e6:.1f} MB and goes away before the reply (load {load()})")
    assert process.proc is not None
    pid = process.proc.pid
    host, port = process.url.removeprefix("http://").split(":")
    with process.client() as client:
        before = len(client.get(f"/api/v1/knowledge-bases/{kb}/documents", params={"limit": 1000}).json()["data"])
    sock = socket.create_connection((host, int(port)))
    head = (
        f"POST /api/v1/knowledge-bases/{kb}/documents HTTP/1.1\r\nHost: {host}\r\n"
        f"X-API-Key: {process.api_key}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    busy_before = cpu_seconds(pid)
    sock.sendall(head + body)
    time.sleep(gone_after_s)  # the body is read and the accept step (chunking, storing) is under way
    busy_rate = (cpu_seconds(pid) - busy_before) / gone_after_s
    sock.close()
    gone = time.perf_counter()
    windows = []
    previous = cpu_seconds(pid)
    for _ in range(10):
        time.sleep(0.5)
        now = cpu_seconds(pid)
        windows.append(now - previous)
        previous = now
    idle_after = next((i * 0.5 + 0.5 for i, w in enumerate(windows) if w < 0.05), None)
    with process.client() as client:
        after = len(client.get(f"/api/v1/knowledge-bases/{kb}/documents", params={"limit": 1000}).json()["data"])
    print(f"CPU from the first byte to the disconnect ({gone_after_s:.1f} s): {busy_rate * 100:.0f}% of a core")
    print("CPU after the client went away, per 0.5 s: " + ", ".join(f"{w / 0.5 * 100:.0f}%" for w in windows))
    print(
        f"idle (< 10% of a core) within {idle_after} s of the disconnect; documents stored: {after - before} "
        f"({time.perf_counter() - gone:.1f} s watched); load {load()}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("SCIFACT_DIR", DEFAULT_DATA)))
    parser.add_argument("--probe-ms", type=float, default=20)
    parser.add_argument("--index-s", type=float, default=20)
    parser.add_argument("--baseline-s", type=float, default=10, help="/healthz of the idle server first")
    parser.add_argument("--parts", default="1,2,3,4,5", help="which parts to run (4 runs with 3)")
    parser.add_argument("--gone-after-s", type=float, default=1.0, help="when the client of part 5 goes away")
    args = parser.parse_args()
    print(f"ingestion limits: {os.cpu_count()} CPUs, load {load()}")
    with tempfile.TemporaryDirectory(prefix="ragline-bench-limits-") as tmp:
        process = RaglineProcess(
            Path(tmp) / "data", "http://127.0.0.1:9/v1", RAGLINE_SHUTDOWN_GRACE_S=str(GRACE_S)
        ).start()
        try:
            with process.client() as client:
                kb = client.post("/api/v1/knowledge-bases", json={"name": "limits"}).json()["data"]["id"]
            if "1" in args.parts:
                repeated_line(process, kb)
            if "2" in args.parts:
                one_mb_varied(process, kb, args.data)
            if "5" in args.parts:
                client_goes_away(process, kb, args.data, args.gone_after_s)
            if "3" in args.parts:
                health_during_large_upload(process, kb, args.data, args)
        finally:
            process.stop()
    print(f"\nload at the end: {load()}")


if __name__ == "__main__":
    main()
