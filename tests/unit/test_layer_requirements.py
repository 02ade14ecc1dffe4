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
        .replace('"opensearch-py>=2.6,<3"', '"opensearch-py>=2.7,<3"')
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
    assert set(layer) - set(runtime) <= {"huggingface-hub", "lxml-html-clean"}
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
    from ragline.files.reading import UnsupportedFileType

    monkeypatch.setattr(importlib.util, "find_spec", _without(module))
    with pytest.raises(UnsupportedFileType, match=f"{kind}.*{module}.*not installed"):
        call()


def test_web_pages_read_without_trafilatura(monkeypatch):
    from ragline.web.fetch import readable_text

    monkeypatch.setattr(importlib.util, "find_spec", _without("trafilatura"))
    page = b"<html><head><title>t</title><style>p{}</style></head><body><h1>Tea</h1><script>x()</script><p>Brew at 80 &deg;C.</p></body></html>"
    assert readable_text(page, "text/html", "utf-8") == "Tea\nBrew at 80 °C."


def test_html_extraction_never_loads_babel_locale_data(monkeypatch):
    """The CoreLayer drops babel's CLDR locale data (35 MiB; layers/core/Makefile): reading an HTML upload or a
    fetched page — main text, title, date, language — must never load it."""
    import babel.localedata

    from ragline.ingest.extract import extract_html
    from ragline.web.fetch import readable_text

    loaded: list[str] = []

    def refuse(name, *args, **kwargs):
        loaded.append(name)
        raise AssertionError(f"babel locale data loaded: {name}")

    monkeypatch.setattr(babel.localedata, "load", refuse)
    monkeypatch.setattr(babel.localedata, "exists", refuse)
    page = (
        '<html lang="de"><head><title>Tee</title><meta name="date" content="2024-03-01">'
        '<link rel="canonical" href="https://example.de/de/tee"></head><body><nav>Menü</nav><article>'
        "<h1>Tee kochen</h1><p>Grüner Tee zieht bei 70 bis 80 Grad zwei bis drei Minuten, veröffentlicht am "
        "3. März 2024.</p><table><tr><td>Sorte</td><td>Grad</td></tr><tr><td>Oolong</td><td>90</td></tr></table>"
        "</article><footer>Impressum</footer></body></html>"
    ).encode()
    extracted = extract_html(page)
    assert "Grüner Tee zieht" in extracted.text
    assert extracted.title.startswith("Tee")
    assert "Grüner Tee zieht" in readable_text(page, "text/html", None)
    assert loaded == []


def test_the_layer_names_lxml_html_clean_which_html_extraction_needs(monkeypatch):
    """trafilatura's HTML path imports lxml.html.clean, a separate package since lxml 5.2 (justext asks for it as
    lxml's extra, which pip before 24 does not find in lxml 6): the layer lists it itself, or a layer built
    with an older pip reads no HTML."""
    import sys

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "lxml-html-clean" in {_name(spec) for spec in project["optional-dependencies"]["lambda"]}

    class Hidden:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] == "lxml_html_clean":
                raise ImportError(f"No module named {name!r}")
            return None

    for name in [
        m for m in sys.modules if m.startswith(("lxml_html_clean", "lxml.html.clean", "justext", "trafilatura"))
    ]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [Hidden(), *sys.meta_path])
    from ragline.ingest.extract import extract_html

    with pytest.raises(ImportError, match="lxml_html_clean"):
        extract_html(b"<html><body><article><p>Tea is brewed at 80 degrees.</p></article></body></html>")
