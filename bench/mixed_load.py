"""Mixed load on a real ``ragline serve``: SSE readers while uploads (one of ~20 MB), questions and searches run,
with a scripted chat model so enrichment is on; and, apart, concurrent 300 MB chunked bodies.

Run from the repository root (``--repo`` is the checkout whose code serves: its ``.venv/bin/python -m ragline.cli
serve``, default this one)::

    .venv/bin/python bench/mixed_load.py                       # this checkout, ~5-8 minutes on 2 busy cores
    .venv/bin/python bench/mixed_load.py --compare ../main     # ../main's code, then this one's; side by side
    .venv/bin/python bench/mixed_load.py --chunked-bodies 20   # 20 concurrent 300 MB chunked bodies, key / no key
    [--readers 50 --uploads 20 --questions 50 --large-mb 19.9 --piece-ms 25 --reader-pieces 200 --batch-ms -1]

What runs where, each in a process of its own (so that one client's work never delays another's figures):

* the chat model: ``tests/support/scripted_model.py`` behind uvicorn. A reader's question is answered with
  ``--reader-pieces`` words ``--piece-ms`` apart; every other question with four words at once; enrichment's
  prompts with three questions per passage and a one-sentence summary, so every upload is enriched;
* the server: ``ragline serve`` from ``--repo`` on a fresh data directory, with that checkout's configuration
  (``--batch-ms N`` runs it on a copy where ``stream.embedded_batch_max_delay_ms`` is N: the answer's pieces reach the
  log in batches of that window, 25 ms as shipped (100 ms before the embedded server had a window of its own), so a
  reader's gaps cannot go below it; ``--batch-ms 0`` makes every piece a frame — 50 readers at 25 ms are then 2,000
  frames a second);
* the readers: ``bench/sse_readers.py turns`` (httpx + httpx-sse, one asyncio loop), one reader per chat session
  (no knowledge base): it asks, follows the answer's frames to the end, and asks again, all through the run;
* ``/healthz`` every 20 ms (``bench/ingestion_limits.py``'s prober);
* this process: the uploads, the questions, the searches, and reading the server's VmRSS from /proc.

The phases, each printed with the load average at its start and end:

1. idle: ``--idle-searches`` knowledge searches one after another, ``--idle-turns`` questions one after another,
   then ``/healthz`` alone for ``--idle-s`` s. Searches and questions read a knowledge base of three seed
   documents, idle and under load alike; the uploads go to another, so only the load differs between the two;
2. readers alone: the readers stream for ``--alone-s`` s;
3. the load, until every upload is indexed (or refused) and every question ended, or ``--load-deadline-s``:
   ``--uploads`` uploads ``--upload-concurrency`` at a time, the first one a Markdown file of ``--large-mb``
   MiB, sent as a multipart file (within ``limits.max_upload_bytes``, and cut to stay within
   ``ingestion.max_chunks_per_document``: 18.9 MB, 28,497 chunks by default; its indexing is not waited for: its
   progress is printed), the others small Markdown as JSON; ``--questions`` questions on a session of the
   searched knowledge base, ``--question-concurrency`` at a time; a knowledge search every ``--search-interval-ms``;
4. drain: the readers ask no more and follow their last answers to the end (at most ``--drain-s`` s).

Printed (figures, not assertions; goals from issue 25 beside them): the readers' gap between consecutive frames of
one stream (receive times; the wait for a stream's first frame is not a gap) p50 / p99 / max, alone and under
load; knowledge-search latency p50 / p95 idle and under load and the ratio of the p95s; turn latency (the 202
of the question → its terminal frame) p50 / p95; ``/healthz`` p50 / p99 / max; the server's VmRSS before the load,
its peak (sampled, and VmHWM) and after; the server's CPU (user + system, % of one core) while the readers stream
alone and under the load, and the scripted model's and the readers' processes' beside it (the same 2 cores); the probes of ``/healthz`` over 1 s and when they were sent (beside the
large upload's POST); and "nothing lost": every turn ended with exactly one terminal frame
(and it was the last), every reader's frame ids increased (``jumps``: a frame whose id skips, a coalesced catch-up;
its text must then still be whole), every reader's answer text arrived whole, every upload reached ``indexed``
or was refused with a 4xx.

``--chunked-bodies N``: N clients at once each send a 300 MB chunked body (made on the fly, never held in memory)
to ``POST /api/v1/knowledge-search`` with the API key, then N without it; printed: the statuses received, the
bytes each had sent when its reply came, the server's VmRSS before / peak / after each round. Expected: 413
with the key, 401 without, and flat memory. A server that buffers such bodies would take ~600 MB per request:
the clients stop when its VmRSS passes ``--rss-cap-mb`` (this machine is shared).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from httpx_sse import aconnect_sse

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # bench.* and tests.support, as pytest's pythonpath = ["."] gives them

from bench.ingestion_limits import Prober, load  # noqa: E402
from bench.stats import percentile  # noqa: E402
from bench.stream_latency import ReaderProcess  # noqa: E402
from tests.support.process import RaglineProcess  # noqa: E402

# The reader's question: the scripted model answers it with the long, slow answer.
READER_QUESTION = "Reader stream: tell the long story"
TERMINAL = {"complete", "error", "stop"}
GOAL_GAP_P99_MS = 50.0
GOAL_SEARCH_RATIO = 2.0
# The prober's interval: the /healthz figures are over requests this far apart.
PROBE_S = 0.02
CHUNKED_BODY_BYTES = 300 * 1024 * 1024
CHUNK_BYTES = 64 * 1024


def say(label: str, text: str) -> None:
    print(f"[{label}] {text}", flush=True)


class TimedProber(Prober):
    """``bench/ingestion_limits.py``'s prober, keeping each probe's wall-clock time too (``timeline``)."""

    def __exit__(self, *exc: object) -> None:
        assert self._process is not None
        self._process.terminate()
        self._process.wait(30)
        self.timeline: list[tuple[float, float]] = []
        for line in self._log.read_text().splitlines():
            at, took, ok = line.split()
            self.timeline.append((float(at), float(took) if ok == "1" else float("inf")))
        super().__exit__(*exc)


# The scripted chat model (a process of its own) ---------------------------------------------------------------


def reader_answer(pieces: int) -> list[str]:
    """The words of a reader's answer, in order."""
    return [f"w{i} " for i in range(pieces)]


