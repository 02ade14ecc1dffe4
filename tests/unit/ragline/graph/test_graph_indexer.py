import asyncio
import json

import pytest

from ragline.config import load_config
from ragline.graph.extract import GraphExtractor
from ragline.graph.ingest import MAX_CONCURRENT_EXTRACTIONS, GraphIndexer, GraphIndexResult
from ragline.graph.sqlite import SqliteGraphStore
from ragline.graph.store import GraphNamespace
from ragline.models.extractive import ExtractiveChatModel
from ragline.models.registry import ModelRegistry
from ragline.store.models import Chunk
from tests.unit.ragline.graph.fakes import ScriptedChatModel, registry_with

_, TEMPLATES = load_config()
NAMESPACE = GraphNamespace(knowledge_base_id="kb-a", knowledge_id="doc-a")

# The graph each passage yields, keyed by a word of the passage.
GRAPHS = {
    "founded": {
        "entities": [{"name": "Acme Corp", "type": "organisation"}, {"name": "Wile E. Coyote", "type": "person"}],
        "relations": [{"source": "Wile E. Coyote", "target": "Acme Corp", "relation": "founded"}],
    },
    "anvils": {
        "entities": [{"name": "ACME corp", "description": "Makes anvils."}, {"name": "Anvil"}],
        "relations": [{"source": "Acme Corp", "target": "Anvil", "relation": "makes"}],
    },
}


def reply_for(prompt: str) -> str:
    passage = prompt.split("Passage:", 1)[1]
    for word, graph in GRAPHS.items():
        if word in passage:
            return json.dumps(graph)
    return "no entities here"


def chunk(chunk_id: str, content: str, **overrides) -> Chunk:
    values = {
        "id": chunk_id,
        "tenant_id": "t-1",
        "knowledge_base_id": "kb-a",
        "knowledge_id": "doc-a",
        "chunk_index": 0,
        "content": content,
    }
    values.update(overrides)
    return Chunk(**values)


@pytest.fixture
def store(db):
    return SqliteGraphStore(db)


def indexer_with(model, store, **kwargs) -> GraphIndexer:
    return GraphIndexer(GraphExtractor(registry_with(model), TEMPLATES), store, **kwargs)


def test_each_passage_is_extracted_and_nodes_keep_the_chunks_they_came_from(store):
    model = ScriptedChatModel(reply=reply_for)
    chunks = [
        chunk("c1", "Wile E. Coyote founded Acme Corp."),
        chunk("c2", "Acme Corp makes anvils."),
        chunk("c3", "Nothing to see."),
        chunk("p1", "Parent text: founded, anvils.", searchable=False),
        chunk("c4", "Disabled: founded.", enabled=False),
        chunk("c5", "   "),
    ]
    result = asyncio.run(indexer_with(model, store).index_document(NAMESPACE, chunks))
    assert result == GraphIndexResult(chunks=3, entities=3, relations=2)
    assert len(model.prompts) == 3  # parents, disabled and blank passages are not sent

    [acme] = store.search_nodes(["kb-a"], ["acme corp"], 5)
    assert (acme.name, acme.type, acme.description, acme.chunk_ids) == (
        "Acme Corp",
        "organisation",
        "Makes anvils.",
        ["c1", "c2"],
    )
    assert [(r.relation, r.name, r.outgoing, r.chunk_ids) for r in acme.related] == [
        ("founded", "Wile E. Coyote", False, ["c1"]),
        ("makes", "Anvil", True, ["c2"]),
    ]


def test_extraction_runs_with_bounded_concurrency(store):
    model = ScriptedChatModel(reply=reply_for, delay_s=0.01)
    chunks = [chunk(f"c{i}", f"Passage {i}: founded.") for i in range(10)]
    asyncio.run(indexer_with(model, store, concurrency=3).index_document(NAMESPACE, chunks))
    assert len(model.prompts) == 10
    assert model.peak == 3
    assert MAX_CONCURRENT_EXTRACTIONS >= 1


def test_nothing_extracted_writes_nothing(db, store):
    model = ScriptedChatModel(reply="I cannot do that.")
    result = asyncio.run(indexer_with(model, store).index_document(NAMESPACE, [chunk("c1", "founded")]))
    assert result == GraphIndexResult(chunks=1, entities=0, relations=0)
    assert db.query_one("SELECT count(*) AS n FROM graph_nodes")["n"] == 0


def test_without_a_generative_model_ingestion_builds_no_graph(db, store):
    models = ModelRegistry()
    models.add_chat_model(ExtractiveChatModel.model_id, ExtractiveChatModel)
    indexer = GraphIndexer(GraphExtractor(models, TEMPLATES), store)
    result = asyncio.run(indexer.index_document(NAMESPACE, [chunk("c1", "Wile E. Coyote founded Acme Corp.")]))
    assert result.entities == 0
    assert db.query_one("SELECT count(*) AS n FROM graph_nodes")["n"] == 0
