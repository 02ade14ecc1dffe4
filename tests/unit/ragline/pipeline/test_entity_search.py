import asyncio
import json
from pathlib import Path

import pytest

from ragline.config import Settings, load_config
from ragline.container import Container
from ragline.graph.extract import GraphExtractor
from ragline.graph.ingest import GraphIndexer
from ragline.graph.sqlite import SqliteGraphStore
from ragline.graph.store import Entity, GraphNamespace, Relation
from ragline.ingest.language import MINILM_MODEL
from ragline.pipeline.chunk_search import PluginSearch
from ragline.pipeline.chunk_search_parallel import BranchKind, PluginSearchParallel
from ragline.pipeline.entity_search import GRAPH_ENTITY_METADATA, MAX_GRAPH_HITS, PluginSearchEntity
from ragline.pipeline.extract_entity import PluginExtractEntity
from ragline.store.db import Database
from ragline.store.knowledge import SqliteKnowledgeStore
from ragline.store.models import Chunk, Document
from ragline.store.tenants import SqliteTenantStore
from ragline.types import ChatManage, EventType, MatchType, SearchTarget, SearchTargetType
from tests.unit.ragline.graph.fakes import ScriptedChatModel, registry_with

_, TEMPLATES = load_config()


# A small world: one tenant, three knowledge bases, documents and passages written directly. ---------------


class World:
    def __init__(self, db: Database) -> None:
        self.knowledge = SqliteKnowledgeStore(db)
        self.graph = SqliteGraphStore(db)
        tenants = SqliteTenantStore(db)
        self.tenant = tenants.create("acme")[0].id
        self.other_tenant = tenants.create("globex")[0].id
        self.kb = {
            name: self.knowledge.create_knowledge_base(self.tenant, name, "minilm").id for name in ("a", "b", "c")
        }
        self.foreign_kb = self.knowledge.create_knowledge_base(self.other_tenant, "x", "minilm").id

    def document(self, kb_id: str, doc_id: str, chunks: dict[str, str], tenant: str = "", **doc) -> None:
        tenant = tenant or self.tenant
        document = Document(id=doc_id, tenant_id=tenant, knowledge_base_id=kb_id, title=f"Title {doc_id}", **doc)
        stored = [
            Chunk(
                id=chunk_id,
                tenant_id=tenant,
                knowledge_base_id=kb_id,
                knowledge_id=doc_id,
                chunk_index=i,
                content=content,
                header="## Section",
                metadata={"page": i + 1},
                enabled=not chunk_id.startswith("off"),
            )
            for i, (chunk_id, content) in enumerate(chunks.items())
        ]
        self.knowledge.insert_document(document, stored)

    def node(self, kb_id: str, doc_id: str, name: str, chunk_ids: list[str], related=()) -> None:
        entities = [Entity(name=name, type="organisation", chunk_ids=chunk_ids)]
        relations = []
        for relation, other, other_chunks in related:
            entities.append(Entity(name=other, chunk_ids=other_chunks))
            relations.append(Relation(source=name, target=other, relation=relation, chunk_ids=other_chunks))
        self.graph.upsert(GraphNamespace(knowledge_base_id=kb_id, knowledge_id=doc_id), entities, relations)


@pytest.fixture
def world(db):
    return World(db)


def turn(world, make_request, entities=("Acme Corp",), kb_names=("a", "b"), entity_kbs=None, **request):
    cm = ChatManage.start(
        make_request(tenant_id=world.tenant, knowledge_base_ids=tuple(world.kb[n] for n in kb_names), **request)
    )
    cm.state.intent = "kb_search"
    cm.state.entity = list(entities)
    cm.state.entity_kb_ids = [world.kb[n] for n in (entity_kbs or kb_names)]
    return cm


class Recorder:
    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self):
        self.calls += 1
        return None


def run(plugin, cm):
    after = Recorder()
    error = asyncio.run(plugin.on_event(EventType.ENTITY_SEARCH, cm, after))
    assert error is None
    assert after.calls == 1
    return cm.state.search_result


