import json
import random

import pytest

from ragline.merge.coordinates import REWRITTEN_KEY, coordinates_trusted
from ragline.merge.join import JOIN_SEPARATOR
from ragline.merge.sequential import INDEX_END_KEY, SourceSlice, merge_sequential, union_of_slices
from ragline.types import ChunkType

SOURCE = " ".join(f"word{i:03d}" for i in range(60))  # 8 characters a word


@pytest.fixture
def piece(make_result):
    """A result that is an exact slice of SOURCE (trusted coordinates)."""

    def factory(id: str, start: int, end: int, index: int, **fields):
        return make_result(id, SOURCE[start:end], start_at=start, end_at=end, chunk_index=index, **fields)

    return factory


def test_trusted_gap_keeps_passages_apart(piece):
    first, second = piece("a", 0, 50, 0), piece("b", 60, 110, 1)
    merged = merge_sequential([first, second])
    assert sorted(r.content for r in merged) == sorted([SOURCE[0:50], SOURCE[60:110]])


def test_trusted_overlap_is_trimmed_into_an_exact_slice(piece):
    merged = merge_sequential([piece("a", 0, 60, 0, score=0.4), piece("b", 50, 110, 1, score=0.9)])
    [passage] = merged
    assert passage.content == SOURCE[0:110]
    assert (passage.id, passage.start_at, passage.end_at, passage.score) == ("a", 0, 110, 0.9)
    assert passage.sub_chunk_id == ["b"]
    assert coordinates_trusted(passage)


def test_trusted_touching_slices_join_without_separator(piece):
    [passage] = merge_sequential([piece("a", 0, 50, 0), piece("b", 50, 100, 1)])
    assert passage.content == SOURCE[0:100]


def test_trusted_contained_slice_is_absorbed(piece):
    [passage] = merge_sequential([piece("a", 0, 100, 0, score=0.3), piece("b", 20, 60, 7, score=0.8)])
    assert passage.content == SOURCE[0:100]
    assert (passage.score, passage.sub_chunk_id) == (0.8, ["b"])


def test_trusted_offsets_decide_even_against_index_order(piece):
    # Index order says b then a, but a starts earlier: the union is still the source slice.
    [passage] = merge_sequential([piece("a", 40, 100, 5), piece("b", 0, 50, 4)])
    assert passage.id == "b"
    assert passage.content == SOURCE[0:100]
    assert (passage.start_at, passage.end_at) == (0, 100)


def test_untrusted_consecutive_indexes_are_joined_by_content(piece):
    first = piece("a", 0, 50, 0)
    second = piece("b", 60, 110, 1, chunk_metadata={"revision": 1})
    [passage] = merge_sequential([first, second])
    assert passage.content == SOURCE[0:50] + JOIN_SEPARATOR + SOURCE[60:110]
    assert passage.metadata[REWRITTEN_KEY] == "true"
    assert not coordinates_trusted(passage)


def test_untrusted_overlap_is_found_in_the_text(piece):
    first = piece("a", 0, 60, 0, metadata={REWRITTEN_KEY: "true"})
    [passage] = merge_sequential([first, piece("b", 45, 110, 1)])
    assert passage.content == SOURCE[0:110]


def test_untrusted_distant_indexes_stay_apart_unless_contained(make_result):
    far = [
        make_result("a", "Backups run nightly.", chunk_index=0),
        make_result("b", "Billing is monthly.", chunk_index=2),
    ]
    assert len(merge_sequential(far)) == 2
    container = make_result("c", "Backups run nightly and are kept for thirty days.", chunk_index=0, score=0.2)
    inside = make_result("d", "are kept for thirty days", chunk_index=9, score=0.6)
    [passage] = merge_sequential([container, inside])
    assert passage.content == container.content
    assert (passage.score, passage.sub_chunk_id) == (0.6, ["d"])
    # Absorbing changes nothing in the text, so nothing is marked rewritten.
    assert REWRITTEN_KEY not in passage.metadata