def serve_model(args: argparse.Namespace) -> None:
    """The scripted model behind uvicorn until stdin closes; prints its URL first."""
    from tests.support.scripted_model import Script, ScriptedModel
    from tests.support.servers import ServerThread

    class MixedLoadModel(ScriptedModel):
        """The default scripts, a long slow answer for the readers, and enrichment's replies."""

        def __init__(self) -> None:
            super().__init__()
            self.reader = Script.answer(*reader_answer(args.reader_pieces), delay=args.piece_ms / 1000)
            self.questions = lambda prompt: Script.answer(
                "\n".join(f"{i}. What does passage {abs(hash(prompt)) % 9973} say about {i}?" for i in range(1, 4))
            )
            self.summary = Script.answer("A scripted summary of this generated document.")
            self.kb_description = Script.answer("Generated documents for the mixed-load benchmark.")

        def _next(self, body: dict[str, Any]) -> Script:
            script = super()._next(body)
            if script is self.default:
                users = [m for m in body.get("messages", []) if m.get("role") == "user"]
                if users and READER_QUESTION in str(users[-1].get("content", "")):
                    return self.reader
            return script

    model = MixedLoadModel()
    server = ServerThread(model.app).start()
    print(json.dumps({"url": server.url}), flush=True)

    def forget() -> None:
        # Every request is recorded for tests to read; nobody reads them here, and a run makes thousands.
        while True:
            time.sleep(5)
            with model._lock:
                del model.received[:]

    threading.Thread(target=forget, daemon=True).start()
    sys.stdin.read()  # until the parent closes it
    server.stop()


class ModelProcess:
    def __init__(self, args: argparse.Namespace) -> None:
        self._proc = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "--serve-model",
                "--reader-pieces",
                str(args.reader_pieces),
                "--piece-ms",
                str(args.piece_ms),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the scripted model did not start (rc={self._proc.wait()})")
        self.url = str(json.loads(line)["url"])
        self.pid = self._proc.pid

    def stop(self) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        try:
            self._proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._proc.kill()  # our own child, by its handle
            self._proc.wait()


# Documents and queries -------------------------------------------------------------------------------------


class Words:
    """Made-up words (seeded), so documents are varied text and every query is new to the server's caches."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        syllables = ["ka", "lo", "mi", "ren", "sa", "tu", "vel", "or", "an", "qui", "bra", "del", "fo", "gin", "hal"]
        vocabulary: set[str] = set()
        while len(vocabulary) < 6000:
            vocabulary.add("".join(self.rng.choice(syllables) for _ in range(self.rng.randint(2, 4))))
        self.vocabulary = sorted(vocabulary)

    def sentence(self, words: int) -> str:
        return " ".join(self.rng.choices(self.vocabulary, k=words)).capitalize() + "."

    def paragraph(self, sentences: int) -> str:
        return " ".join(self.sentence(self.rng.randint(8, 16)) for _ in range(sentences))

    def markdown(self, title: str, sections: int) -> str:
        parts = [f"# {title}\n"]
        for s in range(sections):
            parts.append(f"\n## Section {s + 1}: {self.sentence(3)[:-1]}\n\n{self.paragraph(5)}\n")
        return "".join(parts)

    def large_markdown(self, size: int) -> str:
        """Varied Markdown of ``size`` characters (ASCII: as many bytes), made fast: sentences of shuffled words."""
        parts: list[str] = []
        total = 0
        section = 0
        while total < size:
            section += 1
            words = self.rng.choices(self.vocabulary, k=600)
            body = ". ".join(" ".join(words[i : i + 12]) for i in range(0, 600, 12))
            part = f"## Part {section}\n\n{body}.\n\n"
            parts.append(part)
            total += len(part)
        return "".join(parts)[:size]

    def query(self) -> str:
        return " ".join(self.rng.choices(self.vocabulary, k=3))


def fit_large(words: Words, wanted: int) -> str:
    """The large document: ``wanted`` bytes, less while it would be cut into more chunks than one document may have."""
    from ragline.config import load_config
    from ragline.ingest.chunker import plan_chunks

    config, _ = load_config()
    ing = config.ingestion
    size = min(wanted, config.limits.max_upload_bytes - 1024)
    text = words.large_markdown(size)
    while True:
        plan = plan_chunks(
            text,
            markdown=True,
            chunk_size=ing.chunk_size,
            min_size=ing.chunk_min_size,
            parent_size=ing.parent_chunk_size,
        )
        if len(plan.children) <= ing.max_chunks_per_document * 0.97:
            return text
        text = text[: int(len(text) * ing.max_chunks_per_document * 0.95 / len(plan.children))]


def multipart(filename: str, content: bytes) -> tuple[bytes, str]:
    """A multipart body with one ``file`` part, built once, so sending it costs this process no encoding."""
    boundary = uuid.uuid4().hex
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
        "Content-Type: text/markdown\r\n\r\n"
    ).encode()
    return head + content + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


# The server process ----------------------------------------------------------------------------------------


def config_dir(repo: Path, tmp: Path, batch_ms: int) -> dict[str, str]:
    """A copy of ``repo``'s configuration with the embedded server's batch window set (unless ``batch_ms`` < 0).

    ``stream.embedded_batch_max_delay_ms``, or ``stream.batch_max_delay_ms`` in a checkout from before the embedded
    server had a window of its own.
    """
    if batch_ms < 0:
        return {}
    copy = tmp / "config"
    shutil.copytree(repo / "config", copy)
    path = copy / "config.yaml"
    text = path.read_text()
    for key in ("embedded_batch_max_delay_ms", "batch_max_delay_ms"):
        text, found = re.subn(rf"(\n\s+{key}:\s*)\d+", rf"\g<1>{batch_ms}", text)
        if found == 1:
            break
    else:
        raise SystemExit(f"{path}: no stream.embedded_batch_max_delay_ms to set")
    path.write_text(text)
    return {"RAGLINE_CONFIG_DIR": str(copy)}


def start_server(repo: Path, tmp: Path, chat_url: str, env: dict[str, str]) -> RaglineProcess:
    python = repo / ".venv" / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"{python} not found: run `make install` in {repo}")
    # PYTHONPATH emptied: the checkout's own interpreter imports the checkout's own ragline.
    process = RaglineProcess(
        tmp / "data", chat_url, root=repo, python=str(python), PYTHONPATH="", RAGLINE_SHUTDOWN_GRACE_S="2", **env
    )
    return process.start(timeout=300)


def cpu_s(pid: int) -> float:
    """A process's CPU time so far (user + system, all its threads), in seconds; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Memory:
    """The server's VmRSS, sampled every 0.2 s in a thread; ``peak`` since the last ``mark``."""

    def __init__(self, pid: int) -> None:
        self._pid = pid
        self._path = Path(f"/proc/{pid}/status")
        self.peak = 0.0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def read(self, field_name: str = "VmRSS") -> float:
        """MiB; 0 once the process is gone."""
        try:
            for line in self._path.read_text().splitlines():
                if line.startswith(field_name + ":"):
                    return int(line.split()[1]) / 1024
        except FileNotFoundError:
            pass
        return 0.0

    def cpu_s(self) -> float:
        """The server's CPU time so far (user + system, all its threads), in seconds; 0 once it is gone."""
        return cpu_s(self._pid)

    def mark(self) -> float:
        """The VmRSS now, which becomes the peak to beat."""
        now = self.read()
        self.peak = now
        return now

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.peak = max(self.peak, self.read())
            self.samples += 1

    def __enter__(self) -> Memory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# Clients -----------------------------------------------------------------------------------------------------


