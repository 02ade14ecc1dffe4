"""Precompiled bytecode in the CoreLayer, or compiling at every cold start: what each costs, measured.

    .venv/bin/python bench/layer_bytecode.py            # --runs 3; builds twice on first use (~5 minutes)

Lambda's /opt is read-only, so a layer without ``.pyc`` files is compiled in every fresh sandbox (INIT), and one
with them is larger (Lambda allows 250 MiB unzipped for a function and its layers). This builds the CoreLayer
with ``layers/core/Makefile`` as ``sam build`` does — for python3.12 on aarch64, the deployed artifact, whose sizes
are measured — and for python3.12 on this machine's architecture, whose cold starts are timed with a python3.12
(pyenv's, or ``--python``), both cached under ``build/bench-layer/``. Three variants of each:

- ``none``: as built (no bytecode: every cold start compiles what it imports);
- ``init``: bytecode for the top-level packages a function's INIT imports from the layer (found by the ``none``
  runs: every module of the packages any of the five functions loads);
- ``all``: bytecode for everything in the layer.

Cold start is each function's handler import plus its runtime build (``tests/support/function_process.py``'s
child), in fresh processes with ``PYTHONDONTWRITEBYTECODE=1`` (read-only /opt) and the function's template
environment; CPU seconds are the process's own (what Lambda's fraction of a vCPU stretches), wall seconds on this
shared machine. Medians of ``--runs``; all variants in one run, with their ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.function_process import code_dir, environment, function_ids  # noqa: E402
from tests.support.lambdas import SANDBOX_DIR  # noqa: E402
from tests.support.layer import built_layer  # noqa: E402

CACHE = ROOT / "build" / "bench-layer"
ARM64 = "--platform manylinux_2_34_aarch64 --platform manylinux_2_28_aarch64 --platform manylinux2014_aarch64"
LAMBDA_LIMIT_MIB = 250

CHILD = r"""
import json, sys, time
cpu, wall = time.process_time(), time.perf_counter()
import app
for name in ("runtime", "asgi_handler", "worker", "sweeper"):
    if hasattr(app, name):
        getattr(app, name)()
        break
layer = sys.argv[1]
loaded = sorted({m.__name__.split(".")[0] for m in list(sys.modules.values())
                 if (getattr(m, "__file__", None) or "").startswith(layer)})
print(json.dumps({"cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall, "loaded": loaded}))
"""


def build(name: str, platforms: str, python: str) -> Path:
    target = CACHE / name
    if (target / ".complete").exists():
        return target / "python"
    shutil.rmtree(target, ignore_errors=True)
    subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-C",
            str(ROOT / "layers" / "core"),
            "build-CoreLayer",
            f"ARTIFACTS_DIR={target}",
            f"PYTHON={sys.executable}",
            "PYTHON_VERSION=3.12",
            f"PLATFORMS={platforms}",
            f"BYTECODE_PYTHON={python}",  # the variants below drop it and compile their own
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    (target / ".complete").touch()
    return target / "python"


def size(layer: Path) -> tuple[float, int]:
    files = [p for p in layer.rglob("*") if p.is_file() and not p.is_symlink()]
    return sum(p.stat().st_size for p in files) / 2**20, len(files)


def drop_bytecode(layer: Path) -> None:
    for cache in list(layer.rglob("__pycache__")):
        shutil.rmtree(cache)


def compile_layer(layer: Path, python: str, packages: list[str] | None) -> None:
    """Bytecode (python3.12's) for ``packages`` of the layer, or for all of it."""
    targets = (
        [layer] if packages is None else [layer / p if (layer / p).is_dir() else layer / f"{p}.py" for p in packages]
    )
    code = "import compileall, sys; ok = all(compileall.compile_file(t, quiet=2) if t.endswith('.py') else compileall.compile_dir(t, quiet=2, workers=0) for t in sys.argv[1:]); sys.exit(0)"
    subprocess.run([python, "-c", code, *(str(t) for t in targets if t.exists())], check=True)


def cold_start(function_id: str, python: str, layer: Path, runtime: Path) -> dict:
    env = environment(function_id)
    env["PYTHONPATH"] = os.pathsep.join([str(SANDBOX_DIR), str(layer), str(runtime)])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    done = subprocess.run(
        [python, "-c", CHILD, str(layer)],
        cwd=code_dir(function_id),
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--python", default=str(Path.home() / ".pyenv" / "versions" / "3.12.1" / "bin" / "python3.12"))
    args = parser.parse_args()
    python = args.python
    bare = CACHE / "python312"
    if not (bare / "bin" / "python").exists():
        subprocess.run([python, "-m", "venv", "--without-pip", str(bare)], check=True)
    python = str(bare / "bin" / "python")
    runtime = built_layer() / "runtime"  # boto3 and botocore: pure Python, as the Lambda runtime's
    deployed = build("arm64-py312", ARM64, python)
    local = build("local-py312", "", python)
    load = os.getloadavg()[0]

    functions = function_ids()
    timings: dict[str, dict[str, list[dict]]] = {}
    drop_bytecode(local)
    timings["none"] = {f: [cold_start(f, python, local, runtime) for _ in range(args.runs)] for f in functions}
    init_packages = sorted({p for runs in timings["none"].values() for r in runs for p in r["loaded"]})
    compile_layer(local, python, init_packages)
    timings["init"] = {f: [cold_start(f, python, local, runtime) for _ in range(args.runs)] for f in functions}
    compile_layer(local, python, None)
    timings["all"] = {f: [cold_start(f, python, local, runtime) for _ in range(args.runs)] for f in functions}
    drop_bytecode(local)

    sizes = {}
    drop_bytecode(deployed)
    sizes["none"] = size(deployed)
    compile_layer(deployed, python, init_packages)
    sizes["init"] = size(deployed)
    compile_layer(deployed, python, None)
    sizes["all"] = size(deployed)
    drop_bytecode(deployed)

    print(
        f"CoreLayer for python3.12 on aarch64 (layers/core/Makefile), unzipped; Lambda's limit {LAMBDA_LIMIT_MIB} MiB"
    )
    print("| bytecode | size MiB | files | + MiB |")
    print("|---|---:|---:|---:|")
    for variant, (mib, files) in sizes.items():
        print(f"| {variant} | {mib:.1f} | {files:,} | {mib - sizes['none'][0]:+.1f} |")
    print()
    print(
        f"cold start (handler import + runtime build), python3.12 on {os.uname().machine}, median of {args.runs} fresh "
        f"processes, PYTHONDONTWRITEBYTECODE=1; load average {load:.1f} → {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs"
    )
    print(
        "| function | none CPU s | init CPU s | all CPU s | init/none | all/none | none wall s | init wall s | all wall s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for f in functions:
        cpu = {v: statistics.median(r["cpu_s"] for r in timings[v][f]) for v in timings}
        wall = {v: statistics.median(r["wall_s"] for r in timings[v][f]) for v in timings}
        print(
            f"| {f} | {cpu['none']:.2f} | {cpu['init']:.2f} | {cpu['all']:.2f} | {cpu['init'] / cpu['none']:.2f} | "
            f"{cpu['all'] / cpu['none']:.2f} | {wall['none']:.2f} | {wall['init']:.2f} | {wall['all']:.2f} |"
        )
    print()
    print(f"packages an INIT imports from the layer ({len(init_packages)}): {' '.join(init_packages)}")


if __name__ == "__main__":
    main()
