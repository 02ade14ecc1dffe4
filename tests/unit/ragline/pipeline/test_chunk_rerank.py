import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from ragline.pipeline.chunk_rerank import (
    DIAGNOSTICS_KEY,
    PluginMemoryAffinity,
    PluginRerank,
    PluginWikiBoost,
    has_explicit_scope,
)
from ragline.pipeline.plugin import ERR_SEARCH_NOTHING, EventManager
from ragline.reranking.config import RerankConfig
from ragline.reranking.providers import RemoteRerankModel
from ragline.reranking.registry import RerankModelRegistry
from ragline.reranking.scoring import RerankOutcome
from ragline.types import ChatManage, ChunkType, EventType, MatchType, SearchResult, SearchTarget, SearchTargetType
from tests.support.servers import ServerThread

# --- a fake Jina/Cohere-style rerank server on 127.0.0.1


class FakeRerankServer:
    """Scores each document by the first word of ``scores`` it contains (0.0 otherwise)."""

    def __init__(self) -> None:
        self.scores: dict[str, float] = {}
        self.score_key = "relevance_score"
        self.fail_with: int | None = None
        self.requests: list[dict[str, Any]] = []
        self.app = FastAPI()
        self.app.post("/v1/rerank")(self.rerank)

    async def rerank(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(body)
        if self.fail_with is not None:
            return JSONResponse({"error": "overloaded"}, status_code=self.fail_with)
        results = []
        for index, document in enumerate(body["documents"]):
            score = next((s for word, s in self.scores.items() if word in document), 0.0)
            results.append({"index": index, self.score_key: score})
        results.sort(key=lambda r: -r[self.score_key])
        return JSONResponse({"model": body["model"], "results": results[: body["top_n"]]})


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[FakeRerankServer, str]]:
    fake = FakeRerankServer()
    thread = ServerThread(fake.app).start()
    yield fake, thread.url
    thread.stop()


@pytest.fixture
def remote(server) -> Iterator[tuple[FakeRerankServer, RerankModelRegistry]]:
    fake, url = server
    fake.scores, fake.score_key, fake.fail_with = {}, "relevance_score", None
    fake.requests.clear()
    registry = RerankModelRegistry()
    registry.add("fake-remote", lambda: RemoteRerankModel(f"{url}/v1", "fake-reranker"))
    return fake, registry


# --- helpers


class Inner:
    """The rest of the chain: records that it ran and what rerank left behind."""

    def __init__(self) -> None:
        self.calls = 0
        self.seen: list[str] = []

    def activation_events(self):
        return [EventType.CHUNK_RERANK]

    async def on_event(self, event_type, cm, next):
        self.calls += 1
        self.seen = [r.id for r in cm.state.rerank_result]
        return await next()


def hit(id: str, content: str, score: float = 0.5, **fields) -> SearchResult:
    return SearchResult(
        id=id, content=content, score=score, knowledge_id=fields.pop("knowledge_id", f"doc-{id}"), **fields
    )


def chat(make_request, results: list[SearchResult], **request_fields) -> ChatManage:
    cm = ChatManage.start(make_request(**request_fields))
    cm.state.search_result = results
    return cm


def trigger(cm: ChatManage, *plugins, registry: RerankModelRegistry | None = None):
    manager = EventManager()
    for plugin in plugins:
        manager.register(plugin)

    async def run():
        try:
            return await manager.trigger(EventType.CHUNK_RERANK, cm)
        finally:
            if registry is not None:
                await registry.release_loop()

    return asyncio.run(run())


def outcome(cm: ChatManage) -> RerankOutcome:
    return cm.context.extras[DIAGNOSTICS_KEY].outcome


# --- skips and outcomes that keep the search results


def test_skips_when_the_intent_needs_no_retrieval(make_request):
    cm = chat(make_request, [hit("a", "text")])
    cm.state.intent = "chitchat"
    inner = Inner()
    assert trigger(cm, PluginRerank(RerankModelRegistry()), inner) is None
    assert inner.calls == 1
    assert DIAGNOSTICS_KEY not in cm.context.extras