def ids(results):
    return [r.id for r in results]


def test_graph_hits_are_chunks_with_score_zero_and_their_document_fields(world, make_request):
    world.document(world.kb["a"], "doc-1", {"c1": "Acme Corp makes anvils.", "c2": "Coyote buys them."})
    world.node(world.kb["a"], "doc-1", "Acme Corp", ["c1"], related=[("sells to", "Wile E. Coyote", ["c2"])])
    cm = turn(world, make_request)
    [first, second] = run(PluginSearchEntity(world.graph, world.knowledge), cm)

    assert (first.id, second.id) == ("c1", "c2")  # the node's passages, then its relations'
    assert first.content == "Acme Corp makes anvils."
    assert first.score == 0.0
    assert second.score == 0.0
    assert first.match_type == MatchType.GRAPH
    assert (first.knowledge_id, first.knowledge_base_id, first.knowledge_title) == (
        "doc-1",
        world.kb["a"],
        "Title doc-1",
    )
    assert (first.header, first.chunk_index, first.chunk_metadata) == ("## Section", 0, {"page": 1})
    assert first.metadata == {GRAPH_ENTITY_METADATA: "Acme Corp"}

    assert cm.state.graph_result == {
        "nodes": [
            {
                "name": "Acme Corp",
                "type": "organisation",
                "description": "",
                "knowledge_base_id": world.kb["a"],
                "knowledge_id": "doc-1",
            }
        ],
        "edges": [{"source": "Acme Corp", "target": "Wile E. Coyote", "relation": "sells to"}],
    }
    json.dumps(cm.state.graph_result)  # it travels in the turn's state
    ChatManage.load_json(cm.dump_json())


def test_knowledge_bases_out_of_scope_are_never_read(world, make_request):
    world.document(world.kb["a"], "doc-a", {"ca": "Acme in a."})
    world.document(world.kb["c"], "doc-c", {"cc": "Acme in c."})
    world.node(world.kb["a"], "doc-a", "Acme Corp", ["ca"])
    world.node(world.kb["c"], "doc-c", "Acme Corp", ["cc"])
    # kb c has a graph, but the request does not name it: extraction cannot widen the scope.
    cm = turn(world, make_request, kb_names=("a",), entity_kbs=("a", "c"))
    assert ids(run(PluginSearchEntity(world.graph, world.knowledge), cm)) == ["ca"]
    assert [n["knowledge_id"] for n in cm.state.graph_result["nodes"]] == ["doc-a"]


def test_a_node_pointing_at_a_passage_of_another_knowledge_base_yields_nothing_there(world, make_request):
    world.document(world.kb["a"], "doc-a", {"ca": "Acme in a."})
    world.document(world.kb["c"], "doc-c", {"cc": "Acme in c."})
    world.node(world.kb["a"], "doc-a", "Acme Corp", ["cc", "ca"])
    assert ids(run(PluginSearchEntity(world.graph, world.knowledge), turn(world, make_request))) == ["ca"]


def test_another_tenants_passages_read_as_absent(world, make_request):
    world.document(world.foreign_kb, "doc-x", {"cx": "Acme abroad."}, tenant=world.other_tenant)
    world.document(world.kb["a"], "doc-a", {"ca": "Acme at home."})
    world.node(world.kb["a"], "doc-a", "Acme Corp", ["cx", "ca"])
    assert ids(run(PluginSearchEntity(world.graph, world.knowledge), turn(world, make_request))) == ["ca"]


def test_disabled_passages_and_documents_are_dropped(world, make_request):
    world.document(world.kb["a"], "doc-a", {"off-1": "Disabled passage.", "ca": "Enabled passage."})
    world.document(world.kb["b"], "doc-off", {"cb": "In a disabled document."}, enabled=False)
    world.node(world.kb["a"], "doc-a", "Acme Corp", ["off-1", "ca"])
    world.node(world.kb["b"], "doc-off", "Acme Corp", ["cb"])
    cm = turn(world, make_request)
    assert ids(run(PluginSearchEntity(world.graph, world.knowledge), cm)) == ["ca"]
    assert [n["knowledge_id"] for n in cm.state.graph_result["nodes"]] == ["doc-a"]


