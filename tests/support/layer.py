"""The CoreLayer as ``layers/core/Makefile`` builds it, for this machine's Python and architecture, built once and
cached under ``build/layer/``: what the deployed-stack sandboxes import instead of the test virtualenv.

The build is the deployed one with two variables changed (``PYTHON_VERSION`` and ``PLATFORMS``: this
interpreter's); the versions are the lock's (``layers/core/requirements.lock``), the same the Lambda layer
installs. ragline itself is not taken from the build but from the checkout (a symlink in the sandboxes' /opt), so
the cached build does not go stale as the code changes: it is keyed by the lock, the requirements, the Makefile,
the Python version and the architecture. Beside it, ``runtime/`` holds what the Lambda python runtime brings
(boto3, at the lock's version), which the layer leaves out, and ``python/`` an interpreter with nothing installed
(a virtualenv of this Python without pip): the sandboxes run it, so nothing of the test virtualenv is importable.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.cfn import ROOT

LAYER_DIR = ROOT / "layers" / "core"
CACHE = ROOT / "build" / "layer"
LOCK = LAYER_DIR / "requirements.lock"
# What the python3.12 Lambda runtime has in /var/runtime and the layer therefore leaves out.
RUNTIME_PACKAGES = ("boto3",)


def layer_key() -> str:
    """What the cached build depends on (a different one is built when any of it changes)."""
    digest = hashlib.sha256()
    for path in (LOCK, LAYER_DIR / "requirements.txt", LAYER_DIR / "Makefile"):
        digest.update(path.read_bytes())
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}-{platform.machine()}"
    return f"{tag}-{digest.hexdigest()[:12]}"


def _lock_pin(name: str) -> str:
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        if line.startswith(f"{name}=="):
            return line.split("#", 1)[0].strip()
    raise LookupError(f"{name} is not in {LOCK}")


def _build(target: Path) -> None:
    python_version = f"{sys.version_info.major}.{sys.version_info.minor}"
    subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-C",
            str(LAYER_DIR),
            "build-CoreLayer",
            f"ARTIFACTS_DIR={target / 'layer'}",
            f"PYTHON={sys.executable}",
            f"PYTHON_VERSION={python_version}",
            "PLATFORMS=",  # this machine's own
        ],
        check=True,
    )
    # The checkout's ragline is mounted instead (see the module's docstring).
    shutil.rmtree(target / "layer" / "python" / "ragline")
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-warn-conflicts", "--only-binary=:all:"]
    runtime = ["--target", str(target / "runtime"), "-c", str(LOCK), *(_lock_pin(n) for n in RUNTIME_PACKAGES)]
    subprocess.run([*pip, *runtime], check=True)
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(target / "python")], check=True)


def built_layer() -> Path:
    """The cached build's directory: ``layer/python`` (the CoreLayer's packages), ``runtime`` (boto3) and
    ``python`` (the bare interpreter)."""
    home = CACHE / layer_key()
    done = home / ".complete"
    if done.exists():
        return home
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / ".lock").open("w") as lock:
        # Another test process may be building the same one: it is built once.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return home
        scratch = CACHE / f".building-{os.getpid()}"
        shutil.rmtree(scratch, ignore_errors=True)
        try:
            _build(scratch)
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(home)
            scratch.rename(home)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        done.touch()
    return home


def layer_path(opt_python: Path) -> str:
    """The sandboxes' module path after the function's own code, as Lambda's: /opt/python (here ragline from the
    checkout, then the built layer's packages), then the runtime's own (boto3)."""
    home = built_layer()
    return os.pathsep.join(str(p) for p in (opt_python, home / "layer" / "python", home / "runtime"))


def interpreter() -> str:
    """The sandboxes' Python: this one, with nothing installed (the layer and the runtime dir are its packages)."""
    return str(built_layer() / "python" / "bin" / "python")
