"""The AWS stack as deployed, on this machine: template.yaml transformed by SAM, its resources created in a
moto server, each function run from ``functions/*/app.py`` in sandboxes of its own, every AWS call checked
against the function's role.

    with deployed_stack(work_dir, parameters={...}) as stack:
        httpx.post(f"{stack.api_url}/api/v1/knowledge-bases", ...)     # API Gateway → ingest_turn
        httpx.get(f"{stack.stream_url}api/v1/sessions/...")            # function URL → stream_reader

What a deployment has and this has too:
- the CloudFormation SAM generates (``cfn.sam_transform``), resolved against the physical names given here
  (``ragtest-EventsTable-…``), so each function's environment is the one CloudFormation would set;
- the tables (key schemas, TTL), the bucket, the SSM parameters and secrets the parameters name, the secrets
  the template generates (the token-signing secret), the functions and the state machine (the committed
  definition with its substitutions) in one moto account, which Step Functions executes and whose Lambda
  tasks run the real ``pipeline_step`` handler;
- ``ingest_turn`` behind API Gateway's HTTP API (payload 2.0, Mangum), ``stream_reader`` started by its
  ``run.sh`` behind a RESPONSE_STREAM function URL (``gateways``);
- each function's role: every AWS call a sandbox makes is evaluated against its statements (``grants``),
  answered ``AccessDeniedException`` when denied, and logged; ``denials()`` lists the refused calls, so a
  test fails on them even where the code swallows the error.

What differs, on purpose: the layers are this checkout's (ragline from ``layers/core`` and ``config/`` mounted as
the sandbox's ``/opt``; ``RAGLINE_CONFIG_DIR`` points there), the packages are the CoreLayer built by its Makefile
from the versions lock for this machine's Python and architecture (``layer.py``; built once, cached in
``build/layer/``), run by a Python with nothing else installed, AWS endpoints are the moto server
(``AWS_ENDPOINT_URL``), the X-Ray daemon of the traced functions is a UDP listener of the tests (``xray.py``:
tracing is on as deployed, each invocation sampled), each web sandbox listens on a port of its own instead of
8080, and asynchronous retries wait under a second instead of minutes.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import string
import subprocess
import sys
import threading
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest

from ragline.serverless.template_tables import create_tables, load_template, table_specs
from tests.support.cfn import ACCOUNT_ID, REGION, ROOT, TEMPLATE_PATH, Resolver, sam_transform
from tests.support.extraction_gate import ExtractionGate
from tests.support.gateways import FunctionUrl, HttpApi
from tests.support.grants import Call, IamRequest, Policy, read_calls
from tests.support.lambdas import SANDBOX_DIR, FunctionSpec, LambdaService, Result
from tests.support.layer import interpreter, layer_path
from tests.support.polling import CLIENT_TIMEOUT
from tests.support.servers import ServerThread, free_port

STACK = "ragtest"
ASL_PATH = ROOT / "statemachine" / "pipeline.asl.json"
# moto signs Step Functions' own calls (its Lambda tasks) with this access key.
STATES_ACCESS_KEY = "ak"
UNREACHABLE_OPENSEARCH = "http://127.0.0.1:9"
FUNCTION_CONCURRENCY = {"PipelineStepFunction": 4, "IngestTurnFunction": 3, "StreamReaderFunction": 4}


def _suffix(length: int = 12) -> str:
    return "".join(secrets.choice(string.ascii_uppercase + string.digits) for _ in range(length))


@dataclass
class OpenSearchTarget:
    """The OpenSearch the stack searches: a local URL standing for a domain ARN."""

    url: str
    arn: str = f"arn:aws:es:{REGION}:{ACCOUNT_ID}:domain/{STACK}-search"
    knn_engine: str = "lucene"
    service: str = "es"
    # The template's default: no OpenSearchEndpoint, so the stack creates its SearchDomain; the functions get
    # that domain's endpoint (https://search-….es.amazonaws.com) and grants on its ARN, and the sandboxes' route
    # its host to ``url`` (the live node), as DNS would.
    provisioned: bool = False


@dataclass
class DeployedStack:
    work_dir: Path
    moto_url: str
    session: boto3.Session
    resolver: Resolver
    refs: dict[str, str]
    lambdas: LambdaService
    api_url: str
    stream_url: str
    calls_log: Path
    state_machine_arn: str
    _clients: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------------------------------ access
    def client(self, service: str) -> Any:
        """An unchecked administrator's client on the stack's account (for the test's own reads)."""
        if service not in self._clients:
            self._clients[service] = self.session.client(service, endpoint_url=self.moto_url)
        return self._clients[service]

    def table(self, logical_id: str) -> Any:
        return self.session.resource("dynamodb", endpoint_url=self.moto_url).Table(self.refs[logical_id])

    def environment(self, function_id: str) -> dict[str, str]:
        return self.resolver.environment(function_id)

    # ----------------------------------------------------------------------------------------- tenants
    def create_tenant(self, name: str) -> tuple[Any, str]:
        """A tenant and its API key in the stack's TenantsTable (as ``ragline tenant create --aws`` writes it)."""
        from ragline.store.dynamodb import DynamoTenantStore

        return DynamoTenantStore(self.table("TenantsTable")).create(name)

    # -------------------------------------------------------------------------------------- workflows
    def executions(self) -> list[dict[str, Any]]:
        sfn = self.client("stepfunctions")
        found: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"stateMachineArn": self.state_machine_arn}
        while True:
            page = sfn.list_executions(**kwargs)
            found.extend(page["executions"])
            if not page.get("nextToken"):
                return found
            kwargs["nextToken"] = page["nextToken"]

    def execution_of(self, session_id: str, message_id: str) -> str:
        """The execution ARN of one turn, as the launcher recorded it in the StateTable."""
        item = self.table("StateTable").get_item(Key={"turn": f"{session_id}#{message_id}", "item": "execution"})
        if "Item" not in item:
            raise AssertionError(f"no execution recorded for {session_id}#{message_id}")
        return str(item["Item"]["arn"])

    def wait_for_execution(self, execution_arn: str, timeout: float = 120.0) -> dict[str, Any]:
        sfn = self.client("stepfunctions")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            described = sfn.describe_execution(executionArn=execution_arn)
            if described["status"] != "RUNNING":
                return dict(described)
            time.sleep(0.05)
        raise AssertionError(f"execution {execution_arn} did not finish in {timeout} s")

    def history(self, execution_arn: str) -> list[dict[str, Any]]:
        sfn = self.client("stepfunctions")
        events: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"executionArn": execution_arn, "maxResults": 1000}
        while True:
            page = sfn.get_execution_history(**kwargs)
            events.extend(page["events"])
            if not page.get("nextToken"):
                return events
            kwargs["nextToken"] = page["nextToken"]

    # ----------------------------------------------------------------------------------------- grants
    def calls(self) -> list[Call]:
        """Every IAM request the functions (and the workflow) made, in order."""
        return read_calls(str(self.calls_log))

    def denials(self, since: int = 0) -> list[Call]:
        return [c for c in self.calls()[since:] if not c.allowed]

    def assert_no_denials(self, since: int = 0) -> None:
        denied = self.denials(since)
        if denied:
            lines = sorted({f"{c.function}: {c.action} on {c.resource}" for c in denied})
            raise AssertionError("calls the deployed roles would refuse:\n  " + "\n  ".join(lines))

    def run_schedule(self, rule_id: str) -> Result:
        """One tick of an EventBridge schedule: its target invoked with the event EventBridge sends, once the
        rule, its target and the Lambda permission that lets EventBridge invoke it are found as deployed.
        (EventBridge invokes asynchronously; here the test waits for the reply.)"""
        rule = self.resolver.resolve(self.resolver.resources("AWS::Events::Rule")[rule_id]["Properties"])
        assert rule.get("State", "ENABLED") == "ENABLED", rule
        assert str(rule["ScheduleExpression"]).startswith(("rate(", "cron(")), rule
        (target,) = rule["Targets"]
        spec = self.lambdas.spec(str(target["Arn"]))
        rule_arn = self.resolver.get_att(rule_id, "Arn")
        permitted = [
            self.resolver.resolve(p["Properties"]) for p in self.resolver.resources("AWS::Lambda::Permission").values()
        ]
        assert any(
            p["Action"] == "lambda:InvokeFunction"
            and p["Principal"] == "events.amazonaws.com"
            and p["SourceArn"] == rule_arn
            and p["FunctionName"] in (spec.name, spec.arn)
            for p in permitted
        ), f"EventBridge may not invoke {spec.name} for {rule_id}"
        event = {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": "Scheduled Event",
            "source": "aws.events",
            "account": ACCOUNT_ID,
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "region": REGION,
            "resources": [rule_arn],
            "detail": {},
        }
        if "Input" in target:
            event = json.loads(target["Input"])
        return self.lambdas.invoke(spec.name, json.dumps(event).encode())

    def warm(self) -> None:
        """Start one sandbox of every function now (INIT), so a test's timing starts from warm functions.

        The sandboxes start side by side, as a deployment's first invocations would (one after the other took
        4.3 s for the five functions, load 2)."""
        from concurrent.futures import ThreadPoolExecutor

        specs = list(self.lambdas.functions.values())
        with ThreadPoolExecutor(max_workers=len(specs) or 1) as pool:
            for started in [pool.submit(self.lambdas.warm, spec.logical_id) for spec in specs]:
                started.result()

    @contextmanager
    def function_environment(self, function_id: str, **overrides: str) -> Iterator[None]:
        """Run a function with some of its variables set otherwise, as a redeploy with other values would (its
        sandboxes restart with them, then again with the template's when the block ends)."""
        spec = self.lambdas.spec(function_id)
        original = spec.environment
        unknown = set(overrides) - set(original)
        assert not unknown, f"{function_id} has no variables {sorted(unknown)} in the template"
        spec.environment = {**original, **overrides}
        self.lambdas.recycle(function_id)
        try:
            yield
        finally:
            spec.environment = original
            self.lambdas.recycle(function_id)

    @contextmanager
    def extraction_gate(self, directory: Path, *function_ids: str) -> Iterator[ExtractionGate]:
        """Hold every document extraction in ``function_ids``' sandboxes until the test opens the gate (their
        sandboxes restart with it, then again without it when the block ends, the gate opened)."""
        gate = ExtractionGate(directory)
        specs = [self.lambdas.spec(f) for f in function_ids]
        for spec in specs:
            spec.environment = {**spec.environment, "SANDBOX_EXTRACTION_GATE": str(directory)}
            self.lambdas.recycle(spec.logical_id)
        try:
            yield gate
        finally:
            gate.open()
            self.lambdas.drain(timeout=180.0)
            for spec in specs:
                spec.environment = {k: v for k, v in spec.environment.items() if k != "SANDBOX_EXTRACTION_GATE"}
                self.lambdas.recycle(spec.logical_id)

    @contextmanager
    def role_statements(self, function_id: str, statements: list[dict[str, Any]]) -> Iterator[None]:
        """Run a function with other statements in its role (its sandboxes restart with them, then again with
        the template's when the block ends)."""
        path = self.work_dir / f"{function_id}.grants.json"
        original = path.read_text(encoding="utf-8")
        path.write_text(json.dumps({**json.loads(original), "statements": statements}), encoding="utf-8")
        self.lambdas.recycle(function_id)
        try:
            yield
        finally:
            path.write_text(original, encoding="utf-8")
            self.lambdas.recycle(function_id)

    @contextmanager
    def fault(
        self,
        function_id: str,
        action: str,
        effect: str = "timeout",
        resource: str = "",
        params: str = "",
        after: str = "",
        repeat: bool = False,
    ) -> Iterator[None]:
        """Inject one failure at the first call of ``function_id`` that matches (``grants.Faults``), or at every
        one with ``repeat``."""
        path = self.work_dir / f"{function_id}.faults.json"
        rule = {
            "id": _suffix(8),
            "action": action,
            "resource": resource,
            "params": params,
            "effect": effect,
            "after": after,
            "repeat": repeat,
        }
        path.write_text(json.dumps([rule]), encoding="utf-8")
        try:
            yield
        finally:
            path.unlink(missing_ok=True)

    def logs(self, function_id: str) -> str:
        """What the function's sandboxes printed (their CloudWatch Logs), oldest sandbox first."""
        paths = sorted(
            (self.work_dir / "logs").glob(f"{function_id}-*.log"), key=lambda p: int(p.stem.rsplit("-", 1)[1])
        )
        return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in paths)


