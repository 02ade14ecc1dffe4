"""Writes the package diagram of docs/architecture.md from the layers contract in pyproject.toml.

``python scripts/architecture.py`` rewrites the block between the diagram's markers; tests/unit/test_architecture_doc.py
fails when the committed diagram no longer matches the contract (a package added, moved or renamed).
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
BEGIN, END = "<!-- layers:begin (scripts/architecture.py) -->", "<!-- layers:end -->"


def tiers() -> list[list[str]]:
    """The packages of the layers contract, tier by tier from the top."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    return [[name.strip() for name in tier.split(":")] for tier in contract["layers"]]


def diagram() -> str:
    """A mermaid flowchart: one row per tier, each tier importing only the tiers below it."""
    layered = tiers()
    lines = ["```mermaid", "flowchart TB"]
    for number, tier in enumerate(layered):
        lines.append(f'    subgraph T{number}["tier {number}"]')
        lines.append("        direction LR")
        lines.extend(f"        {name}[ragline.{name}]" for name in tier)
        lines.append("    end")
    lines.extend(f"    T{number} --> T{number + 1}" for number in range(len(layered) - 1))
    lines.append("```")
    return "\n".join(lines)


def block() -> str:
    """The diagram with its markers, as the document holds it."""
    return f"{BEGIN}\n{diagram()}\n{END}"


def committed_block(text: str) -> str:
    """The diagram block of the document as committed."""
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[start:end]


def main() -> int:
    text = DOC.read_text(encoding="utf-8")
    DOC.write_text(text.replace(committed_block(text), block()), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
