#!/usr/bin/env python
"""Write one lock of exact versions for the CoreLayer and the test virtualenv, resolved from pyproject.toml.

    python scripts/lock_versions.py            # resolves with pip (needs the package index), writes the lock
    python scripts/lock_versions.py --check    # exits 1 when pyproject's dependency lists changed since
    python scripts/lock_versions.py --keep     # the same, every package still needed kept at its locked version

The layer is resolved first, as ``layers/core/Makefile`` installs it (``requirements.txt``: binary wheels, jieba
from its source), for this interpreter (the deployed-stack tests import the layer built for it) and then, with
those versions as constraints, for python3.12 on aarch64 (Lambda): a version must exist for both (numpy 2.5 has
no wheel for the tests' Python 3.11, so the layer takes 2.4). The virtualenv (``.[dev,ocr]`` and the OCR library
the Makefile adds) is resolved last, with the layer's versions as constraints, so a package both install has one
version. Both installs take the lock as constraints (``-c``): the layer tested is the one
deployed (tests/unit/test_versions_lock.py fails when the lock, pyproject.toml or the virtualenv drift apart).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
LOCK = ROOT / "layers" / "core" / "requirements.lock"
LAYER_REQUIREMENTS = ROOT / "layers" / "core" / "requirements.txt"
# What layers/core/Makefile installs for the CoreLayer (keep in step with its PLATFORMS and SOURCE_ONLY).
LAYER_PLATFORMS = ("manylinux_2_34_aarch64", "manylinux_2_28_aarch64", "manylinux2014_aarch64")
LAYER_PYTHON = "3.12"
SOURCE_ONLY = ("jieba",)
# The virtualenv: make install's extras, and what the Makefile adds with --no-deps (RAPIDOCR_VERSION).
VENV_EXTRAS = "dev,ocr"
VENV_EXTRA_PINS = ("rapidocr-onnxruntime==1.4.4",)
_HASHED_LISTS = ("dependencies", "lambda", "dev", "ocr")


def canonical(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pyproject_digest(pyproject: Path = PYPROJECT) -> str:
    """What the lock was resolved from: pyproject's run-time list and the extras both installs use."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    lists = {"dependencies": project["dependencies"]}
    lists.update({name: project["optional-dependencies"][name] for name in _HASHED_LISTS[1:]})
    lists["venv-extra-pins"] = list(VENV_EXTRA_PINS)
    return hashlib.sha256(json.dumps(lists, sort_keys=True).encode()).hexdigest()[:16]


# Constraints every resolution takes besides its own (``--keep``: the current lock's pins).
_KEPT: list[str] = []


def _resolve(arguments: list[str]) -> dict[str, str]:
    """pip's resolution of ``arguments`` (no install): canonical name → version."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--dry-run", "--ignore-installed"]
        subprocess.run([*command, "--report", str(report), *_KEPT, *arguments], check=True)
        found = json.loads(report.read_text(encoding="utf-8"))["install"]
    return {canonical(i["metadata"]["name"]): i["metadata"]["version"] for i in found}


def _requirement_lines(path: Path) -> list[str]:
    lines = [line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines()]
    return [line for line in lines if line]


def _constraints(path: Path, pins: dict[str, str]) -> str:
    path.write_text("".join(f"{n}=={v}\n" for n, v in sorted(pins.items())), encoding="utf-8")
    return str(path)


def resolve_layer() -> dict[str, str]:
    lines = _requirement_lines(LAYER_REQUIREMENTS)
    binary = [line for line in lines if canonical(re.split(r"[<>=~!\[; ]", line, maxsplit=1)[0]) not in SOURCE_ONLY]
    source = [line for line in lines if line not in binary]
    with tempfile.TemporaryDirectory() as scratch:
        requirements = Path(scratch) / "binary.txt"
        requirements.write_text("\n".join(binary) + "\n", encoding="utf-8")
        here = _resolve(["--only-binary=:all:", "-r", str(requirements)])
        platforms = [argument for platform in LAYER_PLATFORMS for argument in ("--platform", platform)]
        target = ["--implementation", "cp", "--python-version", LAYER_PYTHON, "--only-binary=:all:"]
        constraints = _constraints(Path(scratch) / "here.txt", here)
        pins = _resolve([*platforms, *target, "-c", constraints, "-r", str(requirements)])
    pins.update(_resolve(["--no-deps", *source]))
    return pins


def resolve_venv(layer: dict[str, str]) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as scratch:
        constraints = _constraints(Path(scratch) / "layer.txt", layer)
        pins = _resolve(["-c", constraints, "-e", f"{ROOT}[{VENV_EXTRAS}]"])
        pins.update(_resolve(["--no-deps", *VENV_EXTRA_PINS]))
    pins.pop("ragline", None)
    return pins


def render(layer: dict[str, str], venv: dict[str, str], digest: str) -> str:
    lines = [
        "# Generated by scripts/lock_versions.py from pyproject.toml; do not edit (run the script again).",
        f"# pyproject-digest: {digest}",
        "# One version of each package: the CoreLayer installs the lines marked layer (python3.12 on aarch64 in Lambda,",
        "# this machine's Python in the deployed-stack tests), the test virtualenv those marked venv; both install with",
        "# this file as constraints (-c).",
    ]
    for name in sorted(set(layer) | set(venv)):
        if name in layer and name in venv and layer[name] != venv[name]:
            raise SystemExit(f"{name}: {layer[name]} in the layer, {venv[name]} in the virtualenv")
        where = " ".join(w for w, pins in (("layer", layer), ("venv", venv)) if name in pins)
        lines.append(f"{name}=={layer.get(name) or venv[name]}  # {where}")
    return "\n".join(lines) + "\n"


def read_lock(path: Path = LOCK) -> tuple[str, dict[str, tuple[str, set[str]]]]:
    """The lock's pyproject digest and its pins: name → (version, {"layer", "venv"})."""
    digest = ""
    pins: dict[str, tuple[str, set[str]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# pyproject-digest:"):
            digest = line.split(":", 1)[1].strip()
        elif line and not line.startswith("#"):
            spec, _, where = line.partition("#")
            name, _, version = spec.strip().partition("==")
            pins[name] = (version, set(where.split()))
    return digest, pins


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail when pyproject.toml changed since the lock")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep every package still needed at its locked version (a dependency removed or added changes only that)",
    )
    args = parser.parse_args()
    if args.check:
        digest, _ = read_lock()
        if digest != pyproject_digest():
            print(f"{LOCK.relative_to(ROOT)} is stale: run python scripts/lock_versions.py", file=sys.stderr)
            return 1
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        if args.keep:
            _, pins = read_lock()
            _KEPT.extend(["-c", _constraints(Path(scratch) / "kept.txt", {n: v for n, (v, _) in pins.items()})])
        layer = resolve_layer()
        venv = resolve_venv(layer)
    LOCK.write_text(render(layer, venv, pyproject_digest()), encoding="utf-8")
    print(f"{LOCK.relative_to(ROOT)}: {len(layer)} layer packages", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