# -------------------------------------------------------------------------------------------- deployment
def _physical_names(
    cfn: Mapping[str, Any], resolver_parameters: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """``Ref`` and ``Fn::GetAtt`` values for every resource, named as CloudFormation names them."""
    refs: dict[str, str] = {}
    attributes: dict[str, str] = {}
    prefix = "arn:aws"
    for logical_id, resource in cfn["Resources"].items():
        kind = resource["Type"]
        physical = f"{STACK}-{logical_id}-{_suffix()}"
        if kind == "AWS::DynamoDB::Table":
            refs[logical_id] = physical
            attributes[f"{logical_id}.Arn"] = f"{prefix}:dynamodb:{REGION}:{ACCOUNT_ID}:table/{physical}"
        elif kind == "AWS::S3::Bucket":
            refs[logical_id] = physical.lower()
            attributes[f"{logical_id}.Arn"] = f"{prefix}:s3:::{physical.lower()}"
        elif kind == "AWS::Lambda::Function":
            # A function named by the template (FunctionName) gets that name, as CloudFormation gives it.
            named = (resource.get("Properties") or {}).get("FunctionName")
            name = str(Resolver(cfn, resolver_parameters, stack_name=STACK).resolve(named)) if named else physical[:64]
            refs[logical_id] = name
            attributes[f"{logical_id}.Arn"] = f"{prefix}:lambda:{REGION}:{ACCOUNT_ID}:function:{name}"
        elif kind == "AWS::IAM::Role":
            name = physical[:64]
            refs[logical_id] = name
            attributes[f"{logical_id}.Arn"] = f"{prefix}:iam::{ACCOUNT_ID}:role/{name}"
        elif kind == "AWS::StepFunctions::StateMachine":
            name = f"{logical_id}-{_suffix()}"
            arn = f"{prefix}:states:{REGION}:{ACCOUNT_ID}:stateMachine:{name}"
            refs[logical_id] = arn
            attributes[f"{logical_id}.Arn"] = arn
            attributes[f"{logical_id}.Name"] = name
        elif kind == "AWS::Logs::LogGroup":
            refs[logical_id] = physical
            attributes[f"{logical_id}.Arn"] = f"{prefix}:logs:{REGION}:{ACCOUNT_ID}:log-group:{physical}:*"
        elif kind == "AWS::Lambda::LayerVersion":
            refs[logical_id] = f"{prefix}:lambda:{REGION}:{ACCOUNT_ID}:layer:{physical}:1"
        elif kind == "AWS::ApiGatewayV2::Api":
            refs[logical_id] = _suffix(10).lower()
        elif kind == "AWS::OpenSearchService::Domain":
            name = physical.lower()[:28]
            refs[logical_id] = name
            attributes[f"{logical_id}.Arn"] = f"{prefix}:es:{REGION}:{ACCOUNT_ID}:domain/{name}"
            attributes[f"{logical_id}.DomainEndpoint"] = (
                f"search-{name}-{_suffix(26).lower()}.{REGION}.es.amazonaws.com"
            )
        elif kind == "AWS::Lambda::Url":
            refs[logical_id] = physical
        elif kind == "AWS::SecretsManager::Secret":
            # CloudFormation's name for a secret the template does not name; its Ref (the ARN) is known once
            # it is created (``_create_secrets``).
            refs[logical_id] = f"{logical_id}-{_suffix()}"
        elif kind == "AWS::Events::Rule":
            name = physical[:64]
            refs[logical_id] = name
            attributes[f"{logical_id}.Arn"] = f"{prefix}:events:{REGION}:{ACCOUNT_ID}:rule/{name}"
        else:
            refs[logical_id] = physical
    return refs, attributes


def start_moto(work_dir: Path, invoke_url: str) -> tuple[subprocess.Popen[bytes], str]:
    """``moto_server.py`` in a process of its own (Step Functions executing, Lambda's Invoke forwarded to
    ``invoke_url``), logging to ``work_dir/logs/moto.log``: the process and the server's URL once it answers."""
    port = free_port()
    log = (work_dir / "logs" / "moto.log").open("ab")
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("moto_server.py")), str(port), invoke_url],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the moto server exited; see " + str(work_dir / "logs" / "moto.log"))
        try:
            if httpx.get(f"{url}/moto-api/", timeout=2).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the moto server did not start")


