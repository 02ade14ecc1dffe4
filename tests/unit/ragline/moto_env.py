"""moto for the unit tests of the AWS adapters: fake credentials, every table of template.yaml, the state bucket.

Tables are never created by hand: ``create_tables_from_template`` reads their key schemas and TTL from the
template, so an adapter tested here runs against the tables that get deployed.

One moto account per test module (clients are slow to build); every test starts from an empty account with
the template's tables freshly created, so no test sees another's items.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.support.aws import create_tables_from_template

REGION = "us-east-1"
ACCOUNT_ID = "123456789012"
STATE_BUCKET = "ragline-state-unit"
FAKE_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
}


@dataclass
class MotoAws:
    """One moto account: a boto3 session in it, the template's tables by logical id, the state bucket."""

    session: boto3.Session
    tables: dict[str, str] = field(default_factory=dict)
    bucket: str = STATE_BUCKET
    _clients: dict[str, Any] = field(default_factory=dict)
    _dynamodb: Any = None

    def client(self, service: str) -> Any:
        if service not in self._clients:
            self._clients[service] = self.session.client(service)
        return self._clients[service]

    def table(self, logical_id: str) -> Any:
        if self._dynamodb is None:
            self._dynamodb = self.session.resource("dynamodb")
        return self._dynamodb.Table(self.tables[logical_id])


class MotoAccount:
    """A running ``mock_aws``; :meth:`fresh` empties it and creates the template's tables and the bucket."""

    def __init__(self, mock: Any, aws: MotoAws) -> None:
        self._mock = mock
        self._aws = aws

    def fresh(self) -> MotoAws:
        self._mock.reset()
        self._aws.tables = create_tables_from_template(self._aws.client("dynamodb"))
        self._aws.client("s3").create_bucket(Bucket=self._aws.bucket)
        return self._aws


@contextmanager
def moto_account() -> Iterator[MotoAccount]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name, value in FAKE_ENVIRONMENT.items():
            monkeypatch.setenv(name, value)
        # Nothing in the environment may point a client at a real account or a LocalStack endpoint.
        for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "RAGLINE_AWS_ENDPOINT_URL"):
            monkeypatch.delenv(name, raising=False)
        with mock_aws() as mock:
            yield MotoAccount(mock, MotoAws(session=boto3.Session(region_name=REGION)))
