import pytest

from ragline.merge.config import HISTORY_MAX_REFERENCES, HISTORY_MIN_OVERLAP, HISTORY_SCORE_FACTOR
from ragline.merge.history import HISTORY_OVERLAP_KEY, history_references, latest_references
from ragline.types import History, MatchType

QUERY = "alpha bravo charlie delta echo foxtrot golf hotel india juliet"  # ten tokens


def round_(refs, query="q"):
    return History(query=query, answer="a", knowledge_references=refs)


def test_defaults_follow_the_reference():
    assert (HISTORY_MIN_OVERLAP, HISTORY_SCORE_FACTOR, HISTORY_MAX_REFERENCES) == (0.3, 0.6, 3)


def test_latest_round_with_references_is_used(make_result):
    old = round_([make_result("old")])
    mid = round_([make_result("mid")])
    newest_without = round_([])
    assert [r.id for r in latest_references([old, mid, newest_without])] == ["mid"]
    assert latest_references([]) == []
    assert latest_references([round_([])]) == []


def test_overlap_threshold_is_inclusive(make_result):
    # Passages of ten tokens: three shared with the query is 0.3 (kept), two is 0.2 (dropped).
    three = make_result("three", "alpha bravo charlie w1 w2 w3 w4 w5 w6 w7")
    two = make_result("two", "alpha bravo z1 z2 z3 z4 z5 z6 z7 z8")
    kept = history_references(QUERY, [round_([three, two])], present_ids=set())
    assert [r.id for r in kept] == ["three"]
    assert kept[0].metadata[HISTORY_OVERLAP_KEY] == "0.3000"


def test_overlap_is_relative_to_the_smaller_side(make_result):
    # A short passage entirely about the question counts fully, however long the question is.
    short = make_result("short", "alpha bravo")
    assert [r.id for r in history_references(QUERY, [round_([short])], set())] == ["short"]


def test_references_are_discounted_marked_and_copied(make_result):
    reference = make_result("ref", "alpha bravo charlie", score=0.8, match_type="embedding")
    history = [round_([reference])]
    [kept] = history_references(QUERY, history, set())
    assert kept.score == pytest.approx(0.8 * 0.6)
    assert kept.match_type == MatchType.HISTORY
    assert reference.score == 0.8
    assert reference.match_type == "embedding"
    assert reference.metadata == {}


def test_present_ids_and_repeats_are_skipped(make_result):
    refs = [make_result("a", "alpha bravo"), make_result("b", "alpha bravo"), make_result("b", "alpha charlie")]
    assert [r.id for r in history_references(QUERY, [round_(refs)], present_ids={"a"})] == ["b"]


def test_at_most_three_in_round_order(make_result):
    refs = [make_result(f"r{i}", "alpha bravo charlie") for i in range(5)]
    assert [r.id for r in history_references(QUERY, [round_(refs)], set())] == ["r0", "r1", "r2"]


def test_parameters_override_defaults(make_result):
    refs = [make_result(f"r{i}", "alpha zulu yankee", score=1.0) for i in range(3)]
    assert history_references(QUERY, [round_(refs)], set(), min_overlap=0.5) == []
    kept = history_references(QUERY, [round_(refs)], set(), min_overlap=0.3, score_factor=0.5, limit=1)
    assert [(r.id, r.score) for r in kept] == [("r0", 0.5)]
    assert history_references(QUERY, [round_(refs)], set(), limit=0) == []


def test_a_query_without_tokens_keeps_nothing(make_result):
    assert history_references("?", [round_([make_result("a", "alpha bravo")])], set()) == []
