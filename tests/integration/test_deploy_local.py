"""``scripts/deploy_local.py`` against a moto server standing in for LocalStack's endpoints.

The moto server is the deployed-stack harness's (``tests/support/moto_server.py``: Step Functions executes its
workflows, Lambda's Invoke runs the function in the tests' sandboxes, ``lambdas.LambdaService``). Two tests:

- the script deploys all five functions of template.yaml, each with exactly the environment the deployed-stack
  tests resolve for it (the same SAM transform and resolver), the search endpoint given as a parameter, and
  prints the URLs and a tenant key;
- the README's curl block runs through what it deployed: each function as the script deployed it, read back
  from moto (name, handler, timeout, memory, environment), its code the zip the script uploaded (its SHA-256 is
  the function's ``CodeSha256``) unpacked as its task root; ingest_turn behind its function URL (a BUFFERED
  function URL front, payload 2.0, ``gateways.BufferedFunctionUrl``) and stream_reader served by the ``uvicorn``
  command the script prints for LocalStack without the Web Adapter layer, run as printed; the workflow executed
  by moto's Step Functions, indexing by an asynchronous invocation, search on the live OpenSearch, the chat model
  the scripted one (``--parameter ChatBaseUrl=…``, its key an SSM parameter created first).

What stands in for what: moto for LocalStack; the sandboxes for LocalStack's Lambda containers (the task root
``/var/task`` is the unpacked zip, so ``RAGLINE_CONFIG_DIR=/var/task/config`` is that directory's ``config/``).
The script runs with ``--skip-deps`` (pip cannot fetch here), so the dependencies its zip would carry come from
the CoreLayer built for this machine (``tests/support/layer.py``) on the sandboxes' ``PYTHONPATH``, as in the
harness; everything else a function imports (its ``app.py``, ``ragline``, ``config/``) is the zip's. No IAM is
checked: the script's roles carry no statements (LocalStack does not enforce IAM by default).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import signal
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import boto3
import httpx
import pytest

from ragline.serverless.template_tables import load_template
from scripts.deploy_local import FUNCTION_NAMES
from tests.support.aws_curl import assert_sequence, queue_answers, run_block
from tests.support.cfn import REGION, ROOT, Resolver, sam_transform
from tests.support.gateways import BufferedFunctionUrl
from tests.support.lambdas import FunctionSpec, LambdaService
from tests.support.layer import built_layer, interpreter
from tests.support.polling import wait_until
from tests.support.serverless import start_moto, stop_moto
from tests.support.servers import ServerThread, free_port

SEARCH = "http://127.0.0.1:9200"
# Where the script's zips are unpacked in a Lambda container.
TASK_ROOT = "/var/task"


@dataclass
class LocalAws:
    """The moto server standing in for LocalStack, and the Lambda service its Invoke runs functions in."""

    url: str
    lambdas: LambdaService
    session: boto3.Session

    def client(self, service: str) -> Any:
        return self.session.client(service, endpoint_url=self.url)


@pytest.fixture(scope="module")
def local_aws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalAws]:
    work_dir = tmp_path_factory.mktemp("localstack")
    (work_dir / "logs").mkdir()
    home = built_layer()
    # What the script's zip would carry without --skip-deps: the CoreLayer's packages, and the runtime's boto3.
    dependencies = os.pathsep.join(str(p) for p in (home / "layer" / "python", home / "runtime"))

    def sandbox_environment(spec: FunctionSpec) -> dict[str, str]:
        config_dir = spec.environment.get("RAGLINE_CONFIG_DIR", "")
        return {
            "AWS_ENDPOINT_URL": moto_url,  # LocalStack sets it in its Lambda containers too
            "PYTHONPATH": dependencies,
            "SANDBOX_LAYERS": dependencies,
            "RAGLINE_CONFIG_DIR": config_dir.replace(TASK_ROOT, str(spec.code_dir), 1),
        }

    lambdas = LambdaService(work_dir, interpreter(), REGION, sandbox_environment)
    moto_process, moto_url = start_moto(work_dir, lambdas.invoke_url)
    session = boto3.Session(aws_access_key_id="test", aws_secret_access_key="test", region_name=REGION)
    try:
        yield LocalAws(moto_url, lambdas, session)
    finally:
        lambdas.stop()
        stop_moto(moto_process)


def _deploy(moto_url: str, build: Path, prefix: str, *args: str) -> str:
    """``deploy_local.py --skip-deps`` against the moto server; what it printed."""
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": REGION,
    }
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "deploy_local.py"),
            "--localstack-host",
            moto_url.removeprefix("http://"),
            "--skip-deps",
            "--build-dir",
            str(build),
            "--prefix",
            prefix,
            *args,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    print(done.stdout)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _names(prefix: str) -> dict[str, str]:
    """The names the script gives template.yaml's functions under ``prefix``."""
    return {function_id: f"{prefix}-{name}" for function_id, name in FUNCTION_NAMES.items()}


