"""One Lambda function's INIT in a fresh process, without AWS: its handler imported from ``functions/*/app.py``
with the environment ``template.yaml`` gives it (resolved against placeholder names), run by a Python with nothing
installed and the CoreLayer built for this machine on its path (``layer.py``), then what its first invocation
builds. Used by ``bench/cold_start.py`` (how long) and the tests (what it imports); no AWS call is made.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any

from tests.support.cfn import ROOT, Resolver, sam_transform
from tests.support.lambdas import SANDBOX_DIR
from tests.support.layer import CACHE, interpreter, layer_path


def _opt_python() -> Path:
    """A directory holding only the checkout's ragline, as the CoreLayer's python/ holds the built copy."""
    opt = CACHE / "opt-python"
    if not (opt / "ragline").exists():
        opt.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # another test process made it meanwhile
            (opt / "ragline").symlink_to(ROOT / "layers" / "core" / "ragline")
    return opt


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
top = sorted({name.split(".")[0] for name in sys.modules})
owners = importlib.metadata.packages_distributions()
dists = sorted({d for name in top for d in owners.get(name, [])})
print(json.dumps({"import_s": imported - started, "build_s": built - imported, "modules": top, "distributions": dists}))
"""


@lru_cache(maxsize=1)
def _template() -> tuple[dict[str, Any], Resolver]:
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
    return template, Resolver(cfn, {}, refs, attributes)


def function_ids() -> list[str]:
    template, _ = _template()
    return [k for k, v in template["Resources"].items() if v["Type"] == "AWS::Serverless::Function"]


def code_dir(function_id: str) -> Path:
    template, _ = _template()
    return ROOT / template["Resources"][function_id]["Properties"]["CodeUri"]


def environment(function_id: str) -> dict[str, str]:
    _, resolver = _template()
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
        # The CoreLayer built for this machine (no grant check: no AWS call is made).
        PYTHONPATH=f"{SANDBOX_DIR}:{layer_path(_opt_python())}",
    )
    return env


def cold_start(function_id: str) -> dict[str, Any]:
    """Import seconds, build seconds, the top-level modules and the distributions one fresh INIT loaded."""
    done = subprocess.run(
        [interpreter(), "-c", CHILD],
        cwd=code_dir(function_id),
        env=environment(function_id),
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