def client(process: RaglineProcess, timeout: float = 120.0) -> httpx.AsyncClient:
    # trust_env=False: never route 127.0.0.1 through a proxy from the environment.
    return httpx.AsyncClient(
        base_url=process.url,
        headers={"X-API-Key": process.api_key},
        timeout=httpx.Timeout(timeout, connect=30.0),
        trust_env=False,
        limits=httpx.Limits(max_connections=50, max_keepalive_connections=50),
    )


@dataclass
class TurnResult:
    ask_ms: float = float("nan")
    turn_ms: float = float("nan")
    terminals: int = 0
    last: str = ""
    error: str = ""


async def ask(http: httpx.AsyncClient, session: str, query: str) -> TurnResult:
    """A question and its stream to the end: POST → 202 (``ask_ms``), 202 → terminal frame (``turn_ms``)."""
    result = TurnResult()
    started = time.perf_counter()
    try:
        reply = await http.post(f"/api/v1/sessions/{session}/questions", json={"query": query})
        accepted = time.perf_counter()
        result.ask_ms = (accepted - started) * 1000
        if reply.status_code != 202:
            result.error = f"ask answered {reply.status_code}"
            return result
        message = reply.json()["data"]["assistant_message_id"]
        async with aconnect_sse(http, "GET", f"/api/v1/sessions/{session}/messages/{message}/events") as source:
            source.response.raise_for_status()
            async for sse in source.aiter_sse():
                if not sse.data:
                    continue
                kind = str(json.loads(sse.data).get("response_type"))
                result.last = kind
                if kind in TERMINAL:
                    result.terminals += 1
                    result.turn_ms = (time.perf_counter() - accepted) * 1000
    except httpx.HTTPError as exc:
        result.error = f"{type(exc).__name__}: {exc}"[:200]
    return result


async def search(http: httpx.AsyncClient, kb: str, query: str) -> tuple[float, int, float]:
    """One knowledge search: (ms, status; 0 for no reply, when it was sent: time.time())."""
    sent = time.time()
    started = time.perf_counter()
    try:
        reply = await http.post(
            "/api/v1/knowledge-search", json={"query": query, "knowledge_base_ids": [kb], "top_k": 5}
        )
        status = reply.status_code
    except httpx.HTTPError:
        status = 0
    return (time.perf_counter() - started) * 1000, status, sent


async def settle_enrichment(http: httpx.AsyncClient, kb: str, deadline: float) -> None:
    """Until no document of ``kb`` is pending or being enriched (the idle phase must be idle)."""
    while time.monotonic() < deadline:
        docs = (await http.get(f"/api/v1/knowledge-bases/{kb}/documents", params={"limit": 1000})).json()["data"]
        busy = [d for d in docs if d["status"] == "pending" or d.get("summary_status") in ("pending", "processing")]
        if not busy:
            return
        await asyncio.sleep(0.25)


@dataclass
class Upload:
    name: str
    size: int
    status: int = 0
    accept_s: float = float("nan")
    indexed_s: float = float("nan")
    final: str = ""
    chunks: int = 0
    embedded: int = 0
    document_id: str = ""
    error: str = ""
    started: float = 0.0
    window: tuple[float, float] = (0.0, 0.0)  # wall-clock times of the POST and its reply


@dataclass
class LoadResult:
    uploads: list[Upload] = field(default_factory=list)
    turns: list[TurnResult] = field(default_factory=list)
    searches: list[tuple[float, int, float]] = field(default_factory=list)
    seconds: float = 0.0
    deadline_hit: bool = False
    began_wall: float = 0.0


