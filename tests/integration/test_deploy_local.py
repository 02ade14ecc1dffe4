"""``scripts/deploy_local.py`` against a moto server standing in for LocalStack's endpoints: all five functions
of template.yaml are deployed, each with exactly the environment the deployed-stack tests resolve for it (the
same SAM transform and resolver), the search endpoint given as a parameter; it prints the URLs and a tenant key.
(Running the README's curl block through what it deployed is not done here yet: the functions deployed in moto
do not run.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import boto3
import pytest

from ragline.serverless.template_tables import load_template
from tests.support.cfn import ROOT, Resolver, sam_transform
from tests.support.servers import free_port

SEARCH = "http://127.0.0.1:9200"


@pytest.fixture(scope="module")
def moto_url():
    from moto.core.models import default_user_config
    from moto.server import ThreadedMotoServer

    default_user_config["lambda"] = {"use_docker": False}
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


def test_deploy_local_deploys_every_function_with_the_templates_environment(moto_url, tmp_path):
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    host = moto_url.removeprefix("http://")
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "deploy_local.py"),
            "--localstack-host",
            host,
            "--skip-deps",
            "--opensearch-endpoint",
            SEARCH,
            "--build-dir",
            str(tmp_path / "build"),
            "--prefix",
            "local",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    print(done.stdout)
    assert done.returncode == 0, done.stderr[-3000:]
    session = boto3.Session(aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1")
    lam = session.client("lambda", endpoint_url=moto_url)
    template = load_template(Path(ROOT / "template.yaml"))
    functions = [k for k, v in template["Resources"].items() if v["Type"] == "AWS::Serverless::Function"]
    assert len(functions) == 5
    names = {
        "IngestTurnFunction": "local-ingest-turn",
        "IndexDocumentFunction": "local-index-document",
        "PipelineStepFunction": "local-pipeline-step",
        "StreamReaderFunction": "local-stream-reader",
        "SweepFunction": "local-sweep",
    }
    assert sorted(names) == sorted(functions)
    deployed = {f: lam.get_function_configuration(FunctionName=n) for f, n in names.items()}
    stream_url = lam.get_function_url_config(FunctionName=names["StreamReaderFunction"])["FunctionUrl"]
    api_url = lam.get_function_url_config(FunctionName=names["IngestTurnFunction"])["FunctionUrl"]
    machines = session.client("stepfunctions", endpoint_url=moto_url).list_state_machines()["stateMachines"]
    (machine,) = [m for m in machines if m["name"] == "local-pipeline"]

    # What the deployed-stack harness resolves for the same names and parameters.
    parameters = {"OpenSearchEndpoint": SEARCH}
    account = deployed["SweepFunction"]["FunctionArn"].split(":")[4]
    refs = {t: f"local-{t.removesuffix('Table').lower()}" for t in template["Resources"] if t.endswith("Table")}
    refs |= {f: n for f, n in names.items()} | {"StateBucket": "local-state"}
    refs["PipelineStateMachine"] = machine["stateMachineArn"]
    # The template's generated secret, created by the script under the stack's prefix.
    secrets = session.client("secretsmanager", endpoint_url=moto_url)
    refs["TokenSigningSecret"] = secrets.describe_secret(SecretId="local-TokenSigningSecret")["ARN"]
    attributes = {f"{f}.Arn": deployed[f]["FunctionArn"] for f in names}
    attributes["StreamReaderFunctionUrl.FunctionUrl"] = stream_url
    resolver = Resolver(
        sam_transform(template, parameters), parameters, refs, attributes, account_id=account, stack_name="local"
    )
    tables = set(session.client("dynamodb", endpoint_url=moto_url).list_tables()["TableNames"])
    for function_id, config in deployed.items():
        variables = config["Environment"]["Variables"]
        expected = {**resolver.environment(function_id), "RAGLINE_CONFIG_DIR": "/var/task/config"}
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
    assert f"API (ingest_turn)      {api_url}" in done.stdout
    assert f"SSE (stream_reader)    {stream_url}" in done.stdout
    assert "X-API-Key: " in done.stdout