def test_no_candidates(make_request):
    cm = chat(make_request, [])
    inner = Inner()
    assert trigger(cm, PluginRerank(RerankModelRegistry()), inner) is None
    assert outcome(cm) == RerankOutcome.NO_CANDIDATES
    assert inner.calls == 1


def test_no_model_keeps_search_results_diversified(make_request):
    results = [
        hit("a", "refund policy seven days", 0.9),
        hit("b", "refund policy seven days again", 0.88),
        hit("c", "shipping costs and carriers", 0.7),
        hit("g", "entity", 0.0, match_type=MatchType.GRAPH),
    ]
    cm = chat(make_request, results, rerank_top_k=2)
    inner = Inner()
    assert trigger(cm, PluginRerank(RerankModelRegistry()), inner) is None
    assert outcome(cm) == RerankOutcome.NO_MODEL
    assert cm.state.rerank_result == []
    assert [r.id for r in cm.state.search_result] == ["a", "c", "g"]
    assert [r.score for r in cm.state.search_result] == [0.9, 0.7, 0.0]
    assert inner.calls == 1


def test_no_model_without_diversification_leaves_search_results_alone(make_request):
    results = [hit("a", "same words here", 0.9), hit("b", "same words here too", 0.8), hit("c", "other", 0.1)]
    cm = chat(make_request, list(results), rerank_top_k=1)
    trigger(cm, PluginRerank(RerankModelRegistry(), RerankConfig(diversify_without_model=False)))
    assert outcome(cm) == RerankOutcome.NO_MODEL
    assert cm.state.search_result == results


def test_unknown_model_is_unavailable_and_keeps_search_results(make_request):
    results = [hit("a", "text", 0.9), hit("b", "text two", 0.8)]
    cm = chat(make_request, list(results), rerank_model_id="nope")
    inner = Inner()
    assert trigger(cm, PluginRerank(RerankModelRegistry()), inner) is None
    assert outcome(cm) == RerankOutcome.MODEL_UNAVAILABLE
    assert "nope" in cm.context.extras[DIAGNOSTICS_KEY].error
    assert cm.state.search_result == results
    assert cm.state.rerank_result == []
    assert inner.calls == 1


def test_model_that_cannot_be_built_is_unavailable(make_request):
    registry = RerankModelRegistry()

    def broken():
        raise FileNotFoundError("no model.onnx in /models/ce")

    registry.add("local", broken)
    cm = chat(make_request, [hit("a", "text")])
    assert trigger(cm, PluginRerank(registry), Inner()) is None
    assert outcome(cm) == RerankOutcome.MODEL_UNAVAILABLE
    assert "model.onnx" in cm.context.extras[DIAGNOSTICS_KEY].error


# --- against the fake remote server


def test_remote_scores_parsed_with_composite_metadata(make_request, remote):
    fake, registry = remote
    fake.scores = {"alpha": 0.9, "beta": 0.6, "gamma": 0.05}
    results = [hit("a", "alpha text", 0.4), hit("b", "beta text", 0.8), hit("c", "gamma text", 0.95)]
    cm = chat(make_request, results, rerank_model_id="fake-remote", rerank_threshold=0.3)
    inner = Inner()
    assert trigger(cm, PluginRerank(registry), inner, registry=registry) is None
    assert outcome(cm) == RerankOutcome.OK
    assert inner.seen == ["a", "b"]
    first, second = cm.state.rerank_result
    assert first.metadata == {"base_score": "0.4000", "model_score": "0.9000", "composite_score": "0.7600"}
    assert first.score == pytest.approx(0.76)
    assert second.metadata["composite_score"] == "0.7000"
    # The search results stay as retrieved.
    assert [r.score for r in cm.state.search_result] == [0.4, 0.8, 0.95]
    request = fake.requests[0]
    assert request["model"] == "fake-reranker"
    assert request["query"] == cm.search_query
    assert request["top_n"] == 3