def stop_moto(process: subprocess.Popen[bytes]) -> None:
    """The moto server of :func:`start_moto` stopped (killed if it has not exited within 10 s)."""
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()


def _layers(work_dir: Path) -> Path:
    """The sandboxes' /opt: the CoreLayer's python/ (the ragline package from the checkout; its packages are
    the built layer's, ``tests/support/layer.py``) and the ConfigLayer's files."""
    opt = work_dir / "opt"
    (opt / "python").mkdir(parents=True, exist_ok=True)
    (opt / "python" / "ragline").symlink_to(ROOT / "layers" / "core" / "ragline")
    for entry in (ROOT / "config").iterdir():
        (opt / entry.name).symlink_to(entry)
    return opt


def _dummy_zip() -> bytes:
    buffer = BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("README", "the code runs in the tests' sandboxes")
    return buffer.getvalue()


def _search_grant(opensearch: OpenSearchTarget, attributes: Mapping[str, str]) -> dict[str, str]:
    """What a sandbox's OpenSearch calls are checked against: the domain the functions were given, its ARN."""
    if not opensearch.provisioned:
        return {"url": opensearch.url, "arn": opensearch.arn, "service": opensearch.service}
    return {
        "url": f"https://{attributes['SearchDomain.DomainEndpoint']}",
        "arn": attributes["SearchDomain.Arn"],
        "service": "es",
        "route_to": opensearch.url,
    }


