import random
import string

import pytest

from ragline.merge.config import MIN_OVERLAP_CHARS, OVERLAP_WINDOW_CHARS
from ragline.merge.join import (
    JOIN_SEPARATOR,
    contains_chunk_content,
    content_overlap_ratio,
    is_content_contained,
    join_chunk_content,
    overlap_length,
    token_overlap_ratio,
)
from ragline.text.segmentation import normalize_content


def unique_text(length: int, seed: int) -> str:
    """Random letters: no accidental suffix/prefix borders, so only the overlap a test builds exists."""
    rng = random.Random(seed)
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(length))


def test_exact_overlap_is_kept_once():
    head = "The quick brown fox jumps"
    tail = "brown fox jumps over the lazy dog"
    assert join_chunk_content(head, tail) == "The quick brown fox jumps over the lazy dog"


def test_longest_overlap_wins():
    head = "abc abc abc abc abc abc"
    tail = "abc abc abc abc abc abc tail"
    # The whole head is the start of tail: containment, not a partial overlap.
    assert join_chunk_content(head, tail) == tail
    head2 = "intro: " + "abc abc abc abc"
    tail2 = "abc abc abc abc" + " and more"
    assert join_chunk_content(head2, tail2) == "intro: abc abc abc abc and more"


def test_overlap_of_exactly_min_chars_joins_and_one_less_separates():
    shared = unique_text(MIN_OVERLAP_CHARS, 1)
    head, tail = unique_text(30, 2) + shared, shared + unique_text(30, 3)
    assert join_chunk_content(head, tail) == head + tail[MIN_OVERLAP_CHARS:]
    short = shared[: MIN_OVERLAP_CHARS - 1]
    head, tail = unique_text(30, 2) + short, short + unique_text(30, 3)
    assert join_chunk_content(head, tail) == head + JOIN_SEPARATOR + tail


def test_no_overlap_uses_the_separator():
    assert join_chunk_content("alpha beta gamma", "gamma delta") == "alpha beta gamma\n\ngamma delta"
    assert JOIN_SEPARATOR == "\n\n"


def test_overlap_is_searched_within_the_window_only():
    inside = unique_text(OVERLAP_WINDOW_CHARS, 4)
    head, tail = unique_text(50, 5) + inside, inside + unique_text(50, 6)
    assert join_chunk_content(head, tail) == head + tail[OVERLAP_WINDOW_CHARS:]
    beyond = unique_text(OVERLAP_WINDOW_CHARS + 1, 7)
    head, tail = unique_text(50, 8) + beyond, beyond + unique_text(50, 9)
    assert overlap_length(head, tail) == 0
    assert join_chunk_content(head, tail) == head + JOIN_SEPARATOR + tail


def test_window_and_minimum_are_parameters():
    shared = "0123456789"
    head, tail = "head " + shared, shared + " tail"
    assert join_chunk_content(head, tail) == head + JOIN_SEPARATOR + tail
    assert join_chunk_content(head, tail, min_overlap=len(shared)) == "head 0123456789 tail"
    assert join_chunk_content(head, tail, min_overlap=4, window=4) == "head 0123456789\n\n0123456789 tail"
    assert join_chunk_content("a", "b", separator=" | ") == "a | b"


def test_containment_collapses_either_way():
    long = "Backups run nightly at two o'clock and are kept for thirty days."
    part = "run nightly at two o'clock"
    assert join_chunk_content(long, part) == long
    assert join_chunk_content(part, long) == long


def test_a_short_body_is_not_contained_by_chance():
    long = "the cat sat on the mat"
    assert not contains_chunk_content(long, "cat")
    assert join_chunk_content(long, "cat") == long + JOIN_SEPARATOR + "cat"
    # Identical bodies are the same body whatever their length.
    assert contains_chunk_content("cat", "cat")
    assert join_chunk_content("cat", "cat") == "cat"


def test_empty_sides():
    assert join_chunk_content("", "tail") == "tail"
    assert join_chunk_content("head", "") == "head"
    assert not contains_chunk_content("", "x" * 20)
    assert not contains_chunk_content("x" * 20, "")


def test_is_content_contained_compares_normalised_text():
    short = normalize_content("Nightly   BACKUPS\nrun")
    long = normalize_content("All nightly backups run at 2am")
    assert is_content_contained(short, long)
    assert not is_content_contained(long, short)
    assert not is_content_contained("", long)


def test_token_overlap_ratio_is_relative_to_the_smaller_set():
    assert token_overlap_ratio({"a1", "b1"}, {"a1", "b1", "c1", "d1"}) == 1.0
    assert token_overlap_ratio({"a1", "b1", "c1", "d1"}, {"a1", "x1"}) == 0.5
    assert token_overlap_ratio(set(), {"a1"}) == 0.0
    assert content_overlap_ratio("Reset the password", "password reset steps explained") == pytest.approx(2 / 3)
