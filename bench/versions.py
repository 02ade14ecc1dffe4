"""Another version of a ragline module, loaded from its file, so a benchmark measures before and after in one run."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def load_version(path: Path, name: str) -> ModuleType:
    """The module in ``path`` (e.g. ``git show REV:layers/core/ragline/event/cancel.py > /tmp/old.py``) as ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