@contextmanager
def deployed_stack(
    work_dir: Path,
    parameters: Mapping[str, str] | None = None,
    *,
    opensearch: OpenSearchTarget | None = None,
    ssm_parameters: Mapping[str, str] | None = None,
    secrets_values: Mapping[str, str] | None = None,
    role_overrides: Mapping[str, list[dict[str, Any]]] | None = None,
    timeouts_s: Mapping[str, float] | None = None,
) -> Iterator[DeployedStack]:
    """Deploy template.yaml into a fresh moto server and run its functions.

    ``parameters`` are the stack's parameters (as ``sam deploy --parameter-overrides``); ``ssm_parameters``
    and ``secrets_values`` are created before the functions start (SecureString parameters by name; secrets by
    name, their ARN in ``stack.refs["secret:<name>"]``, and a parameter given as ``"secret:<name>"`` is
    deployed with that ARN). ``role_overrides`` replaces a role's
    statements (a test that proves the grant check removes one); ``timeouts_s`` shortens a function's
    Timeout for a test that lets it expire.
    """
    work_dir.mkdir(parents=True, exist_ok=True)
    (work_dir / "logs").mkdir(exist_ok=True)
    parameters = dict(parameters or {})
    # Without an engine the stack still names one (nothing listens there): a search or an upload fails, the
    # rest works. Tests that search take the ``aws_search`` fixture, which skips without OpenSearch.
    opensearch = opensearch or OpenSearchTarget(UNREACHABLE_OPENSEARCH)
    parameters.setdefault("OpenSearchKnnEngine", opensearch.knn_engine)
    if not opensearch.provisioned:
        parameters.setdefault("OpenSearchEndpoint", opensearch.url)
        parameters.setdefault("OpenSearchDomainArn", opensearch.arn)
    opt = _layers(work_dir)
    calls_log = work_dir / "calls.jsonl"
    calls_log.touch()

    policies: dict[str, Policy] = {}
    lock = threading.Lock()

    # The CoreLayer built for this machine from the lock (cached), and a Python with nothing else installed.
    layers = layer_path(opt / "python")

    def sandbox_environment(spec: FunctionSpec) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL": moto_url,
            "PYTHONPATH": f"{SANDBOX_DIR}:{layers}",
            "SANDBOX_LAYERS": layers,
            "SANDBOX_GRANTS_CONFIG": str(work_dir / f"{spec.logical_id}.grants.json"),
            "RAGLINE_CONFIG_DIR": str(opt),
        }

    def invoke_denied(caller: str, spec: FunctionSpec) -> str | None:
        """Step Functions invokes the step function with the state machine's role."""
        if caller != STATES_ACCESS_KEY:
            return None  # a function's own Invoke was checked in its sandbox
        request = IamRequest("lambda:InvokeFunction", spec.arn)
        allowed = policies["PipelineStateMachineRole"].allows(request)
        call = Call("PipelineStateMachine", request.action, request.resource, allowed, "Invoke", time.time())
        with lock, calls_log.open("a", encoding="utf-8") as log:
            log.write(json.dumps(call.__dict__) + "\n")
        return None if allowed else f"PipelineStateMachine may not invoke {spec.arn}"

    lambdas = LambdaService(work_dir, interpreter(), REGION, sandbox_environment, invoke_denied=invoke_denied)
    moto_process, moto_url = start_moto(work_dir, lambdas.invoke_url)
    servers: list[ServerThread] = []
    try:
        session = boto3.Session(
            aws_access_key_id="admin", aws_secret_access_key="admin", aws_session_token="admin", region_name=REGION
        )
        # Secrets first: a parameter written "secret:NAME" is deployed with that secret's ARN.
        secret_arns: dict[str, str] = {}
        secrets_client = session.client("secretsmanager", endpoint_url=moto_url)
        for name, value in (secrets_values or {}).items():
            secret_arns[name] = secrets_client.create_secret(Name=name, SecretString=value)["ARN"]
        parameters = {
            key: secret_arns[value.removeprefix("secret:")] if value.startswith("secret:") else value
            for key, value in parameters.items()
        }
        template = load_template(TEMPLATE_PATH)
        cfn = sam_transform(template, parameters)
        refs, attributes = _physical_names(cfn, parameters)
        refs.update({f"secret:{name}": arn for name, arn in secret_arns.items()})
        refs.update(_create_secrets(secrets_client, cfn, refs))
        stream_reader = refs["StreamReaderFunction"]
        ingest_turn = refs["IngestTurnFunction"]
        api = ServerThread(HttpApi(lambdas, ingest_turn, refs["HttpApi"], ACCOUNT_ID, REGION)).start()
        url = ServerThread(FunctionUrl(lambdas, stream_reader)).start()
        servers += [api, url]
        attributes["StreamReaderFunctionUrl.FunctionUrl"] = f"{url.url}/"
        resolver = Resolver(cfn, parameters, refs, attributes, stack_name=STACK)
        stack = DeployedStack(
            work_dir=work_dir,
            moto_url=moto_url,
            session=session,
            resolver=resolver,
            refs=refs,
            lambdas=lambdas,
            api_url=api.url,
            stream_url=f"{url.url}/",
            calls_log=calls_log,
            state_machine_arn=refs["PipelineStateMachine"],
        )
        _create_resources(stack, cfn, template, ssm_parameters or {})

        partitions = {refs[t]: spec.partition_key for t, spec in table_specs(template).items() if t in refs}
        for role_id in resolver.resources("AWS::IAM::Role"):
            statements = list((role_overrides or {}).get(role_id) or resolver.role_statements(role_id))
            policies[role_id] = Policy(statements)
        for function_id, resource in resolver.resources("AWS::Lambda::Function").items():
            props = resource["Properties"]
            role_id = resolver.function_role(function_id)
            sam_props = template["Resources"][function_id]["Properties"]
            spec = FunctionSpec(
                logical_id=function_id,
                name=refs[function_id],
                arn=attributes[f"{function_id}.Arn"],
                environment=resolver.environment(function_id),
                code_dir=ROOT / sam_props["CodeUri"],
                handler=str(props["Handler"]),
                timeout_s=float((timeouts_s or {}).get(function_id, props.get("Timeout", 3))),
                memory_mb=int(props.get("MemorySize", 128)),
                web=str(props["Handler"]).endswith(".sh"),
                tracing=props.get("TracingConfig", {}).get("Mode") == "Active",
                max_sandboxes=FUNCTION_CONCURRENCY.get(function_id, 2),
            )
            grants = {
                "function": function_id,
                "region": REGION,
                "account": ACCOUNT_ID,
                "statements": policies[role_id].statements,
                "log": str(calls_log),
                "partitions": partitions,
                "faults": str(work_dir / f"{function_id}.faults.json"),
                "opensearch": _search_grant(opensearch, attributes),
            }
            (work_dir / f"{function_id}.grants.json").write_text(json.dumps(grants), encoding="utf-8")
            lambdas.add(spec)
        for config in resolver.resources("AWS::Lambda::EventInvokeConfig").values():
            settings = resolver.resolve(config["Properties"])
            lambdas.spec(str(settings["FunctionName"])).async_retries = int(settings.get("MaximumRetryAttempts", 2))
        yield stack
    finally:
        lambdas.stop()
        for server in servers:
            server.stop()
        stop_moto(moto_process)


