import asyncio
import json

import pytest

from ragline.config import load_config
from ragline.graph.extract import (
    ENTITY_OPTIONS,
    GRAPH_OPTIONS,
    MAX_ENTITIES_PER_CHUNK,
    MAX_NAME_CHARS,
    MAX_QUERY_ENTITIES,
    MAX_RELATIONS_PER_CHUNK,
    GraphExtractor,
    heuristic_entities,
    parse_entity_names,
    parse_graph,
)
from ragline.graph.store import DEFAULT_RELATION
from ragline.models.base import ModelCallError
from ragline.models.extractive import ExtractiveChatModel
from ragline.models.registry import ModelRegistry
from tests.unit.ragline.graph.fakes import ScriptedChatModel, registry_with

_, TEMPLATES = load_config()


def graph_of(result):
    entities, relations = result
    return (
        [(e.name, e.type, e.description) for e in entities],
        [(r.source, r.target, r.relation) for r in relations],
    )


# parse_entity_names -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "names"),
    [
        ('["Acme Corp", "Wile E. Coyote"]', ["Acme Corp", "Wile E. Coyote"]),
        ('```json\n["Acme Corp"]\n```', ["Acme Corp"]),
        ('<think>The user asks about Acme.</think>\n["Acme Corp"]', ["Acme Corp"]),
        ('Here are the entities: ["Neo4j", "Cypher"]. Hope this helps!', ["Neo4j", "Cypher"]),
        ('{"entities": ["Neo4j", {"name": "Cypher"}]}', ["Neo4j", "Cypher"]),
        ('[{"name": "Neo4j", "type": "product"}, {"entity": "Cypher"}]', ["Neo4j", "Cypher"]),
        ('["Neo4j", "Cypher",]', ["Neo4j", "Cypher"]),  # trailing comma: invalid JSON, items kept
        ('[" Acme  Corp ", "acme corp", "ACME CORP", "", 42, null]', ["Acme Corp"]),
        ("[]", []),
    ],
)
def test_entity_names_are_read_tolerantly(reply, names):
    assert parse_entity_names(reply) == names


@pytest.mark.parametrize(
    ("reply", "names"),
    [
        ('["Acme Corp", "Wile E. Coyote", "Road Ru', ["Acme Corp", "Wile E. Coyote"]),
        ('```json\n["Acme Corp", "Wile', ["Acme Corp"]),
        ('[{"name": "Acme Corp", "type": "org"}, {"name": "Wile', ["Acme Corp"]),
        ("[", []),
    ],
)
def test_a_truncated_array_keeps_its_complete_items(reply, names):
    assert parse_entity_names(reply) == names


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "I'm sorry, I cannot help with that.",
        'The question is about "Acme" and "Coyote".',  # quoted words in prose are not an array
        "null",
        "42",
        '{"answer": "Acme"}',
        "<think>never closed",
    ],
)
def test_garbage_yields_no_names(reply):
    assert parse_entity_names(reply) == []


def test_names_are_capped_and_overlong_ones_dropped():
    names = [f"Entity {i}" for i in range(MAX_QUERY_ENTITIES + 5)]
    assert parse_entity_names(json.dumps(names)) == names[:MAX_QUERY_ENTITIES]
    assert parse_entity_names(json.dumps(["x" * (MAX_NAME_CHARS + 1), "Acme"])) == ["Acme"]


# parse_graph ---------------------------------------------------------------------------------------------


GRAPH_REPLY = json.dumps(
    {
        "entities": [
            {"name": " Acme  Corp ", "type": "organisation", "description": "Makes anvils."},
            {"name": "Wile E. Coyote", "type": "person"},
            {"name": "acme corp", "type": "duplicate"},
            {"type": "nameless"},
            "Road Runner",
        ],
        "relations": [
            {"source": "wile e. coyote", "target": "ACME CORP", "relation": "buys from"},
            {"source": "Wile E. Coyote", "target": "Road Runner", "relation": ""},
            {"source": "Wile E. Coyote", "target": "Gravity", "relation": "defies"},  # Gravity was not extracted
            {"source": "Acme Corp", "target": "Acme Corp", "relation": "is"},
            {"source": "Wile E. Coyote", "target": "Acme Corp", "relation": "buys from"},
        ],
    }
)


def test_graph_is_cleaned_and_relations_stay_between_extracted_entities():
    assert graph_of(parse_graph(GRAPH_REPLY)) == (
        [
            ("Acme Corp", "organisation", "Makes anvils."),
            ("Wile E. Coyote", "person", ""),
            ("Road Runner", "", ""),
        ],
        [
            ("Wile E. Coyote", "Acme Corp", "buys from"),
            ("Wile E. Coyote", "Road Runner", DEFAULT_RELATION),
        ],
    )


def test_graph_reply_wrapped_in_fences_and_reasoning_and_aliases():
    reply = (
        "<think>Let me see.</think>```json\n"
        '{"nodes": [{"entity": "Alpha", "category": "thing"}, {"name": "Beta"}],'
        ' "edges": [{"from": "Alpha", "to": "Beta", "predicate": "precedes"}]}\n```'
    )
    assert graph_of(parse_graph(reply)) == (
        [("Alpha", "thing", ""), ("Beta", "", "")],
        [("Alpha", "Beta", "precedes")],
    )


def test_a_truncated_graph_keeps_complete_objects():
    cut = GRAPH_REPLY[: GRAPH_REPLY.index('"Gravity"')]
    entities, relations = graph_of(parse_graph(cut))
    # Complete objects survive the cut; the bare string "Road Runner" is not an object, so neither it nor
    # its relation is recovered.
    assert [name for name, _, _ in entities] == ["Acme Corp", "Wile E. Coyote"]
    assert relations == [("Wile E. Coyote", "Acme Corp", "buys from")]


