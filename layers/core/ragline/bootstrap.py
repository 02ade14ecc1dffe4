"""First start of the embedded runtime: the default tenant and its API key, the sample knowledge base."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from ragline.container import Container
from ragline.ingest.language import resolve_embedding_model
from ragline.ingest.service import SUPPORTED_SUFFIXES
from ragline.store.models import KnowledgeBase, Tenant

logger = logging.getLogger(__name__)

DEFAULT_TENANT = "default"
SAMPLE_KB = "sample"
_KEY_FILE = "api_key"


def ensure_default_tenant(container: Container) -> tuple[Tenant, str]:
    """``RAGLINE_API_KEY`` if set; else the key stored in the data directory; else a new one, stored there."""
    settings = container.settings
    key_file = settings.data_dir / _KEY_FILE
    tenant = container.tenants.by_name(DEFAULT_TENANT)
    key = settings.api_key or (key_file.read_text().strip() if key_file.is_file() else "")
    if tenant is None:
        tenant, key = container.tenants.create(DEFAULT_TENANT, key or None)
    elif key:
        container.tenants.add_key(tenant.id, key)
    else:
        from ragline.store.models import generate_key

        key = generate_key()
        container.tenants.add_key(tenant.id, key)
    if not settings.api_key and not key_file.is_file():
        key_file.parent.mkdir(parents=True, exist_ok=True)
        key_file.touch(mode=0o600)
        key_file.write_text(key + "\n")
    return tenant, key


def document_paths(paths: list[Path]) -> list[Path]:
    """Files named, and supported files under directories named, in a stable order."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUPPORTED_SUFFIXES))
        elif path.is_file():
            found.append(path)
        else:
            raise FileNotFoundError(str(path))
    return found


def ensure_knowledge_base(container: Container, tenant: Tenant, name: str, embedding_model: str = "") -> KnowledgeBase:
    """The knowledge base named ``name``, created if missing.

    With ``embedding_model`` (an id or a short name such as ``minilm`` / ``e5``) when given, else automatic (ingestion
    picks the model the documents' language needs). ``ValueError`` for an unknown model, or a knowledge base that keeps
    another one.
    """
    model = resolve_embedding_model(embedding_model, container.models) if embedding_model else ""
    kb = container.knowledge.knowledge_base_by_name(tenant.id, name)
    if kb is None:
        kb = container.knowledge.create_knowledge_base(
            tenant.id, name, model or container.models.default_embedder_id, embedding_model_auto=not model
        )
    elif model and model != kb.embedding_model:
        raise ValueError(
            f"knowledge base {name!r} embeds with {kb.embedding_model}; a knowledge base keeps one model"
            f" (PUT /api/v1/knowledge-bases/{kb.id}/embedding-model changes it and re-embeds)"
        )
    return kb


def load_sample(
    container: Container, tenant: Tenant, sample_dir: Path, on_file: Callable[[Path, int], None] | None = None
) -> KnowledgeBase:
    """The sample knowledge base; documents already present (same content) are skipped."""
    kb = ensure_knowledge_base(container, tenant, SAMPLE_KB)
    for path in document_paths([sample_dir]):
        result = container.ingest.ingest_file(kb, path)
        if on_file is not None:
            on_file(path, result.chunk_count)
    return kb


def find_sample_dir() -> Path | None:
    """The sample knowledge base's folder: ``RAGLINE_SAMPLE_DIR``, else ``samples/kb`` above the working directory or the package."""
    env = os.environ.get("RAGLINE_SAMPLE_DIR")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    for parent in (Path.cwd(), *here.parents):
        candidate = parent / "samples" / "kb"
        if candidate.is_dir():
            return candidate
    return None