def test_passages_of_a_deleted_document_are_dropped(world, make_request):
    world.document(world.kb["a"], "doc-gone", {"cg": "Soon gone."})
    world.document(world.kb["a"], "doc-kept", {"ck": "Still here."})
    world.node(world.kb["a"], "doc-gone", "Acme Corp", ["cg"])
    world.node(world.kb["a"], "doc-kept", "Acme Corp", ["ck"])

    class DocumentLags:
        """The document is gone but its passages can still be read (a store without cascades)."""

        def __init__(self, knowledge, gone):
            self._knowledge = knowledge
            self._gone = gone

        def __getattr__(self, name):
            return getattr(self._knowledge, name)

        def document(self, tenant_id, document_id):
            return None if document_id == self._gone else self._knowledge.document(tenant_id, document_id)

    lagging = DocumentLags(world.knowledge, "doc-gone")
    cm = turn(world, make_request)
    assert ids(run(PluginSearchEntity(world.graph, lagging), cm)) == ["ck"]
    assert [n["knowledge_id"] for n in cm.state.graph_result["nodes"]] == ["doc-kept"]

    # Deleted for real (its graph not yet): the same outcome.
    world.knowledge.delete_document(world.tenant, "doc-gone")
    assert ids(run(PluginSearchEntity(world.graph, world.knowledge), turn(world, make_request))) == ["ck"]


def test_at_most_thirty_hits(world, make_request):
    chunks = {f"c{i:02d}": f"Passage number {i} about Acme." for i in range(45)}
    world.document(world.kb["a"], "doc-a", chunks)
    world.node(world.kb["a"], "doc-a", "Acme Corp", list(chunks))
    results = run(PluginSearchEntity(world.graph, world.knowledge), turn(world, make_request))
    assert MAX_GRAPH_HITS == 30
    assert ids(results) == list(chunks)[:30]
    assert {r.score for r in results} == {0.0}


def test_the_cap_is_filled_past_filtered_passages(world, make_request):
    chunks = {f"off-{i:02d}": "disabled" for i in range(5)} | {f"c{i:02d}": f"Passage {i}." for i in range(10)}
    world.document(world.kb["a"], "doc-a", chunks)
    world.node(world.kb["a"], "doc-a", "Acme Corp", list(chunks))
    results = run(PluginSearchEntity(world.graph, world.knowledge, max_hits=4), turn(world, make_request))
    assert ids(results) == ["c00", "c01", "c02", "c03"]


def test_a_target_narrowed_to_documents_keeps_only_those_documents(world, make_request):
    world.document(world.kb["a"], "doc-in", {"ci": "Chosen."})
    world.document(world.kb["a"], "doc-out", {"co": "Not chosen."}, tags=["hr"])
    world.node(world.kb["a"], "doc-in", "Acme Corp", ["ci"])
    world.node(world.kb["a"], "doc-out", "Acme Corp", ["co"])
    narrowed = (
        SearchTarget(type=SearchTargetType.KNOWLEDGE, knowledge_base_id=world.kb["a"], knowledge_ids=("doc-in",)),
    )
    cm = turn(world, make_request, kb_names=("a",), search_targets=narrowed)
    assert ids(run(PluginSearchEntity(world.graph, world.knowledge), cm)) == ["ci"]

    tagged = (SearchTarget(knowledge_base_id=world.kb["a"], tag_ids=("hr",)),)
    cm = turn(world, make_request, kb_names=("a",), search_targets=tagged)
    assert ids(run(PluginSearchEntity(world.graph, world.knowledge), cm)) == ["co"]


def test_without_entities_the_state_is_left_alone(world, make_request):
    cm = turn(world, make_request, entities=())
    cm.state.graph_result = {"kept": True}
    run(PluginSearchEntity(world.graph, world.knowledge), cm)
    assert cm.state.search_result == []
    assert cm.state.graph_result == {"kept": True}