def generated_secret(spec: Mapping[str, Any]) -> str:
    """A value as Secrets Manager generates one for ``GenerateSecretString`` (length and excluded characters)."""
    alphabet = string.ascii_letters + string.digits
    if not spec.get("ExcludePunctuation"):
        alphabet += string.punctuation
    alphabet = "".join(c for c in alphabet if c not in str(spec.get("ExcludeCharacters", "")))
    return "".join(secrets.choice(alphabet) for _ in range(int(spec.get("PasswordLength", 32))))


def _create_secrets(client: Any, cfn: Mapping[str, Any], refs: Mapping[str, str]) -> dict[str, str]:
    """The template's own secrets, created with a generated value as CloudFormation creates them: their ARNs."""
    arns: dict[str, str] = {}
    for logical_id, resource in cfn["Resources"].items():
        if resource["Type"] != "AWS::SecretsManager::Secret":
            continue
        props = resource.get("Properties") or {}
        assert "GenerateSecretString" in props, f"{logical_id}: only generated secrets are deployed here"
        value = generated_secret(props["GenerateSecretString"])
        arns[logical_id] = client.create_secret(Name=refs[logical_id], SecretString=value)["ARN"]
    return arns


def _create_resources(
    stack: DeployedStack,
    cfn: Mapping[str, Any],
    template: Mapping[str, Any],
    ssm_parameters: Mapping[str, str],
) -> None:
    resolver, refs = stack.resolver, stack.refs
    specs = table_specs(template)
    create_tables(stack.client("dynamodb"), template, {t: refs[t] for t in specs if t in resolver.resources()})
    for bucket_id in resolver.resources("AWS::S3::Bucket"):
        stack.client("s3").create_bucket(Bucket=refs[bucket_id])
    ssm = stack.client("ssm")
    for name, value in ssm_parameters.items():
        ssm.put_parameter(Name=name, Value=value, Type="SecureString")
    iam = stack.client("iam")
    for role_id, resource in resolver.resources("AWS::IAM::Role").items():
        props = resource["Properties"]
        iam.create_role(RoleName=refs[role_id], AssumeRolePolicyDocument=json.dumps(props["AssumeRolePolicyDocument"]))
    lam = stack.client("lambda")
    for function_id, resource in resolver.resources("AWS::Lambda::Function").items():
        props = resource["Properties"]
        lam.create_function(
            FunctionName=refs[function_id],
            Runtime=props["Runtime"],
            Role=f"arn:aws:iam::{ACCOUNT_ID}:role/{refs[resolver.function_role(function_id)]}",
            Handler=props["Handler"],
            Code={"ZipFile": _dummy_zip()},
            Timeout=int(props.get("Timeout", 3)),
            MemorySize=int(props.get("MemorySize", 128)),
            Architectures=props.get("Architectures", ["x86_64"]),
        )
    for machine_id, resource in resolver.resources("AWS::StepFunctions::StateMachine").items():
        props = resource["Properties"]
        definition = ASL_PATH.read_text(encoding="utf-8")
        for name, value in resolver.resolve(props.get("DefinitionSubstitutions") or {}).items():
            definition = definition.replace("${" + name + "}", str(value))
        stack.client("stepfunctions").create_state_machine(
            name=resolver.get_att(machine_id, "Name"),
            definition=definition,
            roleArn=resolver.get_att(str(props["RoleArn"]["Fn::GetAtt"][0]), "Arn"),
            type=str(resolver.resolve(props.get("StateMachineType", "STANDARD"))),
        )


