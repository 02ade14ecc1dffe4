"""One dependency list: the Lambda layer's requirements are generated from pyproject.toml and agree with it,
and what an installation leaves out is refused with a reason instead of failing."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import layer_requirements  # noqa: E402


def _name(spec: str) -> str:
    return re.split(r"[<>=~!\[; ]", spec.strip(), maxsplit=1)[0].lower()


def _specifier(spec: str) -> str:
    return re.sub(r"^[A-Za-z0-9_.-]+(\[[^\]]*\])?", "", spec.split(";")[0]).strip()


def test_the_layer_requirements_are_generated_from_pyproject():
    assert (ROOT / "layers" / "core" / "requirements.txt").read_text(encoding="utf-8") == layer_requirements.render()
    check = subprocess.run([sys.executable, str(ROOT / "scripts" / "layer_requirements.py"), "--check"], check=False)
    assert check.returncode == 0


def test_a_stale_file_is_reported(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    text = (
        (ROOT / "pyproject.toml")
        .read_text(encoding="utf-8")
        .replace('"neo4j>=5.0",\n    # Only', '"neo4j>=6.0",\n    # Only')
    )
    pyproject.write_text(text, encoding="utf-8")
    assert layer_requirements.render(pyproject) != layer_requirements.render()


def test_every_run_time_dependency_is_in_the_layer_or_left_out_with_a_reason():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = {_name(spec): spec for spec in project["dependencies"]}
    layer = {_name(spec): spec for spec in project["optional-dependencies"]["lambda"]}
    left_out = set(layer_requirements.LEFT_OUT)
    assert not left_out & set(layer), "a package is both in the layer and left out"
    assert set(runtime) <= set(layer) | left_out, sorted(set(runtime) - set(layer) - left_out)
    # Constraints on transitive dependencies are allowed; otherwise the layer installs ragline's dependencies.
    assert set(layer) - set(runtime) <= {"huggingface-hub"}
    for name, spec in layer.items():
        if name not in runtime:
            continue
        # Narrower than pyproject's at most (an upper bound for size): its lowest version satisfies both.
        lowest = re.search(r"(?:>=|==)\s*([0-9][0-9.]*)", spec)
        assert lowest is not None, spec
        assert SpecifierSet(_specifier(runtime[name])).contains(lowest.group(1)), (spec, runtime[name])


def _without(module):
    real = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        return None if name == module else real(name, *args, **kwargs)

    return find_spec


@pytest.mark.parametrize(
    ("module", "call", "kind"),
    [
        ("pypdfium2", lambda: __import__("ragline.ingest.extract", fromlist=["x"]).extract_pdf(b"%PDF-1.4"), "PDF"),
        ("trafilatura", lambda: __import__("ragline.ingest.extract", fromlist=["x"]).extract_html(b"<p>x</p>"), "HTML"),
        ("openpyxl", lambda: __import__("ragline.tables.parse", fromlist=["x"]).parse_xlsx(b"PK"), "Excel"),
    ],
)
def test_a_file_type_whose_parser_is_not_installed_is_refused_as_a_type(monkeypatch, module, call, kind):
    from ragline.ingest.extract import UnsupportedFileType

    monkeypatch.setattr(importlib.util, "find_spec", _without(module))
    with pytest.raises(UnsupportedFileType, match=f"{kind}.*{module}.*not installed"):
        call()


def test_web_pages_read_without_trafilatura(monkeypatch):
    from ragline.web.fetch import readable_text

    monkeypatch.setattr(importlib.util, "find_spec", _without("trafilatura"))
    page = b"<html><head><title>t</title><style>p{}</style></head><body><h1>Tea</h1><script>x()</script><p>Brew at 80 &deg;C.</p></body></html>"
    assert readable_text(page, "text/html", "utf-8") == "Tea\nBrew at 80 °C."
