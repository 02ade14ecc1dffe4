"""The template deployed with its defaults: no OpenSearchEndpoint, so the stack creates its own OpenSearch
Service domain (``SearchDomain``), and every function that searches or indexes gets that domain's endpoint from
``GetAtt`` and grants on its ARN from the ``CreateSearchDomain`` branch. The sandboxes route the domain's host to
the live node (as DNS would resolve it); the requests are signed and checked against the stack's domain ARN.

The k-NN engine parameter is the one deviation from the defaults: the template's faiss needs the k-NN plugin's
native library, which the node run from Maven Central's zip does not ship (tests/support/engines.py), so lucene.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.scripted_model import Script
from tests.support.serverless import DeployedStack, StackClient, checked_client, scripted_stack
from tests.support.sse import answer_text


@pytest.fixture(scope="module")
def provisioned(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, scripted: Any
) -> Iterator[DeployedStack]:
    request.getfixturevalue("opensearch")  # skips (fails under CI) without the live node
    with scripted_stack(request, tmp_path_factory.mktemp("aws-domain"), scripted, provisioned_domain=True) as stack:
        yield stack


@pytest.fixture
def tenant(provisioned: DeployedStack) -> Iterator[StackClient]:
    with checked_client(provisioned) as client:
        yield client


def test_the_default_deploy_creates_its_domain_and_searches_it(provisioned, tenant, scripted):
    stack = provisioned
    domain_arn = stack.resolver.attributes["SearchDomain.Arn"]
    endpoint = f"https://{stack.resolver.attributes['SearchDomain.DomainEndpoint']}"
    # Each function that searches or indexes is given the stack's own domain, as CloudFormation resolves it.
    for function in ("IngestTurnFunction", "IndexDocumentFunction", "PipelineStepFunction"):
        assert stack.resolver.environment(function)["RAGLINE_OPENSEARCH_URL"] == endpoint
    since = len(stack.calls())
    kb = tenant.kb({"Tea basics": "# Tea\n\nGreen tea is brewed at 70 to 80 degrees Celsius for two to three minutes."})
    session = tenant.session([kb])
    scripted.queue(Script.answer("70 to 80 °C ", '<ref id="c1"/>', "."))
    ids = tenant.ask(session, "What temperature for green tea?")
    frames = tenant.frames(ids)
    assert frames[-1].type == "complete"
    references = next(f for f in frames if f.type == "references").data["knowledge_references"]
    assert [r["knowledge_title"] for r in references] == ["Tea basics"]
    assert "<kb doc=" in answer_text(frames)
    # Indexed and searched under the functions' own roles, each request on the stack's domain and allowed by
    # the CreateSearchDomain branch of their policies.
    opensearch = [c for c in stack.calls()[since:] if c.action.startswith("es:")]
    assert {"IndexDocumentFunction", "PipelineStepFunction"} <= {c.function for c in opensearch}
    assert all(c.allowed for c in opensearch)
    assert all(c.resource.startswith(f"{domain_arn}/") for c in opensearch)
    assert stack.denials() == []
