"""Fixtures for the live engines: a real OpenSearch 2.19 (k-NN plugin) and a real Neo4j 5 on 127.0.0.1.

`make test` starts both once for the whole run, in the background while lint and the first tests run
(``scripts/engines/engines.py run -- ...``), and names a state file in ``RAGLINE_ENGINES_STATE``: a live test
waits there until its engine is ready. A pytest run started any other way starts the engine a test asks for
on first use, once per session, and stops it at the end. Where Java or Maven is missing the live tests
skip, with the reason; under CI (``CI=true``) that skip is a failure. An engine that was found but failed to
start always fails the test.

- ``opensearch`` (session): :class:`LiveOpenSearch` with the URL and the k-NN engine the node supports (its
  indices refresh every ``TEST_REFRESH_INTERVAL``);
- ``opensearch_client`` (session): an ``opensearch-py`` client on it;
- ``opensearch_index`` (module): a fresh index name, deleted after the module;
- ``neo4j_server`` (session): :class:`LiveNeo4j` with the Bolt URI and credentials (authentication is on).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from scripts.engines import engines as launcher

# The node runs from Maven Central's k-NN zip, which ships no native library: Lucene's HNSW is the k-NN
# engine it supports (faiss and nmslib need the distribution's native libraries).
LOCAL_KNN_ENGINE = "lucene"


@dataclass(frozen=True)
class LiveOpenSearch:
    url: str
    knn_engine: str = LOCAL_KNN_ENGINE

    def env(self, index: str) -> dict[str, str]:
        """The settings a ragline process reads to search this node in ``index``."""
        return {
            "RAGLINE_OPENSEARCH_URL": self.url,
            "RAGLINE_OPENSEARCH_INDEX": index,
            "RAGLINE_OPENSEARCH_KNN_ENGINE": self.knn_engine,
        }


@dataclass(frozen=True)
class LiveNeo4j:
    uri: str
    user: str
    password: str

    def env(self) -> dict[str, str]:
        """The settings a ragline process reads to use this server as its graph."""
        return {"NEO4J_URI": self.uri, "NEO4J_USER": self.user, "NEO4J_PASSWORD": self.password}


# Engine name -> why it is unavailable: one line per engine at the end of the run, whatever skipped.
_UNAVAILABLE: dict[str, str] = {}


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for name, reason in _UNAVAILABLE.items():
        terminalreporter.write_line(f"live {name} unavailable, its tests did not run: {reason}", yellow=True)


def _unavailable(name: str, reason: str) -> None:
    _UNAVAILABLE[name] = reason
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"live {name} unavailable under CI, where these suites must run: {reason}", pytrace=False)
    pytest.skip(f"live {name} unavailable: {reason}")


class _Session:
    """The engines of this pytest session: from the state file `make test` wrote, else started here."""

    def __init__(self) -> None:
        path = os.environ.get(launcher.STATE_ENV, "")
        self._given = Path(path) if path else None
        self._started: dict[str, launcher.Engines] = {}

    def state(self, name: str) -> dict[str, Any]:
        if self._given is not None:
            return launcher.read_state(self._given, name)  # waits while the runner still starts it
        if name not in self._started:
            self._started[name] = launcher.Engines(only=[name]).__enter__()
        return self._started[name].state[name]

    def require(self, name: str) -> dict[str, Any]:
        state = self.state(name)
        if "unavailable" in state:
            _unavailable(name, str(state["unavailable"]))
        if "error" in state:
            pytest.fail(f"live {name} did not start: {state['error']}", pytrace=False)
        return state

    def close(self) -> None:
        for engines in self._started.values():
            engines.stop()
        self._started.clear()


@pytest.fixture(scope="session")
def _live_engines() -> Iterator[_Session]:
    session = _Session()
    yield session
    session.close()


# Every index the tests create refreshes every 100 ms instead of OpenSearch's default second. ragline's writes
# ask for ``refresh=wait_for`` (searchable before they return), which waits for the next scheduled refresh:
# about half a second per bulk request at the default, several per upload on the AWS stack. The writes wait
# for the same thing, only sooner.
TEST_REFRESH_INTERVAL = "100ms"


def _refresh_template(url: str) -> None:
    import httpx

    reply = httpx.put(
        f"{url}/_index_template/ragline-tests",
        json={
            "index_patterns": ["*"],
            "priority": 0,
            "template": {"settings": {"refresh_interval": TEST_REFRESH_INTERVAL}},
        },
        timeout=60,
    )
    reply.raise_for_status()


@pytest.fixture(scope="session")
def opensearch(_live_engines: _Session) -> LiveOpenSearch:
    state = _live_engines.require("opensearch")
    _refresh_template(str(state["url"]))
    return LiveOpenSearch(url=str(state["url"]), knn_engine=str(state.get("knn_engine", LOCAL_KNN_ENGINE)))


@pytest.fixture(scope="session")
def opensearch_client(opensearch: LiveOpenSearch) -> Iterator[Any]:
    from opensearchpy import OpenSearch

    client = OpenSearch(hosts=[opensearch.url], timeout=60)
    yield client
    client.close()


@pytest.fixture(scope="module")
def opensearch_index(opensearch_client: Any) -> Iterator[str]:
    """A fresh index name for one test module; the index (if the module created it) is deleted after."""
    name = f"ragline-test-{uuid.uuid4().hex[:12]}"
    yield name
    opensearch_client.indices.delete(index=name, params={"ignore_unavailable": "true"})


@pytest.fixture(scope="session")
def neo4j_server(_live_engines: _Session) -> LiveNeo4j:
    state = _live_engines.require("neo4j")
    return LiveNeo4j(uri=str(state["uri"]), user=str(state["user"]), password=str(state["password"]))
