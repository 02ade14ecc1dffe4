"""One lock of exact versions (layers/core/requirements.lock, written by scripts/lock_versions.py from
pyproject.toml) serves the test virtualenv and the CoreLayer: it is current with pyproject, each pin satisfies
pyproject's specifiers, the layer's requirements are all locked for the layer, and the virtualenv the tests run
in has exactly the locked versions (a drift fails here). The built layer's versions are checked where it is
built (tests/integration/test_aws_function_imports.py)."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import lock_versions  # noqa: E402


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_the_lock_is_current_with_pyproject():
    digest, _ = lock_versions.read_lock()
    assert digest == lock_versions.pyproject_digest(), "run python scripts/lock_versions.py"
    check = subprocess.run([sys.executable, str(ROOT / "scripts" / "lock_versions.py"), "--check"], check=False)
    assert check.returncode == 0


def test_a_changed_dependency_list_makes_the_lock_stale(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8").replace('"numpy>=1.26"', '"numpy>=1.27"')
    pyproject.write_text(text, encoding="utf-8")
    assert lock_versions.pyproject_digest(pyproject) != lock_versions.pyproject_digest()


def test_every_pin_satisfies_what_pyproject_asks_of_it():
    _, pins = lock_versions.read_lock()
    project = _project()
    lists = [project["dependencies"], *(project["optional-dependencies"][e] for e in ("lambda", "dev", "ocr"))]
    checked = 0
    for spec in (s for specs in lists for s in specs):
        requirement = Requirement(spec)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        name = lock_versions.canonical(requirement.name)
        assert name in pins, f"{name} is not locked"
        assert requirement.specifier.contains(pins[name][0], prereleases=True), (spec, pins[name][0])
        checked += 1
    assert checked > 40


def test_the_layer_requirements_are_all_locked_for_the_layer():
    _, pins = lock_versions.read_lock()
    for line in (ROOT / "layers" / "core" / "requirements.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name = lock_versions.canonical(re.split(r"[<>=~!\[; ]", line, maxsplit=1)[0])
            assert "layer" in pins[name][1], name


def test_the_test_virtualenv_has_exactly_the_locked_versions():
    _, pins = lock_versions.read_lock()
    drifted = {}
    for name, (version, where) in pins.items():
        if "venv" not in where:
            continue
        installed = importlib.metadata.version(name)
        if installed != version:
            drifted[name] = (installed, version)
    assert not drifted, f"installed ≠ locked (make install): {drifted}"