def test_a_span_that_no_longer_matches_its_text_is_untrusted(make_result):
    # Revision 0 but edited in place: 30 characters do not fill a 50-character span.
    edited = make_result("a", "Edited text, thirty chars long", start_at=0, end_at=50, chunk_index=0)
    follower = make_result("b", "Unrelated text far away.", start_at=200, end_at=224, chunk_index=1)
    assert not coordinates_trusted(edited)
    expected = edited.content + JOIN_SEPARATOR + follower.content
    [passage] = merge_sequential([edited, follower])
    assert passage.content == expected


def test_a_run_tracks_its_last_index_ids_images_and_next_neighbour(make_result):
    members = [
        make_result(
            f"c{i}",
            f"Paragraph number {i} of the guide.",
            chunk_index=i,
            next_chunk_id=f"c{i + 1}",
            sub_chunk_id=[f"s{i}"],
            image_info=json.dumps([{"url": "u-shared"}, {"url": f"u{i}"}]),
        )
        for i in range(3)
    ]
    [passage] = merge_sequential(members)
    assert passage.id == "c0"
    assert passage.sub_chunk_id == ["s0", "c1", "s1", "c2", "s2"]
    assert passage.next_chunk_id == "c3"
    assert passage.metadata[INDEX_END_KEY] == "2"
    assert [i["url"] for i in json.loads(passage.image_info)] == ["u-shared", "u0", "u1", "u2"]
    # A repeat pass continues from the recorded end, not from the first index.
    later = make_result("c3", "Paragraph number 3 of the guide.", chunk_index=3)
    [again] = merge_sequential([passage, later])
    assert again.sub_chunk_id[-1] == "c3"


def test_groups_are_document_and_chunk_type(make_result):
    results = [
        make_result("a", "Alpha paragraph text.", chunk_index=0),
        make_result("b", "Beta paragraph text.", chunk_index=1, knowledge_id="other"),
        make_result("c", "Gamma caption text.", chunk_index=1, chunk_type=ChunkType.IMAGE_CAPTION),
    ]
    assert len(merge_sequential(results)) == 3


def test_independent_units_are_never_spliced(make_result):
    results = [
        make_result("f1", "How do I reset?", chunk_index=0, chunk_type=ChunkType.FAQ),
        make_result("f2", "How do I pay?", chunk_index=1, chunk_type=ChunkType.FAQ),
        make_result("w1", "web page one", chunk_index=0, knowledge_id="", chunk_type=ChunkType.WEB_SEARCH),
        make_result("w2", "web page two", chunk_index=1, knowledge_id="", chunk_type=ChunkType.WEB_SEARCH),
        make_result("t1", "no document", chunk_index=0, knowledge_id=""),
        make_result("t2", "no document either", chunk_index=1, knowledge_id=""),
    ]
    merged = merge_sequential(results)
    assert sorted(r.id for r in merged) == ["f1", "f2", "t1", "t2", "w1", "w2"]
    assert all(r.sub_chunk_id == [] for r in merged)


def test_result_order_is_deterministic_whatever_the_input_order(make_result):
    results = [
        make_result(f"r{i}", f"Distinct passage {i} " * 3, chunk_index=i * 5, score=i % 3 / 10) for i in range(8)
    ]
    expected = [r.id for r in merge_sequential([r.model_copy(deep=True) for r in results])]
    rng = random.Random(5)
    for _ in range(5):
        shuffled = [r.model_copy(deep=True) for r in results]
        rng.shuffle(shuffled)
        assert [r.id for r in merge_sequential(shuffled)] == expected
    scores = [r.score for r in merge_sequential(results)]
    assert scores == sorted(scores, reverse=True)


def test_union_of_slices():
    a = SourceSlice(SOURCE[0:30], 0, 30)
    assert union_of_slices(a, SourceSlice(SOURCE[31:40], 31, 40)) is None
    assert union_of_slices(a, SourceSlice(SOURCE[30:40], 30, 40)) == SourceSlice(SOURCE[0:40], 0, 40)
    assert union_of_slices(SourceSlice(SOURCE[5:10], 5, 10), a) == a
