import json

from ragline.reranking.passages import (
    enriched_passage,
    generated_questions,
    model_passage,
    select_candidates,
)
from ragline.types import ChunkType, MatchType, SearchResult


def result(id: str = "c1", content: str = "Body text.", **fields) -> SearchResult:
    return SearchResult(id=id, content=content, **fields)


def images(*entries: dict) -> str:
    return json.dumps(list(entries))


def test_enriched_passage_is_clean_content():
    assert enriched_passage(result(content="# Refunds\n**Seven** days")) == "Refunds\nSeven days"


def test_enriched_passage_appends_caption_and_ocr():
    r = result(content="Body.", image_info=images({"caption": "a red chart", "ocr_text": "Q3 revenue"}))
    assert enriched_passage(r) == "Body.\n\na red chart\nQ3 revenue"


def test_image_text_identical_to_body_is_not_repeated():
    r = result(content="  Q3 revenue  ", chunk_type=ChunkType.IMAGE_OCR, image_info=images({"ocr_text": "Q3 revenue"}))
    assert enriched_passage(r) == "Q3 revenue"


def test_generated_questions_joined_by_semicolon():
    r = result(
        chunk_metadata={"generated_questions": [{"id": "q1", "question": "How long?"}, "Who pays?", {"x": 1}, ""]}
    )
    assert generated_questions(r) == ["How long?", "Who pays?"]
    assert enriched_passage(r) == "Body text.\n\nHow long?; Who pays?"


def test_enrichments_follow_an_empty_body():
    r = result(content="![img](a.png)", image_info=images({"caption": "a cat"}))
    assert enriched_passage(r) == "a cat"


def test_unreadable_image_info_is_ignored():
    assert enriched_passage(result(image_info="{not json")) == "Body text."
    assert enriched_passage(result(image_info='"just a string"')) == "Body text."


def test_single_image_object_is_accepted():
    assert enriched_passage(result(image_info=json.dumps({"caption": "solo"}))) == "Body text.\n\nsolo"


def test_model_passage_prefixes_title_and_header():
    r = result(knowledge_title="Refund policy", header="Returns > Timing")
    assert model_passage(r) == "Refund policy\n\nReturns > Timing\n\nBody text."


def test_model_passage_without_header_or_title():
    assert model_passage(result(knowledge_title="Doc")) == "Doc\n\nBody text."
    assert model_passage(result(header="H")) == "H\n\nBody text."
    assert model_passage(result(knowledge_title="  ", header="")) == "Body text."


def test_faq_gets_no_prefix():
    r = result(content="Q: How long?\nA: Seven days.", chunk_type=ChunkType.FAQ, knowledge_title="FAQ", header="H")
    assert model_passage(r) == "Q: How long?\nA: Seven days."


def test_empty_passage_stays_empty_despite_title():
    assert model_passage(result(content="![x](y.png)", knowledge_title="Doc")) == ""


def test_model_passage_cut_from_the_end():
    r = result(content="abcdefghij", knowledge_title="T")
    assert model_passage(r, max_chars=6) == "T\n\nabc"
    assert model_passage(r, max_chars=0) == "T\n\nabcdefghij"
    assert model_passage(r, max_chars=100) == "T\n\nabcdefghij"


def test_select_candidates_keeps_best_by_score_in_input_order():
    results = [result(id=f"c{i}", score=s) for i, s in enumerate([0.1, 0.9, 0.5, 0.7])]
    assert [r.id for r in select_candidates(results, 2)] == ["c1", "c3"]


def test_select_candidates_always_keeps_graph_hits():
    results = [
        result(id="g1", match_type=MatchType.GRAPH, score=0.0),
        result(id="a", score=0.9),
        result(id="b", score=0.2),
        result(id="g2", match_type=MatchType.GRAPH, score=0.0),
    ]
    assert [r.id for r in select_candidates(results, 1)] == ["g1", "a", "g2"]


def test_select_candidates_under_the_cap_keeps_all():
    results = [result(id=str(i), score=i / 10) for i in range(5)]
    assert select_candidates(results, 200) == results