async def run_load(
    process: RaglineProcess,
    search_kb: str,
    upload_kb: str,
    session: str,
    words: Words,
    large: bytes,
    args: argparse.Namespace,
) -> LoadResult:
    """Phase 3: the uploads, the questions and the searches, until all are done or the deadline."""
    result = LoadResult(began_wall=time.time())
    began = time.monotonic()
    deadline = began + args.load_deadline_s
    uploads = [Upload("large.md", len(large))]
    smalls = [words.markdown(f"Small document {i}", 6) for i in range(args.uploads - 1)]
    uploads += [Upload(f"small-{i}.md", len(t.encode())) for i, t in enumerate(smalls)]
    result.uploads = uploads
    done = asyncio.Event()
    upload_slots = asyncio.Semaphore(args.upload_concurrency)
    question_slots = asyncio.Semaphore(args.question_concurrency)

    async with client(process) as up, client(process) as asker, client(process) as searcher, client(process) as poller:

        async def send(upload: Upload, body: bytes | None, text: str | None) -> None:
            async with upload_slots:
                started = upload.started = time.monotonic()
                upload.window = (time.time(), float("inf"))
                try:
                    if body is not None:
                        content, content_type = multipart(upload.name, body)
                        reply = await up.post(
                            f"/api/v1/knowledge-bases/{upload_kb}/documents",
                            content=content,
                            headers={"Content-Type": content_type},
                        )
                    else:
                        reply = await up.post(
                            f"/api/v1/knowledge-bases/{upload_kb}/documents",
                            json={"title": upload.name, "content": text, "file_type": "markdown"},
                        )
                except httpx.HTTPError as exc:
                    upload.error = f"{type(exc).__name__}: {exc}"[:200]
                    return
                upload.accept_s = time.monotonic() - started
                upload.window = (upload.window[0], time.time())
                upload.status = reply.status_code
                if reply.status_code in (200, 201, 202):
                    data = reply.json()["data"]
                    upload.document_id, upload.final, upload.chunks = data["id"], data["status"], data["chunk_count"]
                    if upload.final == "indexed":
                        upload.indexed_s = upload.accept_s
                else:
                    upload.final = "refused"
                    upload.error = reply.text[:200]

        def settled() -> bool:
            """The large upload answered (its indexing is not waited for), every small one indexed or refused."""
            large_done = bool(uploads[0].final or uploads[0].error)
            return large_done and all(u.error or (u.final and u.final != "pending") for u in uploads[1:])

        async def watch_uploads() -> None:
            """Every upload's status from the document list, once a second (one request, not one per upload)."""
            while not settled():
                await asyncio.sleep(1.0)
                try:
                    reply = await poller.get(f"/api/v1/knowledge-bases/{upload_kb}/documents", params={"limit": 1000})
                    by_id = {d["id"]: d for d in reply.json()["data"]}
                except (httpx.HTTPError, ValueError, KeyError):
                    continue  # no answer this time: asked again in a second
                now = time.monotonic()
                for u in uploads:
                    doc = by_id.get(u.document_id)
                    if doc is None:
                        continue
                    u.embedded, u.chunks = int(doc.get("embedded_count", 0)), int(doc.get("chunk_count", u.chunks))
                    if u.final == "pending" and doc["status"] != "pending":
                        u.final = str(doc["status"])
                        u.indexed_s = now - u.started

        async def question(i: int) -> None:
            async with question_slots:
                turn = await ask(asker, session, f"Question {i}: what does {words.query()} say?")
            result.turns.append(turn)

        async def searches() -> None:
            while not done.is_set():
                result.searches.append(await search(searcher, search_kb, words.query()))
                with contextlib.suppress(TimeoutError):  # the pause between searches, cut short by the end
                    await asyncio.wait_for(done.wait(), args.search_interval_ms / 1000)

        search_task = asyncio.create_task(searches())
        work = [asyncio.create_task(send(uploads[0], large, None))]
        work += [asyncio.create_task(send(u, None, t)) for u, t in zip(uploads[1:], smalls, strict=True)]
        work += [asyncio.create_task(question(i)) for i in range(args.questions)]
        work.append(asyncio.create_task(watch_uploads()))
        _, pending = await asyncio.wait(work, timeout=max(0.0, deadline - time.monotonic()))
        result.deadline_hit = bool(pending)
        for task in pending:
            task.cancel()
        await asyncio.gather(*work, return_exceptions=True)
        done.set()
        await search_task
        result.seconds = time.monotonic() - began
        # The large document's progress now (its indexing is not waited for).
        large_upload = uploads[0]
        if large_upload.document_id:
            try:
                doc = (
                    await poller.get(f"/api/v1/knowledge-bases/{upload_kb}/documents/{large_upload.document_id}")
                ).json()
                large_upload.embedded = int(doc["data"].get("embedded_count", 0))
                large_upload.final = str(doc["data"]["status"])
            except (httpx.HTTPError, ValueError, KeyError):
                pass
    return result


# One run -----------------------------------------------------------------------------------------------------


def summary3(values: list[float], q: tuple[int, int]) -> tuple[float, float, float]:
    if not values:
        return float("nan"), float("nan"), float("nan")
    return percentile(values, q[0]), percentile(values, q[1]), max(values)


def run_mixed(label: str, repo: Path, model_url: str, model_pid: int, args: argparse.Namespace) -> dict[str, Any]:
    """Phases 1-4 on ``repo``'s server; the figures by name."""
    fig: dict[str, Any] = {}
    words = Words(args.seed)
    large_text = fit_large(words, int(args.large_mb * 1024 * 1024))
    large = large_text.encode()
    say(label, f"{repo}: large document {len(large):,} bytes; load {load()}")
    with tempfile.TemporaryDirectory(prefix="ragline-mixed-") as tmp_name:
        tmp = Path(tmp_name)
        process = start_server(repo, tmp, f"{model_url}/v1", config_dir(repo, tmp, args.batch_ms))
        assert process.proc is not None
        pid = process.proc.pid
        try:
            with Memory(pid) as memory:
                fig.update(asyncio.run(setup_and_idle(label, process, words, args)))
                kb, upload_kb = fig.pop("_kb"), fig.pop("_upload_kb")
                session, reader_sessions = fig.pop("_session"), fig.pop("_reader_sessions")
                phase_file = tmp / "phase"
                set_phase(phase_file, "alone")
                with TimedProber(process.url, PROBE_S) as prober:
                    say(label, f"phase healthz idle ({args.idle_s:.0f} s): start, load {load()}")
                    time.sleep(args.idle_s)
                    say(label, f"phase healthz idle: end, load {load()}")
                    fig["rss_before"] = memory.mark()
                    say(label, f"phase readers alone: start, load {load()}")
                    readers = (
                        None
                        if not args.readers
                        else ReaderProcess(
                            "turns",
                            process.url,
                            "--key",
                            process.api_key,
                            "--sessions",
                            ",".join(reader_sessions),
                            "--phase-file",
                            str(phase_file),
                            "--question",
                            READER_QUESTION,
                            "--answer",
                            "".join(reader_answer(args.reader_pieces)),
                            "--drain-s",
                            str(args.drain_s),
                        )
                    )
                    with readers or contextlib.nullcontext():
                        prober.phase = "alone"
                        if readers is not None:
                            readers.expect("ready", timeout=300)
                        clients = [model_pid, *([readers.pid] if readers is not None else [])]
                        cpu, started = memory.cpu_s(), time.monotonic()
                        clients_cpu = sum(cpu_s(pid) for pid in clients)
                        time.sleep(args.alone_s)
                        took = time.monotonic() - started
                        fig["cpu_alone"] = 100 * (memory.cpu_s() - cpu) / took
                        fig["cpu_clients_alone"] = 100 * (sum(cpu_s(pid) for pid in clients) - clients_cpu) / took
                        say(label, f"phase readers alone: end, load {load()}")
                        say(label, f"phase load: start, load {load()}")
                        prober.phase = "load"
                        set_phase(phase_file, "load")
                        cpu, started = memory.cpu_s(), time.monotonic()
                        outcome = asyncio.run(run_load(process, kb, upload_kb, session, words, large, args))
                        fig["cpu_load"] = 100 * (memory.cpu_s() - cpu) / (time.monotonic() - started)
                        say(
                            label,
                            f"phase load: end after {outcome.seconds:.0f} s"
                            f"{' (deadline)' if outcome.deadline_hit else ''}, load {load()}",
                        )
                        fig["rss_peak"] = memory.peak
                        say(label, f"phase drain: start, load {load()}")
                        prober.phase = "drain"
                        set_phase(phase_file, "stop")
                        done = (
                            readers.expect("done", timeout=args.drain_s + 120)
                            if readers is not None
                            else {"gaps": {}, "turns": [], "errors": []}
                        )
                        say(label, f"phase drain: end, load {load()}")
                    fig["rss_after"] = memory.read()
                    fig["rss_hwm"] = memory.read("VmHWM")
                fig.update(load_figures(outcome, done, prober, args))
        finally:
            process.stop()
    return fig


