import asyncio

import pytest

from ragline.config import load_config
from ragline.graph.extract import GraphExtractor
from ragline.pipeline.extract_entity import PluginExtractEntity, scope_knowledge_base_ids
from ragline.pipeline.plugin import EventManager
from ragline.store.models import Document
from ragline.types import ChatManage, EventType, SearchTarget, SearchTargetType
from tests.unit.ragline.graph.fakes import ScriptedChatModel, registry_with

_, TEMPLATES = load_config()
GRAPH_KBS = {"kb-graph", "kb-graph-2"}


class OuterUnderstanding:
    """Stands in for PluginQueryUnderstand, the outer link: rewrites and classifies, then calls next()."""

    def __init__(self, rewrite: str, intent: str) -> None:
        self.rewrite = rewrite
        self.intent = intent

    def activation_events(self):
        return [EventType.QUERY_UNDERSTAND]

    async def on_event(self, event_type, cm, next):
        cm.state.rewrite_query = self.rewrite
        cm.state.intent = self.intent
        return await next()


class Tail:
    """The innermost link: records that the chain went on, and what it saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[list[str], list[str]]] = []

    def activation_events(self):
        return [EventType.QUERY_UNDERSTAND]

    async def on_event(self, event_type, cm, next):
        self.seen.append((list(cm.state.entity), list(cm.state.entity_kb_ids)))
        return await next()


class Documents:
    """Just enough KnowledgeStore for resolving documents named by a request."""

    def __init__(self, *documents: Document) -> None:
        self._documents = {d.id: d for d in documents}

    def document(self, tenant_id, document_id):
        document = self._documents.get(document_id)
        return document if document is not None and document.tenant_id == tenant_id else None


def plugin(model, graph_enabled=True, knowledge=None):
    extractor = GraphExtractor(registry_with(model), TEMPLATES)
    return PluginExtractEntity(extractor, graph_enabled, lambda kb_id: kb_id in GRAPH_KBS, knowledge=knowledge)


def run_chain(inner, cm, rewrite="Who founded Acme Corp?", intent="kb_search"):
    events = EventManager()
    tail = Tail()
    events.register(OuterUnderstanding(rewrite, intent))
    events.register(inner)
    events.register(tail)
    error = asyncio.run(events.trigger(EventType.QUERY_UNDERSTAND, cm))
    assert error is None
    assert len(tail.seen) == 1, "the chain always goes on"
    return tail.seen[0]


def test_entities_of_the_rewritten_question_are_extracted_after_understanding(make_request):
    model = ScriptedChatModel(reply='["Acme Corp"]')
    cm = ChatManage.start(
        make_request(query="And who founded it?", knowledge_base_ids=("kb-plain", "kb-graph", "kb-graph-2"))
    )
    seen = run_chain(plugin(model), cm)
    assert seen == (["Acme Corp"], ["kb-graph", "kb-graph-2"])
    assert (cm.state.entity, cm.state.entity_kb_ids) == (["Acme Corp"], ["kb-graph", "kb-graph-2"])
    [prompt] = model.prompts
    assert "Question: Who founded Acme Corp?" in prompt  # the rewrite, not "And who founded it?"


def test_the_empty_intent_still_extracts(make_request):
    model = ScriptedChatModel(reply='["Acme Corp"]')
    cm = ChatManage.start(make_request(knowledge_base_ids=("kb-graph",)))
    assert run_chain(plugin(model), cm, intent="") == (["Acme Corp"], ["kb-graph"])


def test_nothing_happens_when_the_graph_is_disabled(make_request):
    model = ScriptedChatModel(reply='["Acme Corp"]')
    cm = ChatManage.start(make_request(knowledge_base_ids=("kb-graph",)))
    assert run_chain(plugin(model, graph_enabled=False), cm) == ([], [])
    assert model.prompts == []


@pytest.mark.parametrize("intent", ["greeting", "chitchat", "follow_up", "web_search", "image_only", "doc_only"])
def test_nothing_happens_when_the_intent_needs_no_knowledge_base(make_request, intent):
    model = ScriptedChatModel(reply='["Acme Corp"]')
    cm = ChatManage.start(make_request(knowledge_base_ids=("kb-graph",), web_search_enabled=True))
    assert run_chain(plugin(model), cm, intent=intent) == ([], [])
    assert model.prompts == []


def test_nothing_happens_when_no_knowledge_base_in_scope_has_extraction_on(make_request):
    model = ScriptedChatModel(reply='["Acme Corp"]')
    for request in (make_request(knowledge_base_ids=("kb-plain",)), make_request()):
        cm = ChatManage.start(request)
        assert run_chain(plugin(model), cm) == ([], [])
    assert model.prompts == []


def test_no_entities_means_no_knowledge_bases_either(make_request):
    cm = ChatManage.start(make_request(knowledge_base_ids=("kb-graph",)))
    assert run_chain(plugin(ScriptedChatModel(reply="[]")), cm) == ([], [])


def test_a_failing_extraction_never_stops_the_turn(make_request):
    model = ScriptedChatModel(reply=lambda _: RuntimeError("model down"))
    cm = ChatManage.start(make_request(knowledge_base_ids=("kb-graph",)))
    assert run_chain(plugin(model), cm) == ([], [])

    def broken(kb_id):
        raise RuntimeError("settings unavailable")

    extractor = GraphExtractor(registry_with(ScriptedChatModel(reply='["A"]')), TEMPLATES)
    cm = ChatManage.start(make_request(knowledge_base_ids=("kb-graph",)))
    assert run_chain(PluginExtractEntity(extractor, True, broken), cm) == ([], [])


def test_stale_entities_are_cleared_when_extraction_does_not_apply(make_request):
    cm = ChatManage.start(make_request(knowledge_base_ids=("kb-graph",)))
    cm.state.entity, cm.state.entity_kb_ids = ["Old"], ["kb-graph"]
    assert run_chain(plugin(ScriptedChatModel(reply='["A"]')), cm, intent="greeting") == ([], [])


def test_the_scope_follows_chunk_search(make_request):
    targets = (
        SearchTarget(knowledge_base_id="kb-plain"),
        SearchTarget(type=SearchTargetType.KNOWLEDGE, knowledge_base_id="kb-graph", knowledge_ids=("d1",)),
    )
    # Explicit targets win over the request's knowledge bases, as in chunk search.
    cm = ChatManage.start(make_request(knowledge_base_ids=("kb-graph-2",), search_targets=targets))
    assert scope_knowledge_base_ids(cm) == ["kb-plain", "kb-graph"]

    # Documents named without their knowledge base are resolved through the store, for the caller's tenant.
    documents = Documents(
        Document(id="d1", tenant_id="t-1", knowledge_base_id="kb-graph", title="One"),
        Document(id="d2", tenant_id="t-other", knowledge_base_id="kb-graph-2", title="Two"),
    )
    cm = ChatManage.start(make_request(knowledge_ids=("d1", "d2")))
    assert scope_knowledge_base_ids(cm) == []
    assert scope_knowledge_base_ids(cm, documents) == ["kb-graph"]  # type: ignore[arg-type]

    model = ScriptedChatModel(reply='["Acme Corp"]')
    cm = ChatManage.start(make_request(knowledge_ids=("d1",)))
    assert run_chain(plugin(model, knowledge=documents), cm) == (["Acme Corp"], ["kb-graph"])


def test_it_activates_on_query_understand_only():
    assert plugin(ScriptedChatModel()).activation_events() == [EventType.QUERY_UNDERSTAND]
