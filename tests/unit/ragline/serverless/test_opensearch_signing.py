"""The functions' OpenSearch client signs every request with SigV4 for ``es`` (an OpenSearch Service domain);
an OpenSearch Serverless endpoint is refused, since its vector collections refuse what the engine writes. A
local HTTP server records what arrives."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3
import pytest

from ragline.serverless.aws import UnsupportedSearchService, opensearch_client, signing_service
from ragline.serverless.settings import AwsSettings


@pytest.fixture
def recorder():
    received: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            return

        def _answer(self):
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            received.append({k.lower(): v for k, v in self.headers.items()})
            body = json.dumps({"version": {"number": "2.19.1", "distribution": "opensearch"}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_HEAD = _answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", received
    server.shutdown()
    server.server_close()


def test_a_domain_is_signed_for_es_and_an_opensearch_serverless_endpoint_is_refused():
    """OpenSearch Serverless vector collections refuse the engine's custom ids and _delete_by_query: a function
    configured with one fails at its first search, saying so, instead of failing every upload's indexing."""
    assert signing_service("https://search-ragline-x.us-east-1.es.amazonaws.com") == "es"
    assert signing_service("https://vpc-ragline-x.eu-west-1.es.amazonaws.com") == "es"
    assert signing_service("http://127.0.0.1:9200") == "es"
    with pytest.raises(UnsupportedSearchService, match="OpenSearch Serverless is not supported"):
        signing_service("https://abc123.us-east-1.aoss.amazonaws.com")
    session = boto3.Session(aws_access_key_id="a", aws_secret_access_key="s", region_name="eu-west-1")
    with pytest.raises(UnsupportedSearchService, match="_delete_by_query"):
        opensearch_client(AwsSettings(opensearch_url="http://127.0.0.1:9", opensearch_service="aoss"), session)


@pytest.mark.parametrize("service", ["es"])
def test_every_request_is_signed_with_sigv4_for_its_service(recorder, service):
    url, received = recorder
    session = boto3.Session(
        aws_access_key_id="ASIAFUNCTION",
        aws_secret_access_key="secret",
        aws_session_token="token",
        region_name="eu-west-1",
    )
    client = opensearch_client(AwsSettings(opensearch_url=url, opensearch_service=service), session)
    client.info()
    client.search(index="ragline-chunks", body={"query": {"match_all": {}}})
    assert len(received) == 2
    for headers in received:
        authorization = headers["authorization"]
        assert authorization.startswith("AWS4-HMAC-SHA256 Credential=ASIAFUNCTION/")
        assert f"/eu-west-1/{service}/aws4_request" in authorization
        assert headers["x-amz-security-token"] == "token"
        assert "x-amz-date" in headers