def set_phase(path: Path, name: str) -> None:
    part = path.with_suffix(".tmp")
    part.write_text(name)
    part.replace(path)


async def seeded_knowledge_bases(http: httpx.AsyncClient, words: Words) -> tuple[str, str]:
    """The searched knowledge base, with three seed documents indexed, and an empty one for the uploads."""
    kb = (await http.post("/api/v1/knowledge-bases", json={"name": "searched"})).json()["data"]["id"]
    upload_kb = (await http.post("/api/v1/knowledge-bases", json={"name": "uploads"})).json()["data"]["id"]
    for i in range(3):
        reply = await http.post(
            f"/api/v1/knowledge-bases/{kb}/documents",
            params={"wait": "true"},
            json={"title": f"Seed {i}", "content": words.markdown(f"Seed document {i}", 8)},
        )
        reply.raise_for_status()
    return str(kb), str(upload_kb)


async def setup_and_idle(label: str, process: RaglineProcess, words: Words, args: argparse.Namespace) -> dict[str, Any]:
    fig: dict[str, Any] = {}
    async with client(process) as http:
        say(label, f"setup: start, load {load()}")
        # Searches and questions read a knowledge base of their own, the same idle and under load; the uploads go
        # to another, so that what changes between the two is the load, not the data searched.
        kb, upload_kb = await seeded_knowledge_bases(http, words)
        await settle_enrichment(http, kb, time.monotonic() + 300)
        session = (await http.post("/api/v1/sessions", json={"knowledge_base_ids": [kb]})).json()["data"]["id"]
        reader_sessions = [
            (await http.post("/api/v1/sessions", json={})).json()["data"]["id"] for _ in range(args.readers)
        ]
        # One question and one search first: models loaded, caches warm, as on a server that has been running.
        await ask(http, session, f"Warm-up: what does {words.query()} say?")
        await search(http, kb, words.query())
        await settle_enrichment(http, kb, time.monotonic() + 60)
        say(label, f"setup: end, load {load()}")
        say(label, f"phase search and turns idle: start, load {load()}")
        idle_searches = [await search(http, kb, words.query()) for _ in range(args.idle_searches)]
        idle_turns = [
            await ask(http, session, f"Idle {i}: what does {words.query()} say?") for i in range(args.idle_turns)
        ]
        say(label, f"phase search and turns idle: end, load {load()}")
    ok = [ms for ms, status, _ in idle_searches if status == 200]
    fig["search_idle_p50"], fig["search_idle_p95"], _ = summary3(ok, (50, 95))
    fig["search_idle_n"] = f"{len(ok)} of {len(idle_searches)} answered 200"
    turn_ms = [t.turn_ms for t in idle_turns if t.terminals]
    fig["turn_idle_p50"], fig["turn_idle_p95"], _ = summary3(turn_ms, (50, 95))
    fig.update(_kb=kb, _upload_kb=upload_kb, _session=session, _reader_sessions=reader_sessions)
    return fig


