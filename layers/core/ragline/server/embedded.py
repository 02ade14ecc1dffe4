"""The embedded server: the HTTP API with turns running in this process."""

from __future__ import annotations

from fastapi import FastAPI

from ragline.container import Container
from ragline.runtime.embedded import LocalRunner
from ragline.server.app import create_app


def build_embedded_app(container: Container) -> FastAPI:
    runner = LocalRunner(container.orchestrator, container.stream, container.turns, container.config.stream)
    return create_app(container, runner, on_shutdown=runner.shutdown)
