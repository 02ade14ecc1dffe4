"""What this deployment is and runs (WeKnora's ``/system``): version, capabilities, parsers, storage.

Read-only and the same for every tenant; every answer says what ragline does here, never what it does not (WeKnora's
web app hides the pages of a capability reported unsupported).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from ragline import __version__
from ragline.container import Container
from ragline.ingest.extract import SUPPORTED_SUFFIXES
from ragline.ingest.images import IMAGE_SUFFIXES
from ragline.server.deps import ContainerDep, TenantDep
from ragline.server.routes.knowledge_bases import storage_provider
from ragline.server.views import Envelope
from ragline.store.db import SCHEMA_VERSION
from ragline.tables.parse import TABLE_SUFFIXES

router = APIRouter(prefix="/api/v1/system", tags=["system"])

_STARTED = time.time()
EDITION = "ragline"
# WeKnora's capability keys; a feature ragline has no part of is unsupported, with why.
_NOT_SERVED = "not_served_by_ragline"
_CAPABILITIES = {
    "organizations": False,
    "agents": True,
    "integrations.im": False,
    "integrations.embed": False,
    "integrations.api": True,
    "settings.mcp": False,
    "settings.websearch": False,
    "settings.vectorstore": False,
    "settings.storage": True,
    "settings.sandbox": False,
}
# WeKnora's storage engines; the deployment's own is the only one available.
_STORAGE_ENGINES = {
    "local": "Files under the data directory of this server",
    "minio": "MinIO object storage",
    "cos": "Tencent Cloud COS",
    "tos": "Volcengine TOS",
    "s3": "Amazon S3 (the deployment's state bucket)",
    "oss": "Alibaba Cloud OSS",
    "ks3": "Kingsoft KS3",
    "obs": "Huawei Cloud OBS",
}


class Capability(BaseModel):
    """Whether a WeKnora feature is served here, and why not."""

    supported: bool
    reason: str | None = None


class Capabilities(BaseModel):
    """The deployment's edition and WeKnora's feature switches."""

    edition: str
    capabilities: dict[str, Capability]


@router.get("/capabilities")
def capabilities(tenant: TenantDep) -> Envelope[Capabilities]:
    """Which of WeKnora's features this deployment serves (the web app hides the others)."""
    del tenant
    return Envelope(
        data=Capabilities(
            edition=EDITION,
            capabilities={
                name: Capability(supported=served, reason=None if served else _NOT_SERVED)
                for name, served in _CAPABILITIES.items()
            },
        )
    )


class SystemInfo(BaseModel):
    """WeKnora's system information, filled with what this deployment runs."""

    version: str
    edition: str
    commit_id: str = ""
    build_time: str = ""
    go_version: str = ""
    keyword_index_engine: str
    vector_store_engine: str
    graph_database_engine: str
    minio_enabled: bool = False
    db_version: str
    db_migration_error: str = ""
    started_at: str
    uptime_seconds: int


def _engines(container: Container) -> tuple[str, str, str]:
    engine = getattr(container.engine, "engine_name", "")
    if engine == "opensearch":
        keyword, vector = "opensearch", "opensearch"
    else:
        keyword, vector = "sqlite-fts5", "sqlite"
    graph = {"Neo4jGraphStore": "neo4j", "SqliteGraphStore": "sqlite"}.get(type(container.graph).__name__, "")
    return keyword, vector, graph


@router.get("/info")
def system_info(tenant: TenantDep, container: ContainerDep) -> Envelope[SystemInfo]:
    """Ragline's version, its search and graph engines, and how long this process has run."""
    del tenant
    keyword, vector, graph = _engines(container)
    return Envelope(
        data=SystemInfo(
            version=__version__,
            edition=EDITION,
            keyword_index_engine=keyword,
            vector_store_engine=vector,
            graph_database_engine=graph,
            db_version="dynamodb" if container.db is None else f"sqlite schema {SCHEMA_VERSION}",
            started_at=datetime.fromtimestamp(_STARTED, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            uptime_seconds=int(time.time() - _STARTED),
        )
    )


class ParserEngine(BaseModel):
    """A document reader, in WeKnora's capitalised field names (its Go struct has no JSON tags)."""

    model_config = ConfigDict(populate_by_name=True)
    name: str = Field(serialization_alias="Name")
    description: str = Field(serialization_alias="Description")
    file_types: list[str] = Field(serialization_alias="FileTypes")
    available: bool = Field(default=True, serialization_alias="Available")


class ParserEngines(Envelope[list[ParserEngine]]):
    """The readers and whether the (absent) remote document reader is connected."""

    docreader_addr: str = ""
    docreader_transport: str = ""
    connected: bool = False


def file_types(container: Container) -> list[str]:
    """The file types an upload may have here (images only with OCR)."""
    suffixes = set(SUPPORTED_SUFFIXES) | set(TABLE_SUFFIXES)
    if container.ingest.reads_images:
        suffixes |= IMAGE_SUFFIXES
    return sorted(s.lstrip(".") for s in suffixes)


@router.get("/parser-engines")
def parser_engines(tenant: TenantDep, container: ContainerDep) -> ParserEngines:
    """Ragline's own readers, in-process: one engine for every file type it reads (no remote document reader)."""
    del tenant
    engine = ParserEngine(
        name="builtin",
        description="ragline's readers: Markdown, text, PDF (PDFium), Word, PowerPoint, EPUB, HTML, CSV/Excel"
        + (", images (OCR)" if container.ingest.reads_images else ""),
        file_types=file_types(container),
    )
    return ParserEngines(data=[engine])


class StorageEngine(BaseModel):
    """A storage engine and whether documents can be kept in it here."""

    name: str
    available: bool
    allowed: bool
    description: str


class StorageStatus(BaseModel):
    """WeKnora's storage engines; the one this deployment keeps files in is the only one available."""

    engines: list[StorageEngine]
    allowed_providers: list[str]
    minio_env_available: bool = False


@router.get("/storage-engine-status")
def storage_engine_status(tenant: TenantDep, container: ContainerDep) -> Envelope[StorageStatus]:
    """Where the files documents are made from are kept: ``local`` embedded, ``s3`` on AWS; no other engine."""
    del tenant
    own = storage_provider(container)
    engines = [
        StorageEngine(name=name, available=name == own, allowed=name == own, description=description)
        for name, description in _STORAGE_ENGINES.items()
    ]
    return Envelope(data=StorageStatus(engines=engines, allowed_providers=[own]))