def test_deploy_local_deploys_every_function_with_the_templates_environment(local_aws, tmp_path):
    stdout = _deploy(local_aws.url, tmp_path / "build", "local", "--opensearch-endpoint", SEARCH)
    lam = local_aws.client("lambda")
    template = load_template(Path(ROOT / "template.yaml"))
    functions = [k for k, v in template["Resources"].items() if v["Type"] == "AWS::Serverless::Function"]
    assert len(functions) == 5
    names = _names("local")
    assert sorted(names) == sorted(functions)
    deployed = {f: lam.get_function_configuration(FunctionName=n) for f, n in names.items()}
    stream_url = lam.get_function_url_config(FunctionName=names["StreamReaderFunction"])["FunctionUrl"]
    api_url = lam.get_function_url_config(FunctionName=names["IngestTurnFunction"])["FunctionUrl"]
    machines = local_aws.client("stepfunctions").list_state_machines()["stateMachines"]
    (machine,) = [m for m in machines if m["name"] == "local-pipeline"]

    # What the deployed-stack harness resolves for the same names and parameters.
    parameters = {"OpenSearchEndpoint": SEARCH}
    account = deployed["SweepFunction"]["FunctionArn"].split(":")[4]
    refs = {t: f"local-{t.removesuffix('Table').lower()}" for t in template["Resources"] if t.endswith("Table")}
    refs |= {f: n for f, n in names.items()} | {"StateBucket": "local-state"}
    refs["PipelineStateMachine"] = machine["stateMachineArn"]
    # The template's generated secret, created by the script under the stack's prefix.
    secrets = local_aws.client("secretsmanager")
    refs["TokenSigningSecret"] = secrets.describe_secret(SecretId="local-TokenSigningSecret")["ARN"]
    attributes = {f"{f}.Arn": deployed[f]["FunctionArn"] for f in names}
    attributes["StreamReaderFunctionUrl.FunctionUrl"] = stream_url
    resolver = Resolver(
        sam_transform(template, parameters), parameters, refs, attributes, account_id=account, stack_name="local"
    )
    tables = set(local_aws.client("dynamodb").list_tables()["TableNames"])
    for function_id, config in deployed.items():
        variables = config["Environment"]["Variables"]
        expected = {**resolver.environment(function_id), "RAGLINE_CONFIG_DIR": f"{TASK_ROOT}/config"}
        assert variables == expected, function_id
        assert variables["RAGLINE_OPENSEARCH_URL"] == SEARCH
        for name, value in variables.items():
            if name.endswith("_TABLE"):
                assert value in tables, (function_id, name)
    assert (
        deployed["IngestTurnFunction"]["Environment"]["Variables"]["RAGLINE_INDEX_FUNCTION"]
        == names["IndexDocumentFunction"]
    )
    assert deployed["IngestTurnFunction"]["Environment"]["Variables"]["RAGLINE_STREAM_BASE_URL"] == stream_url
    assert f"API (ingest_turn)      {api_url}" in stdout
    assert f"SSE (stream_reader)    {stream_url}" in stdout
    assert "X-API-Key: " in stdout