def test_no_match_replaces_the_results_with_none(world, make_request):
    world.document(world.kb["a"], "doc-a", {"ca": "Acme."})
    world.node(world.kb["a"], "doc-a", "Acme Corp", ["ca"])
    cm = turn(world, make_request, entities=("Globex",))
    assert run(PluginSearchEntity(world.graph, world.knowledge), cm) == []
    assert cm.state.graph_result == {}


def test_a_failing_graph_store_means_no_graph_hits(world, make_request):
    class Broken:
        def search_nodes(self, *args):
            raise ConnectionError("neo4j unreachable")

    cm = turn(world, make_request)
    assert run(PluginSearchEntity(Broken(), world.knowledge), cm) == []  # type: ignore[arg-type]
    assert cm.state.graph_result == {}


def test_it_activates_on_entity_search_only(world):
    assert PluginSearchEntity(world.graph, world.knowledge).activation_events() == [EventType.ENTITY_SEARCH]


# End to end: the real chunk search and entity search under CHUNK_SEARCH_PARALLEL. -------------------------

ACME = """# Acme history

Acme Corp was founded in 1949 by Wile E. Coyote in the Arizona desert. The company first sold rocket
skates and giant magnets, and later became the largest maker of anvils in the south-west.
"""
GARDEN = """# Garden club

The gardening club meets on Tuesdays to prune roses and swap seeds. Its sponsor pays for the greenhouse
and for the tools that members borrow over the summer.
"""


def scripted_reply(prompt: str) -> str:
    if "Passage:" not in prompt:
        return '["Acme Corp"]'
    passage = prompt.split("Passage:", 1)[1]
    if "founded" in passage:
        graph = {
            "entities": [{"name": "Acme Corp", "type": "organisation"}, {"name": "Wile E. Coyote"}],
            "relations": [{"source": "Wile E. Coyote", "target": "Acme Corp", "relation": "founded"}],
        }
    elif "gardening" in passage:
        graph = {
            "entities": [{"name": "Garden Club"}, {"name": "Acme Corp"}],
            "relations": [{"source": "Acme Corp", "target": "Garden Club", "relation": "sponsors"}],
        }
    else:
        graph = {"entities": [], "relations": []}
    return json.dumps(graph)


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    container = Container.embedded(Settings(data_dir=Path(tmp_path_factory.mktemp("graph-e2e"))))
    tenant, _ = container.tenants.create("acme")
    # MiniLM: its cosine of the garden passage with the question (0.18) is under the vector threshold (0.2), so that
    # passage is reached only through the graph (MiniLM + bge-small-en's is 0.25: chunk search would find it too).
    kb = container.knowledge.create_knowledge_base(tenant.id, "history", MINILM_MODEL)
    assert container.db is not None
    graph = SqliteGraphStore(container.db)
    extractor = GraphExtractor(registry_with(ScriptedChatModel(reply=scripted_reply)), TEMPLATES)
    indexer = GraphIndexer(extractor, graph)
    documents = {}
    for name, content in (("acme.md", ACME), ("garden.md", GARDEN)):
        document = container.ingest.ingest_text(kb, content=content, filename=name).document
        chunks = container.knowledge.chunks_of_document(tenant.id, document.id)
        namespace = GraphNamespace(knowledge_base_id=kb.id, knowledge_id=document.id)
        asyncio.run(indexer.index_document(namespace, chunks))
        documents[name] = document.id
    yield container, tenant.id, kb.id, graph, extractor, documents
    container.close()


def understood_turn(library, make_request):
    _, tenant, kb_id, _, extractor, _ = library
    cm = ChatManage.start(make_request(tenant_id=tenant, knowledge_base_ids=(kb_id,), query="Who founded Acme Corp?"))
    cm.state.intent = "kb_search"
    extract = PluginExtractEntity(extractor, True, lambda kb: kb == kb_id)
    assert asyncio.run(extract.extract(cm)) == ["Acme Corp"]
    return cm