def load_figures(
    outcome: LoadResult, readers: dict[str, Any], prober: Prober, args: argparse.Namespace
) -> dict[str, Any]:
    fig: dict[str, Any] = {"load_s": outcome.seconds, "deadline_hit": "yes" if outcome.deadline_hit else "no"}
    gaps: dict[str, list[float]] = readers["gaps"]
    for phase in ("alone", "load"):
        fig[f"gap_{phase}_p50"], fig[f"gap_{phase}_p99"], fig[f"gap_{phase}_max"] = summary3(
            gaps.get(phase, []), (50, 99)
        )
        fig[f"gap_{phase}_n"] = len(gaps.get(phase, []))
        streaming = readers.get("answer_gaps", {}).get(phase, [])
        fig[f"answer_gap_{phase}_p99"] = percentile(streaming, 99) if streaming else float("nan")
        pairs = Counter(readers.get("slow_pairs", {}).get(phase, {}))
        fig[f"slow_pairs_{phase}"] = ", ".join(f"{k}: {n}" for k, n in pairs.most_common(4)) or "-"
    drain = gaps.get("stop", [])
    fig["gap_drain_p99"] = percentile(drain, 99) if drain else float("nan")
    turns = readers["turns"]
    fig["reader_turns"] = len(turns)
    fig["reader_one_terminal"] = sum(1 for t in turns if t["terminals"] == 1 and t["last"] in TERMINAL)
    fig["reader_ends"] = ", ".join(f"{k} {v}" for k, v in sorted(Counter(t["last"] for t in turns).items()))
    fig["reader_text_whole"] = sum(1 for t in turns if t["text_ok"])
    fig["reader_ids_increasing"] = sum(1 for t in turns if t["increasing"])
    fig["reader_jumps"] = sum(t["jumps"] for t in turns)
    fig["reader_cut"] = sum(1 for t in turns if t["cut"])
    fig["reader_errors"] = len(readers["errors"])
    fig["reader_error_kinds"] = "; ".join(f"{n}× {e}" for e, n in Counter(readers["errors"]).most_common(3))

    ok = [ms for ms, status, _ in outcome.searches if status == 200]
    fig["search_load_p50"], fig["search_load_p95"], fig["search_load_max"] = summary3(ok, (50, 95))
    statuses = Counter(status for _, status, _ in outcome.searches)
    fig["search_load_n"] = ", ".join(f"{s or 'no reply'}: {n}" for s, n in sorted(statuses.items()))
    qturns = outcome.turns
    fig["turn_load_p50"], fig["turn_load_p95"], fig["turn_load_max"] = summary3(
        [t.turn_ms for t in qturns if t.terminals], (50, 95)
    )
    fig["ask_load_p50"], fig["ask_load_p95"], _ = summary3([t.ask_ms for t in qturns if t.ask_ms == t.ask_ms], (50, 95))
    fig["questions_ended"] = f"{len(qturns)} of {args.questions}"
    fig["questions_one_terminal"] = sum(1 for t in qturns if t.terminals == 1 and t.last in TERMINAL)
    fig["question_ends"] = ", ".join(
        f"{k} {v}" for k, v in sorted(Counter(t.last or t.error or "none" for t in qturns).items())
    )

    for phase in ("idle", "alone", "load", "drain"):
        values = prober.samples.get(phase, [])
        fig[f"healthz_{phase}_p50"], fig[f"healthz_{phase}_p99"], fig[f"healthz_{phase}_max"] = summary3(
            values, (50, 99)
        )
    fig["healthz_failures"] = prober.failures
    load_end = outcome.began_wall + outcome.seconds
    during = [(at, took) for at, took in getattr(prober, "timeline", []) if outcome.began_wall <= at <= load_end]
    start, end = outcome.uploads[0].window
    slow = [(at, took) for at, took in during if took > 1000]
    fig["healthz_slow"] = (
        f"{len(slow)} (of which sent during the large upload's POST: {sum(1 for at, _ in slow if start <= at <= end)})"
    )
    worst = sorted(during, key=lambda p: -p[1])[:5]
    fig["healthz_worst"] = ", ".join(
        f"{'timeout' if took == float('inf') else f'{took / 1000:.1f} s'} at +{at - outcome.began_wall:.0f} s"
        for at, took in worst
    )
    fig["search_worst"] = ", ".join(
        f"{ms / 1000:.2f} s at +{at - outcome.began_wall:.0f} s" for ms, _, at in sorted(outcome.searches)[::-1][:5]
    )
    fig["large_post_window"] = f"+{start - outcome.began_wall:.0f} s to +{end - outcome.began_wall:.0f} s"

    large, smalls = outcome.uploads[0], outcome.uploads[1:]
    fig["large_upload"] = (
        f"{large.status or large.error or 'no reply'} in {large.accept_s:.1f} s, {large.chunks} chunks, "
        f"{large.embedded} embedded at the end ({large.final or '-'})"
    )
    indexed = [u for u in smalls if u.final == "indexed"]
    refused = [u for u in smalls if u.final == "refused"]
    fig["small_indexed"] = f"{len(indexed)} of {len(smalls)} (refused {len(refused)}, failed "
    fig["small_indexed"] += (
        f"{sum(1 for u in smalls if u.final == 'failed')}, no reply {sum(1 for u in smalls if u.error and not u.status)})"
    )
    fig["small_accept_p50"], fig["small_accept_max"] = _p50_max([u.accept_s for u in smalls if u.status])
    fig["small_indexed_p50"], fig["small_indexed_max"] = _p50_max([u.indexed_s for u in indexed])
    return fig


def _p50_max(values: list[float]) -> tuple[float, float]:
    return (percentile(values, 50), max(values)) if values else (float("nan"), float("nan"))


# Output ------------------------------------------------------------------------------------------------------