# ---------------------------------------------------------------------------------------------- fixtures
CHAT_KEY_PARAMETER = f"/{STACK}/chat-api-key"


def opensearch_target(request: pytest.FixtureRequest) -> OpenSearchTarget | None:
    """The live OpenSearch of ``make test`` (tests/support/engines.py), or None when none runs here (the
    engines fixture skips then, and fails under CI)."""
    try:
        live = request.getfixturevalue("opensearch")
    except pytest.skip.Exception:
        return None
    return OpenSearchTarget(live.url, knn_engine=live.knn_engine)


@dataclass
class StackClient:
    """One tenant of the deployed stack, over HTTP: the API (ingest_turn) and the stream URL (stream_reader)."""

    stack: DeployedStack
    tenant: Any
    key: str
    api: httpx.Client
    stream: httpx.Client

    def kb(self, docs: Mapping[str, str] | None = None, name: str = "drinks") -> str:
        reply = self.api.post("/api/v1/knowledge-bases", json={"name": name})
        assert reply.status_code == 201, reply.text
        kb_id = str(reply.json()["data"]["id"])
        added_ids = []
        for title, content in (docs or {}).items():
            added = self.api.post(
                f"/api/v1/knowledge-bases/{kb_id}/documents", json={"title": title, "content": content}
            )
            assert added.status_code in (201, 202), added.text
            added_ids.append(str(added.json()["data"]["id"]))
        for document_id in added_ids:
            # Indexed by an asynchronous invocation of the indexing function: searchable once it is done.
            assert self.wait_indexed(kb_id, document_id)["status"] == "indexed"
        return kb_id

    def document(self, kb_id: str, document_id: str) -> dict[str, Any]:
        reply = self.api.get(f"/api/v1/knowledge-bases/{kb_id}/documents/{document_id}")
        assert reply.status_code == 200, reply.text
        return dict(reply.json()["data"])

    def wait_indexed(self, kb_id: str, document_id: str, timeout: float = 180.0) -> dict[str, Any]:
        """The document once its indexing has ended (``indexed`` or ``failed``), read through the API."""
        from tests.support.polling import wait_until

        return dict(
            wait_until(
                lambda: (doc := self.document(kb_id, document_id))["status"] != "pending" and doc,
                timeout=timeout,
                interval=0.2,
            )
        )

    def session(self, kb_ids: list[str] | None = None) -> str:
        reply = self.api.post("/api/v1/sessions", json={"knowledge_base_ids": kb_ids or []})
        assert reply.status_code == 201, reply.text
        return str(reply.json()["data"]["id"])

    def ask(self, session_id: str, query: str, **options: Any) -> dict[str, Any]:
        reply = self.api.post(f"/api/v1/sessions/{session_id}/questions", json={"query": query, **options})
        assert reply.status_code == 202, reply.text
        return dict(reply.json()["data"])

    def frames(self, ids: Mapping[str, Any], **kwargs: Any) -> list[Any]:
        """The turn's SSE frames from stream_reader, until it ends the stream."""
        from tests.support.sse import read_frames

        path = f"api/v1/sessions/{ids['session_id']}/messages/{ids['assistant_message_id']}/events"
        return read_frames(self.stream, "GET", path, **kwargs)

    def log(self, ids: Mapping[str, Any]) -> list[Any]:
        """The turn's event log as stored (read with the library's own DynamoDB log adapter)."""
        from ragline.stream.base import stream_key
        from ragline.stream.dynamodb import DynamoDBStreamManager

        log = DynamoDBStreamManager(self.stack.table("EventsTable"), 3600)
        return log.events_sync(stream_key(str(ids["session_id"]), str(ids["assistant_message_id"])))

    def messages(self, session_id: str) -> list[dict[str, Any]]:
        reply = self.api.get(f"/api/v1/sessions/{session_id}/messages")
        assert reply.status_code == 200, reply.text
        return list(reply.json()["data"])

    def assistant(self, ids: Mapping[str, Any]) -> dict[str, Any]:
        return next(m for m in self.messages(str(ids["session_id"])) if m["id"] == ids["assistant_message_id"])

    def execution(self, ids: Mapping[str, Any]) -> str:
        return self.stack.execution_of(str(ids["session_id"]), str(ids["assistant_message_id"]))

    def wait(self, ids: Mapping[str, Any], timeout: float = 120.0) -> dict[str, Any]:
        """The turn's workflow execution once it has finished."""
        return self.stack.wait_for_execution(self.execution(ids), timeout)