# ------------------------------------------------------------------------------ the README's curl block
def _run_as_deployed(local_aws: LocalAws, names: dict[str, str], build: Path, code_root: Path) -> None:
    """Each function registered with the Lambda service as the script deployed it: its configuration read back
    from moto, its code the zip the script built (the one moto holds: same SHA-256) unpacked as its task root."""
    lam = local_aws.client("lambda")
    for function_id, name in names.items():
        config = lam.get_function_configuration(FunctionName=name)
        archive = build / f"{function_id}.zip"
        digest = base64.b64encode(hashlib.sha256(archive.read_bytes()).digest()).decode()
        assert config["CodeSha256"] == digest, f"{name} does not run {archive}"
        code_dir = code_root / name
        with zipfile.ZipFile(archive) as unpacked:
            unpacked.extractall(code_dir)
        handler = str(config["Handler"])
        local_aws.lambdas.add(
            FunctionSpec(
                logical_id=function_id,
                name=name,
                arn=str(config["FunctionArn"]),
                environment=dict(config["Environment"]["Variables"]),
                code_dir=code_dir,
                handler=handler,
                timeout_s=float(config["Timeout"]),
                memory_mb=int(config["MemorySize"]),
                web=handler.endswith(".sh"),
                tracing=(config.get("TracingConfig") or {}).get("Mode") == "Active",
            )
        )


def _uvicorn_command(stdout: str, port: int) -> str:
    """The command the script printed for serving stream_reader locally, on ``port`` instead of 8080."""
    lines = stdout.split("serve the same app locally against LocalStack:\n", 1)[1].splitlines()
    command = "\n".join(line.strip() for line in lines[:3])
    assert command.endswith("--port 8080"), command
    return command.removesuffix("8080") + str(port)


@contextmanager
def _served_stream_reader(command: str, port: int, log_path: Path) -> Iterator[str]:
    """The printed command run by bash from the checkout, as a user would paste it (nothing else in its
    environment but PATH and HOME); its URL once it answers as the Web Adapter's readiness check wants."""
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            ["bash", "-c", command],
            cwd=ROOT,
            env={"PATH": "/usr/bin:/bin", "HOME": str(log_path.parent)},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        assert process.poll() is None, log_path.read_text(encoding="utf-8", errors="replace")
        try:
            return httpx.get(url, timeout=2).status_code < 500
        except httpx.HTTPError:
            return False

    try:
        wait_until(answers, timeout=120, interval=0.1)
        yield url
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def test_the_readme_curl_block_runs_through_what_deploy_local_deployed(local_aws, opensearch, scripted, tmp_path):
    prefix = "readme"
    key_parameter = f"/{prefix}/chat-api-key"
    local_aws.client("ssm").put_parameter(Name=key_parameter, Value="scripted-key", Type="SecureString")
    build = tmp_path / "build"
    stdout = _deploy(
        local_aws.url,
        build,
        prefix,
        "--opensearch-endpoint",
        opensearch.url,
        "--parameter",
        f"OpenSearchKnnEngine={opensearch.knn_engine}",
        "--parameter",
        f"ChatBaseUrl={scripted.url}/v1",
        "--parameter",
        "ChatModel=scripted",
        "--parameter",
        f"ChatApiKeyParameter={key_parameter}",
    )
    names = _names(prefix)
    _run_as_deployed(local_aws, names, build, tmp_path / "task")
    function_url = local_aws.client("lambda").get_function_url_config(FunctionName=names["IngestTurnFunction"])
    assert f"API (ingest_turn)      {function_url['FunctionUrl']}" in stdout
    url_id = str(urlparse(function_url["FunctionUrl"]).hostname).split(".", 1)[0]
    found = re.search(r"X-API-Key: (\S+)", stdout)
    assert found, stdout
    port = free_port()
    api = ServerThread(BufferedFunctionUrl(local_aws.lambdas, names["IngestTurnFunction"], url_id, REGION)).start()
    try:
        with _served_stream_reader(_uvicorn_command(stdout, port), port, tmp_path / "stream_reader.log") as stream:
            queue_answers(scripted)
            work = tmp_path / "curl"
            work.mkdir()
            assert_sequence(run_block(work, api.url, stream, found.group(1)), api.url, found.group(1))
            local_aws.lambdas.drain(timeout=180.0)
    finally:
        api.stop()