# (label, key, goal, decimals)
ROWS: list[tuple[str, str, str, int]] = [
    ("reader gap p50, readers alone (ms)", "gap_alone_p50", "", 1),
    ("reader gap p99, readers alone (ms)", "gap_alone_p99", "", 1),
    ("reader gap max, readers alone (ms)", "gap_alone_max", "", 0),
    ("reader gap p50, under load (ms)", "gap_load_p50", "", 1),
    ("reader gap p99, under load (ms)", "gap_load_p99", f"<= {GOAL_GAP_P99_MS:.0f}", 1),
    ("reader gap max, under load (ms)", "gap_load_max", "", 0),
    ("gaps measured alone / under load", "gap_alone_n", "", 0),
    ("", "gap_load_n", "", 0),
    ("gap p99 between two answer chunks, alone / load", "answer_gap_alone_p99", "", 1),
    ("", "answer_gap_load_p99", "", 1),
    ("gaps over 50 ms between (frames), readers alone", "slow_pairs_alone", "", 0),
    ("  under load", "slow_pairs_load", "", 0),
    ("search p50 idle (ms)", "search_idle_p50", "", 1),
    ("search p95 idle (ms)", "search_idle_p95", "", 1),
    ("search p50 under load (ms)", "search_load_p50", "", 1),
    ("search p95 under load (ms)", "search_load_p95", "", 1),
    ("search p95 under load / idle", "search_ratio", f"<= {GOAL_SEARCH_RATIO:.0f}", 2),
    ("search max under load (ms)", "search_load_max", "", 0),
    ("  the slowest (since the load began)", "search_worst", "", 0),
    ("searches idle", "search_idle_n", "", 0),
    ("searches under load (status: count)", "search_load_n", "", 0),
    ("turn p50 idle (202 -> terminal, ms)", "turn_idle_p50", "", 0),
    ("turn p95 idle (ms)", "turn_idle_p95", "", 0),
    ("turn p50 under load (ms)", "turn_load_p50", "", 0),
    ("turn p95 under load (ms)", "turn_load_p95", "", 0),
    ("turn max under load (ms)", "turn_load_max", "", 0),
    ("ask p50 under load (POST -> 202, ms)", "ask_load_p50", "", 0),
    ("ask p95 under load (ms)", "ask_load_p95", "", 0),
    ("/healthz p50 idle (ms)", "healthz_idle_p50", "", 1),
    ("/healthz p99 idle (ms)", "healthz_idle_p99", "", 1),
    ("/healthz max idle (ms)", "healthz_idle_max", "", 0),
    ("/healthz p50 under load (ms)", "healthz_load_p50", "", 1),
    ("/healthz p99 under load (ms)", "healthz_load_p99", "", 1),
    ("/healthz max under load (ms)", "healthz_load_max", "", 0),
    ("/healthz max, readers alone / drain (ms)", "healthz_alone_max", "", 0),
    ("", "healthz_drain_max", "", 0),
    ("/healthz probes without a 200", "healthz_failures", "0", 0),
    ("/healthz probes over 1 s under load", "healthz_slow", "", 0),
    ("  the slowest (since the load began)", "healthz_worst", "", 0),
    ("  the large upload's POST (since the load began)", "large_post_window", "", 0),
    ("server CPU, readers alone (% of one core)", "cpu_alone", "", 0),
    ("server CPU under load (% of one core)", "cpu_load", "", 0),
    ("model + readers CPU, readers alone (% of one core)", "cpu_clients_alone", "", 0),
    ("server VmRSS before the load (MiB)", "rss_before", "", 0),
    ("server VmRSS peak, sampled (MiB)", "rss_peak", "", 0),
    ("server VmHWM at the end (MiB)", "rss_hwm", "", 0),
    ("server VmRSS after the drain (MiB)", "rss_after", "", 0),
    ("load phase (s)", "load_s", "", 0),
    ("load deadline reached", "deadline_hit", "no", 0),
    ("NOTHING LOST", "", "", 0),
    ("questions ended (of asked)", "questions_ended", "", 0),
    ("questions with exactly one terminal frame", "questions_one_terminal", "all", 0),
    ("questions' ends", "question_ends", "", 0),
    ("reader turns", "reader_turns", "", 0),
    ("reader turns with exactly one terminal frame", "reader_one_terminal", "all", 0),
    ("reader turns' ends", "reader_ends", "", 0),
    ("reader turns whose answer text arrived whole", "reader_text_whole", "all", 0),
    ("reader turns whose frame ids increased", "reader_ids_increasing", "all", 0),
    ("frames whose id skipped (coalesced catch-up)", "reader_jumps", "", 0),
    ("reader turns cut by the benchmark (drain)", "reader_cut", "0", 0),
    ("readers' failed asks or reads", "reader_errors", "0", 0),
    ("  most frequent", "reader_error_kinds", "", 0),
    ("large upload", "large_upload", "", 0),
    ("small uploads indexed", "small_indexed", "all", 0),
    ("small upload accepted p50 / max (s)", "small_accept_p50", "", 2),
    ("", "small_accept_max", "", 2),
    ("small upload indexed p50 / max (s)", "small_indexed_p50", "", 1),
    ("", "small_indexed_max", "", 1),
]


def cell(value: Any, decimals: int) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return "-" if value != value else f"{value:,.{decimals}f}"
    return str(value)


def print_report(columns: list[tuple[str, dict[str, Any]]], args: argparse.Namespace) -> None:
    for _, fig in columns:
        fig["search_ratio"] = fig.get("search_load_p95", float("nan")) / fig.get("search_idle_p95", float("nan"))
    names = [name for name, _ in columns]
    ratio = len(columns) == 2
    header = ["figure", "goal", *names] + (["after/before"] if ratio else [])
    lines: list[list[str]] = []
    for label, key, goal, decimals in ROWS:
        if not key:
            lines.append([label, "", *[""] * len(columns)] + ([""] if ratio else []))
            continue
        values = [fig.get(key) for _, fig in columns]
        row = [label or "", goal, *[cell(v, decimals) for v in values]]
        if ratio:
            a, b = values
            if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a and a == a and b == b:
                row.append(f"{b / a:.2f}")
            else:
                row.append("")
        lines.append(row)
    widths = [max(len(header[i]), *(len(line[i]) for line in lines)) for i in range(len(header))]
    fmt = "  ".join(f"{{:{'<' if i < 2 else '>'}{w}}}" for i, w in enumerate(widths))
    print()
    print(
        f"mixed load: {args.readers} readers ({args.reader_pieces} pieces {args.piece_ms:g} ms apart, "
        f"stream.embedded_batch_max_delay_ms {'as configured' if args.batch_ms < 0 else args.batch_ms}), {args.uploads} uploads "
        f"(one of {args.large_mb:g} MiB, {args.upload_concurrency} at a time), {args.questions} questions "
        f"({args.question_concurrency} at a time), a search every {args.search_interval_ms:g} ms; "
        f"{os.cpu_count()} CPUs"
    )
    print(fmt.format(*header))
    print(fmt.format(*["-" * w for w in widths]))
    for line in lines:
        print(fmt.format(*line).rstrip())


# Chunked bodies ----------------------------------------------------------------------------------------------


async def chunked_body(
    host: str, port: int, path: str, key: str | None, total: int, stop: asyncio.Event
) -> dict[str, Any]:
    """One client: a ``total``-byte chunked body sent until the reply's status line arrives."""
    reader, writer = await asyncio.open_connection(host, port)
    head = f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
    if key is not None:
        head += f"X-API-Key: {key}\r\n"
    writer.write((head + "\r\n").encode())
    started = time.monotonic()

    async def status_line() -> str:
        return (await reader.readline()).decode(errors="replace").strip()

    reply = asyncio.create_task(status_line())
    chunk = b'{"query": "' + b"a" * (CHUNK_BYTES - 11)
    sent = 0
    try:
        while sent < total and not reply.done() and not stop.is_set():
            writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            await writer.drain()
            sent += len(chunk)
            chunk = b"a" * CHUNK_BYTES
        if reply.done():
            outcome = "the reply came before the body's end"
        elif stop.is_set():
            outcome = "stopped (server memory over the cap)"
        else:
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            outcome = "sent whole"
    except (ConnectionError, OSError) as exc:
        outcome = f"connection closed while sending ({type(exc).__name__})"
    try:
        line = await asyncio.wait_for(reply, timeout=120 if outcome == "sent whole" else 5)
    except (TimeoutError, ConnectionError, OSError):
        line = ""
    writer.close()
    with contextlib.suppress(ConnectionError, OSError):
        await writer.wait_closed()
    parts = line.split()
    status = parts[1] if len(parts) > 1 else "no reply"
    return {"status": status, "sent": sent, "seconds": time.monotonic() - started, "outcome": outcome}


