"""A gate on document extraction inside the sandboxes: ``ragline.ingest.extract.extract`` waits until the test
opens it, so a test controls how long reading a file takes — here, longer than anything the caller waits for.

Installed by ``sandbox/sitecustomize.py`` (loaded by file path) when ``SANDBOX_EXTRACTION_GATE`` names a
directory: once ``ragline.ingest.extract`` is imported, its ``extract`` first writes ``started-<function>-<pid>``
there, then waits until the file ``open`` exists. The test side is :class:`ExtractionGate`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

_MODULE = "ragline.ingest.extract"
# How often a held extraction looks whether the gate is open (the condition it waits on is the file).
_POLL_S = 0.05


class ExtractionGate:
    """The test's side: where extraction started, and opening the gate."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)

    def started(self) -> list[str]:
        """The functions in which an extraction reached the gate, in the order they did."""
        marks = sorted(self.directory.glob("started-*"), key=lambda p: p.stat().st_mtime_ns)
        return [p.read_text(encoding="utf-8") for p in marks]

    def open(self) -> None:
        (self.directory / "open").touch()


def _gated(extract: Any, directory: Path) -> Any:
    def extract_when_open(filename: str, raw: bytes) -> Any:
        function = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
        mark = directory / f"started-{function}-{os.getpid()}-{time.monotonic_ns()}"
        mark.write_text(function, encoding="utf-8")
        while not (directory / "open").exists():
            time.sleep(_POLL_S)
        return extract(filename, raw)

    return extract_when_open


class _Finder:
    """Wraps the extract module's loader so that its ``extract`` is gated as soon as the module is executed."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != _MODULE:
            return None
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return spec
        loader, directory = spec.loader, self.directory
        execute = loader.exec_module

        def exec_module(module: Any) -> None:
            execute(module)
            module.extract = _gated(module.extract, directory)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install(directory: str) -> None:
    """Gate ``extract`` in this process (called by the sandboxes' sitecustomize)."""
    import sys

    sys.meta_path.insert(0, _Finder(Path(directory)))