@contextmanager
def scripted_stack(
    request: pytest.FixtureRequest,
    work_dir: Path,
    scripted: Any,
    provisioned_domain: bool = False,
    **parameters: str,
) -> Iterator[DeployedStack]:
    """template.yaml deployed in moto with ``parameters``, chat answered by the scripted model (its key an SSM
    parameter), searching the live OpenSearch when one runs; one sandbox of each function started.

    ``provisioned_domain``: no OpenSearchEndpoint (the template's default), the stack's own SearchDomain routed
    to the live node (see :class:`OpenSearchTarget`)."""
    target = opensearch_target(request)
    if provisioned_domain and target is not None:
        target = dataclasses.replace(target, provisioned=True)
    with deployed_stack(
        work_dir,
        {"ChatBaseUrl": f"{scripted.url}/v1", "ChatModel": "scripted", "ChatApiKeyParameter": CHAT_KEY_PARAMETER}
        | parameters,
        opensearch=target,
        ssm_parameters={CHAT_KEY_PARAMETER: "scripted-key"},
    ) as stack:
        stack.warm()
        yield stack


def failing_steps(
    *stages: str, error_type: str = "RuntimeError"
) -> Callable[[dict[str, Any], Callable[[], Result]], Result]:
    """An invocation wrapper for pipeline_step: the given stages fail as an unhandled error, the others run."""

    def wrapper(event: dict[str, Any], run: Callable[[], Result]) -> Result:
        if event.get("stage") in stages:
            return Result(json.dumps({"errorType": error_type, "errorMessage": "lost"}).encode(), "Unhandled")
        return run()

    return wrapper