def run_chunked(repo: Path, args: argparse.Namespace) -> None:
    label = "chunked"
    print(
        f"chunked bodies: {args.chunked_bodies} clients at once, each a {CHUNKED_BODY_BYTES / 2**20:.0f} MiB chunked body "
        f"to POST /api/v1/knowledge-search, with the API key and then without; {os.cpu_count()} CPUs; {repo}"
    )
    with tempfile.TemporaryDirectory(prefix="ragline-chunked-") as tmp_name:
        tmp = Path(tmp_name)
        process = start_server(repo, tmp, "http://127.0.0.1:9/v1", {})
        assert process.proc is not None
        host, port = process.url.removeprefix("http://").split(":")
        try:
            with Memory(process.proc.pid) as memory, Prober(process.url, PROBE_S) as prober:
                rows = []
                for name, key in (("with the key", process.api_key), ("without a key", None)):
                    before = memory.mark()
                    say(label, f"round {name}: start, load {load()}, VmRSS {before:.0f} MiB")
                    prober.phase = name
                    results = asyncio.run(_chunked_round(host, int(port), key, memory, args))
                    peak = memory.peak
                    prober.phase = "after " + name
                    after = memory.read()
                    say(label, f"round {name}: end, load {load()}")
                    rows.append((name, before, peak, after, results))
                hwm = memory.read("VmHWM")
        finally:
            process.stop()
    print()
    print(
        "| round | statuses | bytes sent per client when the reply came (p50 / max) | s to the reply (p50 / max) "
        "| VmRSS before / peak / after (MiB) | /healthz p50 / max (ms) |"
    )
    print("|---|---|---|---|---|---|")
    for name, before, peak, after, results in rows:
        statuses = Counter(r["status"] for r in results)
        outcomes = Counter(r["outcome"] for r in results)
        sent = [float(r["sent"]) for r in results]
        secs = [float(r["seconds"]) for r in results]
        health = prober.samples.get(name, [])
        print(
            f"| {name} | {', '.join(f'{s}: {n}' for s, n in sorted(statuses.items()))} "
            f"| {percentile(sent, 50) / 2**20:.2f} / {max(sent) / 2**20:.2f} MiB "
            f"| {percentile(secs, 50):.2f} / {max(secs):.2f} "
            f"| {before:.0f} / {peak:.0f} / {after:.0f} "
            f"| {percentile(health, 50):.1f} / {max(health, default=float('nan')):.0f} |"
        )
        print(f"|   client side | {'; '.join(f'{o}: {n}' for o, n in outcomes.items())} | | | | |")
    print(f"server VmHWM at the end: {hwm:.0f} MiB; /healthz probes without a 200: {prober.failures}; load {load()}")


async def _chunked_round(
    host: str, port: int, key: str | None, memory: Memory, args: argparse.Namespace
) -> list[dict[str, Any]]:
    stop = asyncio.Event()

    async def guard() -> None:
        while not stop.is_set():
            if memory.read() > args.rss_cap_mb:
                stop.set()
            await asyncio.sleep(0.1)

    watcher = asyncio.create_task(guard())
    results = await asyncio.gather(
        *(
            chunked_body(host, port, "/api/v1/knowledge-search", key, CHUNKED_BODY_BYTES, stop)
            for _ in range(args.chunked_bodies)
        )
    )
    stop.set()
    await watcher
    return list(results)


# Main --------------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=ROOT, help="the checkout that serves (its .venv)")
    parser.add_argument("--compare", type=Path, metavar="BEFORE_REPO", help="run BEFORE_REPO, then --repo")
    parser.add_argument("--chunked-bodies", type=int, default=0, metavar="N")
    parser.add_argument("--readers", type=int, default=50)
    parser.add_argument("--uploads", type=int, default=20)
    parser.add_argument("--questions", type=int, default=50)
    parser.add_argument("--large-mb", type=float, default=19.9, help="MiB of the first upload")
    parser.add_argument("--upload-concurrency", type=int, default=3)
    parser.add_argument("--question-concurrency", type=int, default=5)
    parser.add_argument("--search-interval-ms", type=float, default=200)
    parser.add_argument("--reader-pieces", type=int, default=200)
    parser.add_argument("--piece-ms", type=float, default=25)
    parser.add_argument(
        "--batch-ms", type=int, default=-1, help="stream.embedded_batch_max_delay_ms (-1: as configured)"
    )
    parser.add_argument("--idle-searches", type=int, default=30)
    parser.add_argument("--idle-turns", type=int, default=5)
    parser.add_argument("--idle-s", type=float, default=10)
    parser.add_argument("--alone-s", type=float, default=10)
    parser.add_argument("--load-deadline-s", type=float, default=300)
    parser.add_argument("--drain-s", type=float, default=60)
    parser.add_argument("--rss-cap-mb", type=float, default=4000)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--serve-model", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_model:
        serve_model(args)
        return
    began = time.monotonic()
    print(f"load average at the start: {load()}", flush=True)
    if args.chunked_bodies:
        run_chunked(args.repo.resolve(), args)
        print(f"total {time.monotonic() - began:.0f} s; load average at the end: {load()}")
        return
    model = ModelProcess(args)
    columns: list[tuple[str, dict[str, Any]]] = []
    try:
        if args.compare is not None:
            columns.append(("before", run_mixed("before", args.compare.resolve(), model.url, model.pid, args)))
            columns.append(("after", run_mixed("after", args.repo.resolve(), model.url, model.pid, args)))
        else:
            columns.append(
                (args.repo.resolve().name, run_mixed("run", args.repo.resolve(), model.url, model.pid, args))
            )
    finally:
        model.stop()
    print_report(columns, args)
    if args.compare is not None:
        print(f"before: {args.compare.resolve()}; after: {args.repo.resolve()}")
    print(f"total {time.monotonic() - began:.0f} s; load average at the end: {load()}")


if __name__ == "__main__":
    main()