def parallel(library, with_entities=True) -> PluginSearchParallel:
    container, _, _, graph, _, _ = library
    chunk_search = PluginSearch(container.knowledge, container.engine, container.models, container.config.retrieval)
    entity_search = PluginSearchEntity(graph, container.knowledge) if with_entities else None
    return PluginSearchParallel(chunk_search=chunk_search, entity_search=entity_search)


def test_graph_hits_and_chunk_hits_merge_without_duplicates(library, make_request):
    _, _, _, _, _, documents = library
    chunk_only = understood_turn(library, make_request)
    assert (
        asyncio.run(
            parallel(library, with_entities=False).on_event(EventType.CHUNK_SEARCH_PARALLEL, chunk_only, Recorder())
        )
        is None
    )
    chunk_scores = {r.id: r.score for r in chunk_only.state.search_result}

    graph_only = understood_turn(library, make_request)
    graph_hits = run(PluginSearchEntity(library[3], library[0].knowledge), graph_only)
    graph_ids = ids(graph_hits)
    assert {r.knowledge_id for r in graph_hits} == set(documents.values())

    cm = understood_turn(library, make_request)
    after = Recorder()
    assert asyncio.run(parallel(library).on_event(EventType.CHUNK_SEARCH_PARALLEL, cm, after)) is None
    assert after.calls == 1
    merged = cm.state.search_result
    merged_ids = ids(merged)

    assert len(merged_ids) == len(set(merged_ids))
    assert set(merged_ids) == set(chunk_scores) | set(graph_ids)
    # Chunk hits come first, as chunk search concluded them; a passage both branches found keeps its score.
    assert merged_ids[: len(chunk_scores)] == ids(chunk_only.state.search_result)
    both = set(chunk_scores) & set(graph_ids)
    assert both, "the founding passage is found by chunk search and through the graph"
    assert all(r.score == chunk_scores[r.id] and r.match_type != MatchType.GRAPH for r in merged if r.id in both)
    graph_only_ids = set(graph_ids) - set(chunk_scores)
    assert graph_only_ids, "the garden passage is reached only through the Acme Corp node"
    for result in merged:
        if result.id in graph_only_ids:
            assert (result.score, result.match_type, result.knowledge_id) == (
                0.0,
                MatchType.GRAPH,
                documents["garden.md"],
            )
    assert cm.state.candidate_count == len(chunk_scores) + len(graph_ids)
    names = {node["name"] for node in cm.state.graph_result["nodes"]}
    assert names == {"Acme Corp"}
    assert {"source": "Acme Corp", "target": "Garden Club", "relation": "sponsors"} in cm.state.graph_result["edges"]


def test_the_serverless_steps_plan_an_entity_branch_and_reduce_to_the_same_results(library, make_request):
    stage = parallel(library)
    embedded = understood_turn(library, make_request)
    asyncio.run(stage.on_event(EventType.CHUNK_SEARCH_PARALLEL, embedded, Recorder()))

    cm = understood_turn(library, make_request)
    branches = stage.plan_branches(cm)
    assert [b.kind for b in branches].count(BranchKind.ENTITY) == 1
    # Each branch on a state that went through JSON, as a Map iteration receives it.
    outcomes = [asyncio.run(stage.run_branch(ChatManage.load_json(cm.dump_json()), branch)) for branch in branches]
    entity = next(o for o in outcomes if o.kind == BranchKind.ENTITY)
    assert entity.error == ""
    assert entity.results
    assert entity.graph_result
    assert stage.reduce(cm, outcomes) is None
    assert ids(cm.state.search_result) == ids(embedded.state.search_result)
    assert cm.state.graph_result == embedded.state.graph_result


def test_without_entities_there_is_no_entity_branch(library, make_request):
    cm = understood_turn(library, make_request)
    cm.state.entity = []
    assert all(b.kind == BranchKind.CHUNK for b in parallel(library).plan_branches(cm))
