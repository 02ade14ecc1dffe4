"""Cold start of each Lambda function: the time to import its handler module and to build its runtime, and the
packages that import pulls in, each measured in a fresh process with the function's own environment.

    .venv/bin/python bench/cold_start.py            # --runs 5

Each run starts ``python`` in the function's code directory with the environment template.yaml gives it
(resolved by tests/support/cfn.py against placeholder names; no AWS call is made), imports ``app`` as the
Lambda runtime would (INIT), then builds what the first invocation builds (the AwsRuntime: stores, clients,
the FastAPI app): ``tests/support/function_process.py``. Models load later, on the first embedding. What the
CoreLayer leaves out (scripts/layer_requirements.py) cannot be imported, as in the deployed-stack tests'
sandboxes, so a package this virtualenv has and the layer has not (duckdb, rich) is neither imported nor
timed. The figures are medians of ``--runs`` processes, side by side in one run; the machine's load average
is printed with them. A handler that imports FastAPI or uvicorn where it should not (pipeline_step) is
flagged (tests/integration/test_aws_function_imports.py fails on it).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.function_process import cold_start, function_ids  # noqa: E402

# Not to be imported by the function that runs the pipeline's steps (it serves no HTTP).
NOT_IN_PIPELINE_STEP = {"fastapi", "uvicorn", "starlette", "mangum", "sse-starlette"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    rows = []
    for function_id in function_ids():
        runs = [cold_start(function_id) for _ in range(args.runs)]
        dists = set(runs[-1]["distributions"])
        flagged = sorted(dists & NOT_IN_PIPELINE_STEP) if function_id == "PipelineStepFunction" else []
        rows.append(
            (
                function_id,
                statistics.median(float(r["import_s"]) for r in runs),
                statistics.median(float(r["build_s"]) for r in runs),
                sorted(dists),
                flagged,
            )
        )
    print(
        f"cold start, median of {args.runs} fresh processes per function (load average {load_before:.1f} → "
        f"{os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs)"
    )
    print("| function | import handler, ms | build runtime, ms | total, ms | distributions imported |")
    print("|---|---:|---:|---:|---:|")
    for function_id, imported, built, dists, _ in rows:
        print(
            f"| {function_id} | {imported * 1000:.0f} | {built * 1000:.0f} | {(imported + built) * 1000:.0f} | {len(dists)} |"
        )
    for function_id, _, _, dists, flagged in rows:
        print(f"{function_id}: {', '.join(dists)}")
        if flagged:
            print(f"  !! {function_id} imports {', '.join(flagged)}")


if __name__ == "__main__":
    main()
