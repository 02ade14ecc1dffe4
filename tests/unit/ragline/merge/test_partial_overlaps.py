from ragline.merge.config import PARTIAL_OVERLAP_MAX_SIZE_RATIO, PARTIAL_OVERLAP_MIN_RATIO
from ragline.merge.overlaps import remove_partial_overlaps


def words(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


def text(*parts: list[str]) -> str:
    return " ".join(word for part in parts for word in part)


def ids(results) -> list[str]:
    return [r.id for r in results]


def test_defaults_follow_the_reference():
    assert (PARTIAL_OVERLAP_MIN_RATIO, PARTIAL_OVERLAP_MAX_SIZE_RATIO) == (0.85, 3.0)


def test_normalised_containment_drops_the_lower_score(make_result):
    long = make_result("long", "Backups run nightly at two o'clock and are kept for thirty days.", score=0.9)
    short = make_result("short", "BACKUPS   run\nnightly at two", score=0.5)
    assert ids(remove_partial_overlaps([long, short])) == ["long"]
    # The contained passage scoring higher wins: scores decide, not sizes.
    short.score = 0.95
    assert ids(remove_partial_overlaps([long, short])) == ["short"]


def test_containment_ignores_the_size_ratio(make_result):
    long = make_result("long", text(words("w", 100)), score=0.9)
    short = make_result("short", text(words("w", 10)), score=0.1)
    assert ids(remove_partial_overlaps([long, short])) == ["long"]


def test_token_overlap_at_the_threshold_is_redundant(make_result):
    shared = words("s", 17)
    first = make_result("a", text(shared, words("a", 3)), score=0.8)  # 20 tokens
    second = make_result("b", text(words("b", 3), shared), score=0.6)  # 20 tokens, 17 shared = 0.85
    assert ids(remove_partial_overlaps([first, second])) == ["a"]
    below = make_result("c", text(words("c", 4), shared[:16]), score=0.6)  # 16 shared = 0.8
    assert ids(remove_partial_overlaps([first, below])) == ["a", "c"]


def test_token_overlap_needs_sizes_within_three_times(make_result):
    small = words("k", 10)
    within = make_result("within", text(words("x", 10), small, words("y", 10)), score=0.9)  # 30 tokens = 3x
    beyond = make_result("beyond", text(words("x", 11), small, words("y", 10)), score=0.9)  # 31 tokens
    detail = make_result("detail", text(list(reversed(small))), score=0.5)  # all tokens shared, not a substring
    assert ids(remove_partial_overlaps([within, detail])) == ["within"]
    assert ids(remove_partial_overlaps([beyond, detail.model_copy()])) == ["beyond", "detail"]


def test_equal_scores_drop_the_shorter_then_the_later(make_result):
    long = make_result("long", "alpha bravo charlie delta echo", score=0.5)
    short = make_result("short", "bravo charlie delta", score=0.5)
    assert ids(remove_partial_overlaps([short, long])) == ["long"]
    twin_a = make_result("first", "alpha bravo charlie delta", score=0.5)
    twin_b = make_result("second", "delta charlie bravo alpha", score=0.5)
    assert ids(remove_partial_overlaps([twin_a, twin_b])) == ["first"]


def test_a_dropped_passage_no_longer_removes_others(make_result):
    shared, only_a, only_b = words("t", 17), words("x", 3), words("y", 3)
    a = make_result("a", text(shared, only_a), score=0.5)
    b = make_result("b", text(shared, only_b), score=0.9)  # 17/20 with a: a goes
    c = make_result("c", text(only_a, shared[:14]), score=0.1)  # all in a, but only 14/17 in b
    assert ids(remove_partial_overlaps([a, b, c])) == ["b", "c"]


def test_parameters_and_trivial_inputs(make_result):
    first = make_result("a", "one two three four", score=0.9)
    second = make_result("b", "one two three five", score=0.1)
    assert ids(remove_partial_overlaps([first, second])) == ["a", "b"]  # 3/4 = 0.75
    assert ids(remove_partial_overlaps([first, second], min_ratio=0.75)) == ["a"]
    assert remove_partial_overlaps([]) == []
    empty = make_result("e", "!!", score=0.1)
    assert ids(remove_partial_overlaps([first, empty])) == ["a", "e"]


def test_an_image_chunk_said_again_by_a_passage_leaves_its_image_to_that_passage(make_result):
    from ragline.types import ChunkType

    passage = make_result("text", "The pump pressure rises to 4 bar at full load, as figure 3 shows.", score=0.9)
    picture = make_result("img", "pump pressure rises to 4 bar at full load", score=0.4)
    picture.chunk_type = ChunkType.IMAGE_OCR
    picture.image_info = '[{"url": "resource://images/d1/1", "ocr_text": "pump pressure"}]'
    [kept] = remove_partial_overlaps([passage, picture])
    assert kept.id == "text"
    assert kept.metadata["image_vector_match"] == "true"
    assert "resource://images/d1/1" in kept.image_info
    assert passage.metadata == {}  # the input is untouched
