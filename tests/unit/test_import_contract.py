"""The import contract ([tool.importlinter] in pyproject.toml, `lint-imports` in make lint) holds for the
library, and fails on an import it forbids: a stage importing the server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(library_parent: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(library_parent)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_library_keeps_the_contract():
    run = _lint_imports(ROOT / "layers" / "core")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def test_a_stage_importing_the_server_breaks_it(tmp_path):
    copy = tmp_path / "ragline"
    shutil.copytree(ROOT / "layers" / "core" / "ragline", copy, ignore=shutil.ignore_patterns("__pycache__", "assets"))
    stage = copy / "pipeline" / "chunk_rerank.py"
    stage.write_text(stage.read_text() + "\nfrom ragline.server.errors import not_found  # noqa: E402,F401\n")
    run = _lint_imports(tmp_path)
    assert run.returncode != 0
    assert "stages import no server" in run.stdout
    assert "ragline.pipeline.chunk_rerank -> ragline.server.errors" in run.stdout


def test_a_cycle_between_packages_breaks_the_layers(tmp_path):
    # The cycle step 20 removed: the stores reading reranking's settings, while reranking reads the stores' models.
    copy = tmp_path / "ragline"
    shutil.copytree(ROOT / "layers" / "core" / "ragline", copy, ignore=shutil.ignore_patterns("__pycache__", "assets"))
    store = copy / "store" / "citations.py"
    store.write_text(store.read_text() + "\nfrom ragline.reranking.mmr import jaccard  # noqa: E402,F401\n")
    run = _lint_imports(tmp_path)
    assert run.returncode != 0
    assert "the library's packages in layers BROKEN" in run.stdout
    assert "ragline.store is not allowed to import ragline.reranking" in run.stdout


def test_a_new_package_must_be_given_a_tier(tmp_path):
    copy = tmp_path / "ragline"
    shutil.copytree(ROOT / "layers" / "core" / "ragline", copy, ignore=shutil.ignore_patterns("__pycache__", "assets"))
    (copy / "orphan").mkdir()
    (copy / "orphan" / "__init__.py").write_text('"""A package no tier names."""\n')
    run = _lint_imports(tmp_path)
    assert run.returncode != 0
    assert "ragline.orphan" in run.stdout
