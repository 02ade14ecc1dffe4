"""Cold start of each Lambda function: the time to import its handler module and to build its runtime, and the
packages that import pulls in, each measured in a fresh process with the function's own environment.

    .venv/bin/python bench/cold_start.py            # --runs 5

Each run starts ``python`` in the function's code directory with the environment template.yaml gives it
(resolved by tests/support/cfn.py against placeholder names; no AWS call is made), imports ``app`` as the
Lambda runtime would (INIT), then builds what the first invocation builds (the AwsRuntime: stores, clients,
the FastAPI app). Models load later, on the first embedding. What the CoreLayer leaves out
(scripts/layer_requirements.py) cannot be imported, as in the deployed-stack tests' sandboxes, so a package
this virtualenv has and the layer has not (duckdb, rich) is neither imported nor timed. The figures are medians of ``--runs``
processes, side by side in one run; the machine's load average is printed with them. A handler that imports
FastAPI or uvicorn where it should not (pipeline_step) is flagged.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.cfn import Resolver, sam_transform  # noqa: E402
from tests.support.lambdas import SANDBOX_DIR  # noqa: E402
from tests.support.serverless import absent_modules  # noqa: E402

CHILD = r"""
import importlib.metadata, json, sys, time
started = time.perf_counter()
import app
imported = time.perf_counter()
if hasattr(app, "runtime"):
    app.runtime()
elif hasattr(app, "asgi_handler"):
    app.asgi_handler()
elif hasattr(app, "worker"):
    app.worker()
elif hasattr(app, "sweeper"):
    app.sweeper()
built = time.perf_counter()
top = {name.split(".")[0] for name in sys.modules}
owners = importlib.metadata.packages_distributions()
dists = sorted({d for name in top for d in owners.get(name, [])})
print(json.dumps({"import_s": imported - started, "build_s": built - imported, "distributions": dists}))
"""
# Not to be imported by the function that runs the pipeline's steps (it serves no HTTP).
NOT_IN_PIPELINE_STEP = {"fastapi", "uvicorn", "starlette", "mangum", "sse-starlette"}


def environment(resolver: Resolver, function_id: str) -> dict[str, str]:
    env = {k: v for k, v in resolver.environment(function_id).items() if k != "RAGLINE_CONFIG_DIR"}
    env.update(
        PATH=os.environ["PATH"],
        HOME=os.environ.get("HOME", "/tmp"),
        AWS_REGION="us-east-1",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_LAMBDA_FUNCTION_NAME=function_id,
        POWERTOOLS_TRACE_DISABLED="true",
        RAGLINE_CONFIG_DIR=str(ROOT / "config"),
        # The sandboxes' sitecustomize hides what the layer leaves out (no grant check: no AWS call is made).
        PYTHONPATH=f"{SANDBOX_DIR}:{ROOT / 'layers' / 'core'}",
        SANDBOX_ABSENT_MODULES=",".join(sorted(absent_modules())),
    )
    return env


def measure(code_dir: Path, env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD], cwd=code_dir, env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    from ragline.serverless.template_tables import load_template

    template = load_template(ROOT / "template.yaml")
    cfn = sam_transform(template)
    refs = {logical: f"bench-{logical}" for logical in cfn["Resources"]}
    attributes = {f"{logical}.Arn": f"arn:aws:bench:::{logical}" for logical in cfn["Resources"]}
    attributes.update(
        {
            "StreamReaderFunctionUrl.FunctionUrl": "https://reader.lambda-url.us-east-1.on.aws/",
            "SearchDomain.DomainEndpoint": "search-bench.us-east-1.es.amazonaws.com",
            "PipelineStateMachine.Name": "bench",
        }
    )
    resolver = Resolver(cfn, {}, refs, attributes)
    load_before = os.getloadavg()[0]
    rows = []
    for function_id, resource in template["Resources"].items():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        code_dir = ROOT / resource["Properties"]["CodeUri"]
        env = environment(resolver, function_id)
        runs = [measure(code_dir, env) for _ in range(args.runs)]
        dists = set(runs[-1]["distributions"])  # type: ignore[arg-type]
        flagged = sorted(dists & NOT_IN_PIPELINE_STEP) if function_id == "PipelineStepFunction" else []
        rows.append(
            (
                function_id,
                statistics.median(float(r["import_s"]) for r in runs),  # type: ignore[arg-type]
                statistics.median(float(r["build_s"]) for r in runs),  # type: ignore[arg-type]
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