@pytest.fixture(scope="module")
def aws_stack(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, scripted: Any
) -> Iterator[DeployedStack]:
    """template.yaml deployed in moto for one test module, chat answered by the scripted model, searching the
    live OpenSearch when one runs."""
    with scripted_stack(request, tmp_path_factory.mktemp("aws-stack"), scripted) as stack:
        yield stack


@contextmanager
def stack_client(stack: DeployedStack, name: str = "") -> Iterator[StackClient]:
    """A fresh tenant on a deployed stack, with HTTP clients for its API and its stream URL."""
    tenant, key = stack.create_tenant(name or f"tenant-{_suffix(8).lower()}")
    headers = {"X-API-Key": key}
    timeout = CLIENT_TIMEOUT
    with (
        httpx.Client(base_url=stack.api_url, headers=headers, timeout=timeout) as api,
        httpx.Client(base_url=stack.stream_url, headers=headers, timeout=timeout) as stream,
    ):
        yield StackClient(stack, tenant, key, api, stream)


@contextmanager
def checked_client(stack: DeployedStack) -> Iterator[StackClient]:
    """``stack_client`` for one test: no invocation wrapper outlives it, and it fails if any function made a
    call its role refuses meanwhile."""
    since = len(stack.calls())
    with stack_client(stack) as client:
        try:
            yield client
        finally:
            # What the test set off asynchronously (an upload's indexing) ends within it: nothing of one test
            # runs into the next, or into the stack's teardown.
            stack.lambdas.drain(timeout=180.0)
            for function_id in list(stack.lambdas.functions):
                stack.lambdas.around(function_id, None)
    stack.assert_no_denials(since)


@pytest.fixture
def aws(aws_stack: DeployedStack) -> Iterator[StackClient]:
    """A fresh tenant on the module's stack; the test fails if any function made a call its role refuses."""
    with checked_client(aws_stack) as client:
        yield client


@pytest.fixture
def aws_search(request: pytest.FixtureRequest, aws_stack: DeployedStack) -> OpenSearchTarget:
    """The stack's live OpenSearch; a test that searches skips (fails under CI) without one."""
    live = request.getfixturevalue("opensearch")
    return OpenSearchTarget(live.url, knn_engine=live.knn_engine)
