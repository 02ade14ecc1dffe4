"""docs/architecture.md's package diagram is the layers contract's (scripts/architecture.py writes it)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("architecture", ROOT / "scripts" / "architecture.py")
assert spec is not None
assert spec.loader is not None
architecture = importlib.util.module_from_spec(spec)
spec.loader.exec_module(architecture)


def test_the_diagram_is_the_layers_contract() -> None:
    committed = architecture.committed_block(architecture.DOC.read_text(encoding="utf-8"))
    assert committed == architecture.block(), "docs/architecture.md is stale: run python scripts/architecture.py"


def test_every_package_of_the_library_is_in_the_diagram() -> None:
    packages = {p.name for p in (ROOT / "layers" / "core" / "ragline").iterdir() if (p / "__init__.py").is_file()}
    modules = {p.stem for p in (ROOT / "layers" / "core" / "ragline").glob("*.py") if p.stem != "__init__"}
    drawn = {name for tier in architecture.tiers() for name in tier}
    assert packages | modules == drawn


def test_the_readme_links_the_map() -> None:
    assert "docs/architecture.md" in (ROOT / "README.md").read_text(encoding="utf-8")