def test_remote_score_key_variant(make_request, remote):
    fake, registry = remote
    fake.scores, fake.score_key = {"alpha": 0.9}, "score"
    cm = chat(make_request, [hit("a", "alpha")], rerank_model_id="fake-remote")
    trigger(cm, PluginRerank(registry), registry=registry)
    assert cm.state.rerank_result[0].metadata["model_score"] == "0.9000"


def test_default_model_serves_requests_naming_none(make_request, remote):
    fake, registry = remote
    fake.scores = {"alpha": 0.9}
    cm = chat(make_request, [hit("a", "alpha")])
    trigger(cm, PluginRerank(registry), registry=registry)
    assert outcome(cm) == RerankOutcome.OK
    assert cm.context.extras[DIAGNOSTICS_KEY].model_id == "fake-remote"


def test_remote_threshold_degrade(make_request, remote):
    fake, registry = remote
    fake.scores = {"alpha": 0.45, "beta": 0.40}
    cm = chat(make_request, [hit("a", "alpha"), hit("b", "beta")], rerank_model_id="fake-remote", rerank_threshold=0.6)
    assert trigger(cm, PluginRerank(registry), registry=registry) is None
    diagnostics = cm.context.extras[DIAGNOSTICS_KEY]
    assert diagnostics.outcome == RerankOutcome.THRESHOLD_DEGRADED
    assert diagnostics.effective_threshold == pytest.approx(0.42)
    assert [r.id for r in cm.state.rerank_result] == ["a"]
    # The same scores are re-filtered: one model call, not two.
    assert len(fake.requests) == 1


def test_remote_fallback_top1(make_request, remote):
    fake, registry = remote
    fake.scores = {"alpha": 0.2, "beta": 0.16}
    cm = chat(make_request, [hit("a", "alpha"), hit("b", "beta")], rerank_model_id="fake-remote", rerank_threshold=0.5)
    assert trigger(cm, PluginRerank(registry), registry=registry) is None
    assert outcome(cm) == RerankOutcome.FALLBACK_TOP1
    assert [r.id for r in cm.state.rerank_result] == ["a"]


def test_remote_all_below_threshold_is_search_nothing(make_request, remote):
    fake, registry = remote
    fake.scores = {"alpha": 0.1}
    cm = chat(make_request, [hit("a", "alpha"), hit("b", "beta")], rerank_model_id="fake-remote", rerank_threshold=0.5)
    inner = Inner()
    assert trigger(cm, PluginRerank(registry), inner, registry=registry) == ERR_SEARCH_NOTHING
    assert outcome(cm) == RerankOutcome.ALL_BELOW_THRESHOLD
    assert inner.calls == 0


@pytest.mark.parametrize(
    "scope",
    [
        {"knowledge_ids": ("doc-a",)},
        {
            "search_targets": (
                SearchTarget(type=SearchTargetType.KNOWLEDGE, knowledge_base_id="kb", knowledge_ids=("doc-a",)),
            )
        },
        {"search_targets": (SearchTarget(knowledge_base_id="kb", tag_ids=("tag-1",)),)},
    ],
    ids=["knowledge ids", "narrowed target", "tag target"],
)
def test_remote_explicit_scope_keeps_top1(make_request, remote, scope):
    fake, registry = remote
    fake.scores = {"alpha": 0.02, "beta": 0.01}
    cm = chat(
        make_request,
        [hit("a", "alpha"), hit("b", "beta")],
        rerank_model_id="fake-remote",
        rerank_threshold=0.5,
        **scope,
    )
    assert trigger(cm, PluginRerank(registry), registry=registry) is None
    assert outcome(cm) == RerankOutcome.FALLBACK_TOP1
    assert [r.id for r in cm.state.rerank_result] == ["a"]


def test_whole_knowledge_base_is_no_explicit_scope(make_request):
    assert not has_explicit_scope(
        make_request(knowledge_base_ids=("kb",), search_targets=(SearchTarget(knowledge_base_id="kb"),))
    )


