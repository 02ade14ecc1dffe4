"""``ragline``: serve, ingest, ask, search tenants."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ragline.config import Settings
from ragline.modelcontext.citations import replace_citations

app = typer.Typer(
    help="ragline: knowledge-base question answering with streamed, resumable answers.",
    pretty_exceptions_show_locals=False,
)
tenant_app = typer.Typer(help="Tenants and API keys.")
app.add_typer(tenant_app, name="tenant")
console = Console()
err = Console(stderr=True)


def _container(settings: Settings | None = None) -> Any:
    from ragline.container import Container
    from ragline.observability import configure_logging

    settings = settings or Settings()
    configure_logging(os.environ.get("RAGLINE_LOG_LEVEL", "WARNING"))
    return Container.embedded(settings)


def start_banner(host: str, port: int, key: str) -> list[str]:
    """What ``ragline serve`` prints: where it serves, the key, and commands to paste, each on one line."""
    url = f"http://{host}:{port}"
    return [
        f"[bold]ragline[/] serving on {url}  (the chat page: {url}/ · API docs: {url}/docs)",
        f"API key: [bold]{key}[/]",
        "Try, in another terminal:",
        '  [cyan]ragline ask "How do I resume a stream?"[/]',
        f"  [cyan]curl -H 'X-API-Key: {key}' {url}/api/v1/knowledge-bases[/]",
    ]


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default 8000, or RAGLINE_PORT).")] = None,
    load_sample: Annotated[bool, typer.Option(help="Load the sample knowledge base first.")] = False,
    web_app: Annotated[
        Path | None, typer.Option(help="Serve this built WeKnora web app (its dist/) at / instead of ragline's page.")
    ] = None,
) -> None:
    """Serve the HTTP API and the embedded runtime on one process."""
    from ragline.bootstrap import ensure_default_tenant, find_sample_dir
    from ragline.bootstrap import load_sample as load_sample_kb
    from ragline.observability import configure_logging
    from ragline.server.embedded import serve_embedded

    settings = Settings()
    if web_app is not None:
        settings.web_app_dir = web_app
    configure_logging(settings.log_level)
    container = _container(settings)
    tenant, key = ensure_default_tenant(container)
    if load_sample:
        sample_dir = find_sample_dir()
        if sample_dir is None:
            err.print("[yellow]no samples/kb directory found; skipping the sample knowledge base[/]")
        else:
            console.print(f"Loading the sample knowledge base from {sample_dir} ...")
            load_sample_kb(container, tenant, sample_dir)
    bind_host, bind_port = host or settings.host, port or settings.port
    for line in start_banner(bind_host, bind_port, key):
        # soft_wrap: a command is never broken over two lines, so it pastes as it is whatever the terminal.
        console.print(line, soft_wrap=True, highlight=False)
    serve_embedded(container, bind_host, bind_port)


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or directories (.md, .txt, ...).")],
    kb: Annotated[str, typer.Option("--kb", help="Knowledge base name (created if missing).")],
    embedding_model: Annotated[
        str,
        typer.Option(
            "--embedding-model",
            help="The model of a knowledge base this creates (minilm, e5, or a model id); by default the"
            " documents' language chooses it (MiniLM for English, multilingual e5 for Chinese or mixed).",
        ),
    ] = "",
    wait: Annotated[
        bool,
        typer.Option(
            "--wait/--no-wait",
            help="Wait until the vectors are computed (a progress bar), or return once the documents are"
            " keyword-searchable and leave the vectors to a background process.",
        ),
    ] = True,
) -> None:
    """Ingest documents into a knowledge base: keyword-searchable at once, vectors with a progress bar."""
    from ragline.bootstrap import document_paths, ensure_default_tenant, ensure_knowledge_base
    from ragline.ingest.service import TooManyChunks, UnsupportedFile
    from ragline.store.models import DocumentStatus

    container = _container()
    tenant, _ = ensure_default_tenant(container)
    try:
        base = ensure_knowledge_base(container, tenant, kb, embedding_model)
    except ValueError as exc:
        err.print(f"[red]--embedding-model: {exc}[/]")
        raise typer.Exit(2) from None
    try:
        files = document_paths(paths)
    except FileNotFoundError as exc:
        err.print(f"[red]no such file or directory: {exc}[/]")
        raise typer.Exit(2) from None
    limit = container.config.limits.max_upload_bytes
    accepted = []
    with _progress() as progress:
        reading = progress.add_task(f"Reading into {kb}", total=len(files))
        for path in files:
            try:
                if path.stat().st_size > limit:
                    raise ValueError(f"larger than the upload limit ({limit} bytes)")
                result = container.ingest.accept_bytes(base, path.name, path.read_bytes(), source=str(path))
            except (ValueError, UnsupportedFile, TooManyChunks) as exc:
                progress.console.print(f"[yellow]skipped {path}: {exc}[/]")
            else:
                accepted.append(result)
                note = " (already ingested)" if result.duplicate else ""
                progress.console.print(f"{path}: {result.chunk_count} chunks{note}")
            progress.advance(reading)
    pending = [r.document for r in accepted if not r.duplicate and r.document.status == DocumentStatus.PENDING]
    total_chunks = sum(r.chunk_count for r in accepted)
    if pending and not wait:
        log = _start_background_indexing(container.settings)
        console.print(
            f"[green]accepted[/]: {len(accepted)} files, {total_chunks} chunks in knowledge base {kb!r};"
            f" keyword search works now. Vectors of {len(pending)} documents are being computed in the"
            f" background (log: {log})."
        )
        return
    documents = _index_with_progress(container, pending) if pending else []
    failed = [d for d in documents if d.status == DocumentStatus.FAILED]
    for document in failed:
        err.print(f"[red]{document.filename or document.title}: failed: {document.reason}[/]")
    console.print(f"[green]done[/]: {len(files)} files, {total_chunks} chunks in knowledge base {kb!r}")
    if failed:
        raise typer.Exit(1)


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


def _index_with_progress(container: Any, documents: list[Any]) -> list[Any]:
    """Vectors of ``documents`` with a progress bar in chunks; Ctrl-C leaves them pending, resumable."""
    import threading

    from ragline.ingest.service import IngestCancelled

    remaining = sum(max(0, d.chunk_count - d.embedded_count) for d in documents)
    stop = threading.Event()
    with _progress() as progress:
        task = progress.add_task("Computing vectors", total=remaining)
        try:
            return list(
                container.ingest.index_documents(
                    documents,
                    cancel=stop,
                    progress=lambda done, total: progress.update(task, completed=done, total=total),
                )
            )
        except (KeyboardInterrupt, IngestCancelled):
            stop.set()
            err.print(
                "[yellow]interrupted: the documents stay keyword-searchable and pending; `ragline index` or"
                " `ragline serve` finishes their vectors[/]"
            )
            raise typer.Exit(130) from None


def _start_background_indexing(settings: Settings) -> Path:
    """A detached ``ragline index`` process (it outlives this command), logging to the data directory."""
    import subprocess
    import sys

    log = settings.data_dir / "indexing.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        subprocess.Popen(
            [sys.executable, "-m", "ragline.cli", "index"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "RAGLINE_DATA_DIR": str(settings.data_dir)},
        )
    return log


@app.command()
def index(
    reembed: Annotated[
        bool,
        typer.Option(
            "--reembed",
            help="First move each knowledge base whose model language detection chose to today's model for its "
            "language (after a better model was installed), re-embedding its documents.",
        ),
    ] = False,
    kb: Annotated[str | None, typer.Option("--kb", help="With --reembed: only this knowledge base.")] = None,
) -> None:
    """Compute the vectors of every pending document, with progress.

    Compute the vectors of every pending document (left by `ragline ingest --no-wait` or a stopped server), with
    progress. A knowledge base keeps the model it was embedded with until it is re-embedded explicitly: here with
    ``--reembed``, or through the API's model switch.
    """
    from ragline.store.models import DocumentStatus

    container = _container()
    if reembed:
        _adopt_preferred_models(container, kb)
    seen: set[str] = set()
    indexed = failed = 0
    while True:
        pending = [d for d in container.knowledge.pending_documents(limit=256) if d.id not in seen]
        if not pending:
            break  # none left, or only ones this run could not move (their knowledge base is gone)
        seen.update(d.id for d in pending)
        for document in _index_with_progress(container, pending):
            indexed += document.status == DocumentStatus.INDEXED
            failed += document.status == DocumentStatus.FAILED
    console.print(f"[green]done[/]: {indexed} documents indexed, {failed} failed")


def _adopt_preferred_models(container: Any, name: str | None) -> None:
    """``index --reembed``: every (or the named) knowledge base whose model detection chose takes today's."""
    bases = [b for t in container.tenants.list() for b in container.knowledge.list_knowledge_bases(t.id)]
    bases = [b for b in bases if name is None or b.name == name]
    if name is not None and not bases:
        err.print(f"[red]no knowledge base named {name!r}[/]")
        raise typer.Exit(2)
    for base in bases:
        updated = container.ingest.adopt_preferred_model(base)
        if updated is not None:
            console.print(f"{base.name}: {base.embedding_model} → {updated.embedding_model}, re-embedding")
        else:
            why = "its model was chosen" if not base.embedding_model_auto else "already on today's model"
            console.print(f"{base.name}: keeps {base.embedding_model} ({why})")