@pytest.mark.parametrize("reply", ["", "no graph here", "[]", '{"entities": "Acme"}', "{", '{"summary": "x"}'])
def test_garbage_yields_an_empty_graph(reply):
    assert parse_graph(reply) == ([], [])


def test_graph_counts_are_capped():
    names = [f"E{i}" for i in range(MAX_ENTITIES_PER_CHUNK + 10)]
    relations = [{"source": a, "target": b, "relation": "r"} for a in names for b in names if a != b]
    entities, kept = parse_graph(json.dumps({"entities": names, "relations": relations}))
    assert len(entities) == MAX_ENTITIES_PER_CHUNK
    assert len(kept) == MAX_RELATIONS_PER_CHUNK
    allowed = {e.name for e in entities}
    assert all(r.source in allowed and r.target in allowed for r in kept)


# heuristic -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("What does Acme Corp sell in New York City?", ["Acme Corp", "New York City"]),
        ('How does Apache Kafka compare to "RabbitMQ"?', ["RabbitMQ", "Apache Kafka"]),
        ("Tell me about the Bank of America and Wells Fargo.", ["Bank of America", "Wells Fargo"]),
        ("Is the Acme Corp, Globex Inc deal done?", ["Acme Corp", "Globex Inc"]),
        ("I don't know the 'Project Phoenix' status", ["Project Phoenix"]),
        ("《三体》的作者是谁？", ["三体"]),
        ("“量子计算”是什么", ["量子计算"]),
        ("公司的年假政策是什么", []),  # unquoted Chinese is left to chunk search
        ("who is john smith", []),
        ("What Is This?", []),
        ("How do I reset Kafka?", []),  # one capitalised word is not enough
    ],
)
def test_heuristic_entities_are_conservative(query, names):
    assert heuristic_entities(query) == names


# GraphExtractor --------------------------------------------------------------------------------------------


def test_entities_come_from_the_extract_entity_prompt_of_a_generative_model():
    model = ScriptedChatModel(reply='["Acme Corp"]')
    extractor = GraphExtractor(registry_with(model), TEMPLATES)
    assert asyncio.run(extractor.extract_entities("Who founded Acme Corp?")) == ["Acme Corp"]
    [prompt] = model.prompts
    assert "Question: Who founded Acme Corp?" in prompt
    assert "JSON array of strings" in prompt
    assert model.options == [ENTITY_OPTIONS]


def test_the_request_model_is_used_when_named():
    default, chosen = ScriptedChatModel("default", '["A"]'), ScriptedChatModel("chosen", '["B"]')
    models = registry_with(chosen, default)
    assert asyncio.run(GraphExtractor(models, TEMPLATES).extract_entities("q", "chosen")) == ["B"]
    assert default.prompts == []


@pytest.mark.parametrize("failure", [ModelCallError("down"), RuntimeError("boom")])
def test_a_failing_model_yields_no_entities_and_no_graph(failure):
    extractor = GraphExtractor(registry_with(ScriptedChatModel(reply=lambda _: failure)), TEMPLATES)
    assert asyncio.run(extractor.extract_entities("Who founded Acme Corp?")) == []
    assert asyncio.run(extractor.extract_graph("Acme Corp was founded by Wile E. Coyote.")) == ([], [])


def test_a_missing_template_yields_nothing():
    class NoTemplates:
        def get(self, *args, **kwargs):
            raise KeyError("graph_extraction.yaml#extract_entity")

    extractor = GraphExtractor(registry_with(ScriptedChatModel(reply='["A"]')), NoTemplates())  # type: ignore[arg-type]
    assert asyncio.run(extractor.extract_entities("Who founded Acme Corp?")) == []


def test_without_a_generative_model_queries_use_the_heuristic_and_passages_are_not_extracted():
    extractive = ModelRegistry()
    extractive.add_chat_model(ExtractiveChatModel.model_id, ExtractiveChatModel)
    for models in (extractive, ModelRegistry()):
        extractor = GraphExtractor(models, TEMPLATES)
        assert extractor.generative_model() is None
        assert asyncio.run(extractor.extract_entities("Who founded Acme Corp?")) == ["Acme Corp"]
        assert asyncio.run(extractor.extract_graph("Acme Corp was founded by Wile E. Coyote.")) == ([], [])


def test_graph_comes_from_the_extract_graph_prompt():
    model = ScriptedChatModel(reply=GRAPH_REPLY)
    extractor = GraphExtractor(registry_with(model), TEMPLATES)
    entities, relations = asyncio.run(extractor.extract_graph("Wile E. Coyote buys from Acme Corp."))
    assert [e.name for e in entities] == ["Acme Corp", "Wile E. Coyote", "Road Runner"]
    assert len(relations) == 2
    [prompt] = model.prompts
    assert prompt.rstrip().endswith("Passage:\nWile E. Coyote buys from Acme Corp.")
    assert '{"entities": [{"name": "...", "type": "...", "description": "..."}],' in prompt
    assert model.options == [GRAPH_OPTIONS]


def test_blank_input_calls_no_model():
    model = ScriptedChatModel(reply='["A"]')
    extractor = GraphExtractor(registry_with(model), TEMPLATES)
    assert asyncio.run(extractor.extract_entities("   ")) == []
    assert asyncio.run(extractor.extract_graph("\n")) == ([], [])
    assert model.prompts == []