@pytest.mark.parametrize("status", [500, 429, 404])
def test_remote_model_error_keeps_raw_search_results(make_request, remote, status):
    fake, registry = remote
    fake.fail_with = status
    results = [hit("a", "alpha", 0.9), hit("b", "beta", 0.3)]
    cm = chat(make_request, list(results), rerank_model_id="fake-remote")
    inner = Inner()
    assert trigger(cm, PluginRerank(registry), inner, registry=registry) is None
    assert outcome(cm) == RerankOutcome.MODEL_ERROR
    assert str(status) in cm.context.extras[DIAGNOSTICS_KEY].error
    assert cm.state.rerank_result == []
    assert cm.state.search_result == results
    assert inner.calls == 1


def test_remote_faq_boost_metadata(make_request, remote):
    fake, registry = remote
    fake.scores = {"doc": 0.8, "faq": 0.7}
    results = [hit("d", "doc text", 0.5), hit("f", "faq text", 0.5, chunk_type=ChunkType.FAQ)]
    cm = chat(make_request, results, rerank_model_id="fake-remote", faq_priority_enabled=True, faq_score_boost=1.2)
    trigger(cm, PluginRerank(registry), registry=registry)
    faq = next(r for r in cm.state.rerank_result if r.id == "f")
    assert faq.metadata["faq_boosted"] == "true"
    assert faq.metadata["faq_original_score"] == "0.6700"
    assert faq.score == pytest.approx(0.67 * 1.2)
    assert [r.id for r in cm.state.rerank_result] == ["f", "d"]
    off = chat(make_request, results, rerank_model_id="fake-remote", faq_priority_enabled=False, faq_score_boost=1.2)
    trigger(off, PluginRerank(registry), registry=registry)
    assert all("faq_boosted" not in r.metadata for r in off.state.rerank_result)


def test_remote_top_k_applies_mmr(make_request, remote):
    fake, registry = remote
    fake.scores = {"refund": 0.9, "shipping": 0.8}
    results = [
        hit("a", "refund policy seven days", 0.9),
        hit("b", "refund policy seven days again", 0.9),
        hit("c", "shipping costs and carriers", 0.9),
    ]
    cm = chat(make_request, results, rerank_model_id="fake-remote", rerank_top_k=2)
    trigger(cm, PluginRerank(registry), registry=registry)
    assert [r.id for r in cm.state.rerank_result] == ["a", "c"]


# --- the chain: Rerank → WikiBoost → MemoryAffinity


class RecordingHistory:
    def __init__(self, log: list[str], hits: dict[str, int]) -> None:
        self.log = log
        self.hits = hits
        self.calls: list[tuple[str, str, int]] = []

    def cited_documents(self, tenant_id: str, user_id: str, limit: int = 200) -> dict[str, int]:
        self.calls.append((tenant_id, user_id, limit))
        self.log.append("memory:lookup")
        return self.hits


def chain(registry, wiki_enabled, history):
    return [PluginRerank(registry), PluginWikiBoost(wiki_enabled), PluginMemoryAffinity(history)]


def test_memory_affinity_post_processes_before_wiki_boost(make_request, remote):
    fake, registry = remote
    fake.scores = {"wiki": 0.7, "familiar": 0.7, "plain": 0.7}
    results = [
        hit("w", "wiki summary", 0.5, chunk_type=ChunkType.WIKI_PAGE, knowledge_base_id="kb-wiki"),
        hit("m", "familiar passage", 0.5, knowledge_id="doc-familiar"),
        hit("p", "plain passage", 0.5),
    ]
    cm = chat(make_request, results, rerank_model_id="fake-remote", user_id="u-1", knowledge_base_ids=("kb-wiki",))
    log: list[str] = []
    snapshots: dict[str, dict[str, float]] = {}

    def wiki_enabled(kb_id: str) -> bool:
        log.append("wiki:lookup")
        snapshots["at_wiki"] = {r.id: r.score for r in cm.state.rerank_result}
        return kb_id == "kb-wiki"

    history = RecordingHistory(log, {"doc-familiar": 8})
    assert trigger(cm, *chain(registry, wiki_enabled, history), registry=registry) is None
    # Innermost post-processes first: memory affinity, then wiki boost.
    assert log == ["memory:lookup", "wiki:lookup"]
    composite = 0.6 * 0.7 + 0.3 * 0.5 + 0.1
    assert snapshots["at_wiki"]["m"] == pytest.approx(composite * 1.15)
    assert snapshots["at_wiki"]["w"] == pytest.approx(composite)
    final = {r.id: r.score for r in cm.state.rerank_result}
    assert final == {
        "w": pytest.approx(composite * 1.3),
        "m": pytest.approx(composite * 1.15),
        "p": pytest.approx(composite),
    }
    assert [r.id for r in cm.state.rerank_result] == ["w", "m", "p"]
    assert history.calls == [("t-1", "u-1", 200)]