@tenant_app.command("create")
def tenant_create(
    name: Annotated[str, typer.Argument(help="Tenant name.")],
    aws: Annotated[
        str | None,
        typer.Option(
            "--aws",
            help="Create it in a deployed stack: the stack's name (its TenantsTableName output) or the tenants "
            "table's name. Uses your AWS credentials and region (AWS_ENDPOINT_URL for LocalStack).",
        ),
    ] = None,
) -> None:
    """Create a tenant and print its API key (shown once)."""
    if aws is not None:
        from ragline.serverless.tenants import StackNotFound, aws_tenant_store

        try:
            tenant, key = aws_tenant_store(aws).create(name)
        except StackNotFound as error:
            err.print(f"[red]{error}[/]")
            raise typer.Exit(2) from None
        console.print(f"tenant {tenant.name} ({tenant.id})")
        console.print(key)
        return
    container = _container()
    tenant, key = container.tenants.create(name)
    console.print(f"tenant {tenant.name} ({tenant.id})")
    console.print(key)


@dataclass
class CitedSource:
    """One cited document (or web page) in the printed answer: its number, label and cited chunks."""

    number: int
    label: str
    chunks: list[str] = field(default_factory=list)


def _count(number: int, noun: str) -> str:
    """A count with its noun: "1 passage", "3 passages"."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


class AnswerPrinter:
    """Renders a stream of StreamResponse frames for a terminal: progress, answer, numbered citations.

    Citations are numbered per document, as the page's reference cards are: two sentences quoted from one
    document are both [1], and its entry lists the passages they came from (section, page).
    """

    def __init__(self, out: Console) -> None:
        """A printer writing to ``out``."""
        self.out = out
        self.citations: dict[str, CitedSource] = {}
        self.references: list[dict[str, Any]] = []
        self.answer: list[str] = []
        self.ended = ""
        self._quoted_notice = False

    def _reference_of(self, chunk_id: str) -> dict[str, Any] | None:
        for ref in self.references:
            if ref.get("id") == chunk_id or chunk_id in (ref.get("sub_chunk_id") or []):
                return ref
        return None

    def _cite_chunk(self, doc: str, chunk_id: str) -> str:
        ref = self._reference_of(chunk_id)
        key = str(ref.get("knowledge_id") or "") if ref else ""
        if not key:  # a chunk no reference lists (a neighbour merge joined in): its document by title
            same = next((r for r in self.references if r.get("knowledge_title") == doc and r.get("knowledge_id")), None)
            key = str(same["knowledge_id"]) if same else f"doc:{doc}"
        return self._cite(key, doc or "source", chunk_id)

    def _cite(self, key: str, label: str, chunk_id: str = "") -> str:
        if key not in self.citations:
            self.citations[key] = CitedSource(len(self.citations) + 1, label)
        cited = self.citations[key]
        if chunk_id and chunk_id not in cited.chunks:
            cited.chunks.append(chunk_id)
        return f"[{cited.number}]"

    def render_text(self, text: str) -> str:
        """``text`` with its citations replaced by numbered references (``[1]``), numbered in order of first citation."""
        return replace_citations(
            text,
            lambda doc, chunk_id, _kb_id: self._cite_chunk(doc, chunk_id),
            lambda url, title: self._cite(url, f"{title} <{url}>"),
        )

    def _where(self, chunk_id: str) -> str:
        """Where a cited chunk sits in its document: section and page, as far as the references say."""
        ref = self._reference_of(chunk_id)
        if ref is None:
            return ""
        parts = []
        page = (ref.get("chunk_metadata") or {}).get("page")
        if page:
            parts.append(f"p. {page}")
        if ref.get("header"):
            parts.append(str(ref["header"]))
        return " · ".join(parts)

    def handle(self, frame: dict[str, Any]) -> None:
        """Print one SSE frame of the answer: progress, thinking, answer text, or the end."""
        kind, content, data = frame.get("response_type"), frame.get("content", ""), frame.get("data") or {}
        if kind == "tool_call":
            self.out.print(f"[dim]… {data.get('tool_name', '')}[/]")
        elif kind == "tool_result":
            if data.get("tool_name") == "knowledge_search":
                passages = _count(data.get("count", 0), "passage")
                documents = _count(data.get("doc_count", 0), "document")
                self.out.print(
                    f"[dim]✓ {passages} from {documents} ({_count(data.get('candidate_count', 0), 'candidate')})[/]"
                )
        elif kind == "references":
            self.references = list(frame.get("knowledge_references") or [])
        elif kind == "thinking" and content:
            self.out.print(content, style="dim italic", end="")
        elif kind == "answer":
            if data.get("is_fallback") and not self.answer:
                self.out.print("[yellow](nothing relevant found in the knowledge base)[/]")
            if data.get("model_id") == "local:extractive" and not self._quoted_notice:
                self._quoted_notice = True
                self.out.print("[dim](quoted from the knowledge base: no generative model is configured)[/]")
            if content:
                self.answer.append(content)
                self.out.print(self.render_text(content), end="", markup=False, highlight=False)
            if frame.get("done") and data.get("truncated"):
                self.out.print("\n[yellow](the answer was cut by the output limit)[/]")
        elif kind == "error":
            self.out.print(f"\n[red]error in {data.get('stage', '?')}: {content}[/]")
            self.ended = "error"
        elif kind == "stop":
            self.out.print("\n[yellow](stopped)[/]")
            self.ended = "stop"
        elif kind == "complete":
            self.ended = "complete"

    def finish(self) -> None:
        """End the answer with its references: each cited source with where its passages come from."""
        self.out.print()
        if not self.citations:
            return
        retrieved = len({r.get("knowledge_id") for r in self.references if r.get("knowledge_id")})
        cited = sum(1 for key in self.citations if not key.startswith(("http://", "https://")))
        summary = f" ({cited} of {_count(retrieved, 'retrieved document')} cited)" if retrieved else ""
        self.out.print(f"\n[bold]References[/]{summary}")
        for source in sorted(self.citations.values(), key=lambda s: s.number):
            self.out.print(f"  [{source.number}] {source.label}", markup=False, highlight=False)
            for chunk_id in source.chunks:
                where = self._where(chunk_id)
                if where:
                    self.out.print(f"      {where}", markup=False, highlight=False)


async def _ask_http(url: str, key: str, query: str, kb: str | None) -> AsyncIterator[dict[str, Any]]:
    import httpx
    from httpx_sse import aconnect_sse

    headers = {"X-API-Key": key}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=httpx.Timeout(30, read=120)) as client:
        bases = (await client.get("/api/v1/knowledge-bases")).raise_for_status().json()["data"]
        kb_ids = [b["id"] for b in bases if kb is None or b["name"] == kb]
        if kb is not None and not kb_ids:
            raise typer.BadParameter(f"no knowledge base named {kb!r}")
        session = (await client.post("/api/v1/sessions", json={"knowledge_base_ids": kb_ids})).raise_for_status()
        async with aconnect_sse(
            client, "POST", f"/api/v1/knowledge-chat/{session.json()['data']['id']}", json={"query": query}
        ) as source:
            async for sse in source.aiter_sse():
                if not sse.data:
                    continue  # a ``: ping`` comment, which httpx-sse reports as an empty event after an ``id:``
                yield json.loads(sse.data)


async def _ask_local(query: str, kb: str | None) -> AsyncIterator[dict[str, Any]]:
    from ragline.bootstrap import ensure_default_tenant
    from ragline.runtime.turns import QuestionBody
    from ragline.server.embedded import build_runner
    from ragline.server.sse import frames

    container = _container()
    tenant, _ = ensure_default_tenant(container)
    bases = container.knowledge.list_knowledge_bases(tenant.id)
    kb_ids = [b.id for b in bases if kb is None or b.name == kb]
    if kb is not None and not kb_ids:
        raise typer.BadParameter(f"no knowledge base named {kb!r}")
    runner = build_runner(container)
    session = container.sessions.create_session(tenant.id, kb_ids)
    turn = await container.turns.accept(session, QuestionBody(query=query))
    await runner.launch(turn)
    async for frame in frames(
        container.stream,
        turn.key,
        0,
        container.config.stream,
        request_id=turn.request.request_id,
        session_id=session.id,
        assistant_message_id=turn.assistant_message.id,
    ):
        payload = frame.decode().split("data: ", 1)[1].strip()
        yield json.loads(payload)
    await runner.shutdown()


def _server_up(url: str) -> bool:
    import httpx

    try:
        return httpx.get(f"{url}/healthz", timeout=1.0).status_code == 200
    except httpx.HTTPError:
        return False


@app.command()
def ask(
    query: Annotated[str, typer.Argument(help="The question.")],
    kb: Annotated[str | None, typer.Option("--kb", help="Knowledge base name (default: all).")] = None,
    url: Annotated[str | None, typer.Option(help="Server URL (default: the local server if it runs).")] = None,
    local: Annotated[bool, typer.Option(help="Run in this process even if a server is running.")] = False,
) -> None:
    """Ask a question and stream the answer with its references."""
    settings = Settings()
    server = url or f"http://127.0.0.1:{settings.port}"
    printer = AnswerPrinter(console)

    async def run(frames: AsyncIterator[dict[str, Any]]) -> None:
        async for frame in frames:
            printer.handle(frame)

    if not local and (url is not None or _server_up(server)):
        key = settings.api_key or _stored_key(settings)
        if not key:
            err.print("[red]no API key: set RAGLINE_API_KEY[/]")
            raise typer.Exit(2)
        asyncio.run(run(_ask_http(server, key, query, kb)))
    else:
        asyncio.run(run(_ask_local(query, kb)))
    printer.finish()
    if printer.ended == "error":
        raise typer.Exit(1)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to search for.")],
    kb: Annotated[str | None, typer.Option("--kb", help="Knowledge base name (default: all).")] = None,
    top_k: Annotated[int, typer.Option("--top-k", min=1, max=200, help="How many passages.")] = 10,
    retrievers: Annotated[str, typer.Option(help="hybrid, vector or keyword.")] = "hybrid",
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
) -> None:
    """Ranked passages with their scores, through the same search path as a chat turn."""
    from ragline.bootstrap import ensure_default_tenant
    from ragline.runtime.search import SearchBody, result_view

    container = _container()
    tenant, _ = ensure_default_tenant(container)
    bases = [b for b in container.knowledge.list_knowledge_bases(tenant.id) if kb is None or b.name == kb]
    if not bases:
        err.print(f"[red]no knowledge base{f' named {kb!r}' if kb else ''}[/]")
        raise typer.Exit(2)
    body = SearchBody(query=query, knowledge_base_ids=[b.id for b in bases], top_k=top_k, retrievers=retrievers)
    results = [result_view(r) for r in asyncio.run(container.search.search(tenant.id, body))]
    if as_json:
        console.print_json(json.dumps(results))
        return
    for rank, item in enumerate(results, start=1):
        scores = ", ".join(f"{k} {v:.3f}" for k, v in item["scores"].items() if v is not None)
        console.print(f"[bold]{rank}. {item['knowledge_title']}[/] [dim]({item['score']:.4f}; {scores})[/]")
        snippet = " ".join(item["content"].split())
        console.print(f"   {snippet[:240]}{'…' if len(snippet) > 240 else ''}", markup=False, highlight=False)


def _stored_key(settings: Settings) -> str:
    path = settings.data_dir / "api_key"
    return path.read_text().strip() if path.is_file() else ""


if __name__ == "__main__":
    app()