def test_boosts_do_not_run_when_rerank_finds_nothing(make_request, remote):
    fake, registry = remote
    fake.scores = {}
    cm = chat(make_request, [hit("a", "alpha")], rerank_model_id="fake-remote", rerank_threshold=0.5)
    log: list[str] = []
    history = RecordingHistory(log, {"doc-a": 5})
    error = trigger(cm, *chain(registry, lambda kb: log.append("wiki") or True, history), registry=registry)
    assert error == ERR_SEARCH_NOTHING
    assert log == []


def test_boost_failures_never_fail_the_stage(make_request, remote):
    fake, registry = remote
    fake.scores = {"wiki": 0.9, "text": 0.8}
    results = [hit("w", "wiki page", 0.5, chunk_type=ChunkType.WIKI_PAGE), hit("t", "text", 0.5)]
    cm = chat(make_request, results, rerank_model_id="fake-remote", knowledge_base_ids=("kb",))

    class BrokenHistory:
        def cited_documents(self, tenant_id, user_id, limit=200):
            raise RuntimeError("database is locked")

    def broken_wiki(kb_id: str) -> bool:
        raise ConnectionError("knowledge base service down")

    assert trigger(cm, *chain(registry, broken_wiki, BrokenHistory()), registry=registry) is None
    assert [r.id for r in cm.state.rerank_result] == ["w", "t"]
    assert all("wiki_boosted" not in r.metadata for r in cm.state.rerank_result)


def test_boosts_apply_to_search_results_when_no_model_ran(make_request):
    results = [
        hit("t", "plain text", 0.80),
        hit("w", "wiki page", 0.70, chunk_type=ChunkType.WIKI_PAGE, knowledge_base_id="kb"),
    ]
    cm = chat(make_request, results, knowledge_base_ids=("kb",))
    history = RecordingHistory([], {})
    trigger(cm, *chain(RerankModelRegistry(), lambda kb: True, history))
    assert outcome(cm) == RerankOutcome.NO_MODEL
    assert [r.id for r in cm.state.search_result] == ["w", "t"]
    assert cm.state.search_result[0].score == pytest.approx(0.91)


def test_wiki_boost_needs_a_wiki_enabled_knowledge_base(make_request):
    results = [
        hit("t", "plain text", 0.80),
        hit("w1", "wiki page one", 0.70, chunk_type=ChunkType.WIKI_PAGE, knowledge_base_id="kb-plain"),
        hit("w2", "wiki page two", 0.65, chunk_type=ChunkType.WIKI_PAGE),
    ]
    cm = chat(make_request, results, knowledge_base_ids=("kb-plain",))
    lookups: list[str] = []

    def wiki_enabled(kb_id: str) -> bool:
        lookups.append(kb_id)
        return False

    trigger(cm, PluginRerank(RerankModelRegistry()), PluginWikiBoost(wiki_enabled))
    assert [r.score for r in cm.state.search_result] == [0.80, 0.70, 0.65]
    # One lookup per knowledge base per turn.
    assert lookups == ["kb-plain"]


def test_wiki_boost_skips_lookups_without_wiki_pages(make_request):
    cm = chat(make_request, [hit("t", "text")], knowledge_base_ids=("kb",))
    lookups: list[str] = []
    trigger(cm, PluginRerank(RerankModelRegistry()), PluginWikiBoost(lambda kb: lookups.append(kb) or True))
    assert lookups == []
