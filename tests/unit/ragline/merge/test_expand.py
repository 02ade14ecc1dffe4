import pytest

from ragline.merge.config import EXPAND_TARGET_CHARS, SHORT_PASSAGE_CHARS
from ragline.merge.coordinates import REWRITTEN_KEY
from ragline.merge.expand import assemble, expand_short_passages, keep_head, keep_tail
from ragline.merge.join import JOIN_SEPARATOR
from ragline.merge.sequential import INDEX_END_KEY
from ragline.types import ChunkType

CHUNK_CHARS = 200


def body(index: int, size: int = CHUNK_CHARS) -> str:
    """``size`` characters of words unique to chunk ``index``."""
    words = []
    n = 0
    while len(" ".join(words)) < size:
        words.append(f"c{index}w{n}")
        n += 1
    return " ".join(words)[:size].rstrip() + "."


@pytest.fixture
def document(make_chunk, lookup):
    """Ten linked text chunks of one document, c0..c9."""
    chunks = [
        make_chunk(
            f"c{i}",
            body(i),
            chunk_index=i,
            pre_chunk_id=f"c{i - 1}" if i > 0 else "",
            next_chunk_id=f"c{i + 1}" if i < 9 else "",
        )
        for i in range(10)
    ]
    lookup.add(*chunks)
    return chunks


def hit(make_result, index: int, content: str, **fields):
    values = {
        "chunk_index": index,
        "pre_chunk_id": f"c{index - 1}" if index > 0 else "",
        "next_chunk_id": f"c{index + 1}" if index < 9 else "",
    }
    values.update(fields)
    return make_result(f"c{index}", content, **values)


def test_defaults_follow_the_reference():
    assert (SHORT_PASSAGE_CHARS, EXPAND_TARGET_CHARS) == (350, 850)


def test_short_passage_grows_on_both_sides_to_about_the_target(make_result, document, lookup):
    base = body(5, 100)
    result = hit(make_result, 5, base)
    assert expand_short_passages([result], lookup) == 1
    assert base in result.content
    separators = 2 * len(JOIN_SEPARATOR)
    assert EXPAND_TARGET_CHARS - CHUNK_CHARS // 2 <= len(result.content) <= EXPAND_TARGET_CHARS + separators
    # Alternating sides: c4, c6, c3, c7 were read; the nearest ones are whole.
    assert document[4].content in result.content
    assert document[6].content in result.content
    assert result.sub_chunk_id == ["c3", "c4", "c6", "c7"]
    assert result.content.index("c3w") < result.content.index(base) < result.content.index("c7w")
    assert "c2w" not in result.content
    assert "c8w" not in result.content
    assert result.metadata[REWRITTEN_KEY] == "true"
    assert result.metadata[INDEX_END_KEY] == "7"
    # Neighbour text is cut at word boundaries.
    first_word = result.content.split()[0]
    assert first_word.startswith("c3w")
    assert result.content.rstrip(".").split()[-1] in document[7].content.split()


def test_widening_stays_in_the_document(make_result, make_chunk, document, lookup):
    lookup.add(make_chunk("x1", "Another document's text. " * 10, knowledge_id="other", chunk_index=1))
    lookup.chunks["c6"] = document[6].model_copy(update={"next_chunk_id": "x1"})
    result = hit(make_result, 6, body(6, 100), next_chunk_id="x1")
    expand_short_passages([result], lookup)
    assert "Another document" not in result.content
    assert "x1" not in result.sub_chunk_id
    # The next side is closed, so the previous side supplies the text.
    assert {"c5", "c4", "c3"} <= set(result.sub_chunk_id)


def test_widening_stops_at_the_document_edges(make_result, lookup, make_chunk):
    lookup.add(make_chunk("c0", "First and only neighbour.", chunk_index=0, next_chunk_id="c1"))
    result = hit(make_result, 1, "A short hit.", pre_chunk_id="c0", next_chunk_id="")
    assert expand_short_passages([result], lookup) == 1
    assert result.content == "First and only neighbour." + JOIN_SEPARATOR + "A short hit."


def test_missing_neighbours_and_loops_end_the_widening(make_result, make_chunk, lookup):
    lookup.add(
        make_chunk("a", "Chunk a text.", pre_chunk_id="b", next_chunk_id="b"),
        make_chunk("b", "Chunk b text.", pre_chunk_id="a", next_chunk_id="a"),
    )
    result = make_result("a", "Chunk a text.", pre_chunk_id="b", next_chunk_id="gone")
    assert expand_short_passages([result], lookup) == 1
    assert result.content == "Chunk b text." + JOIN_SEPARATOR + "Chunk a text."
    assert result.sub_chunk_id == ["b"]


def test_only_short_text_passages_with_neighbours_are_widened(make_result, document, lookup):
    long_enough = hit(make_result, 2, "x" * SHORT_PASSAGE_CHARS)
    faq = hit(make_result, 3, "Short FAQ.", chunk_type=ChunkType.FAQ)
    no_links = make_result("lonely", "Short and unlinked.")
    assert expand_short_passages([long_enough, faq, no_links], lookup) == 0
    assert lookup.calls == []
    assert long_enough.content == "x" * SHORT_PASSAGE_CHARS


def test_neighbours_are_read_in_batched_rounds(make_result, document, lookup):
    results = [hit(make_result, 2, "Short two."), hit(make_result, 7, "Short seven.")]
    assert expand_short_passages(results, lookup) == 2
    # Each round reads both passages' next neighbours at once; four rounds reach the target.
    assert len(lookup.calls) == 4
    assert all(len(call) == 2 for call in lookup.calls)


def test_neighbours_already_carried_are_walked_through_not_added_again(make_result, document, lookup):
    # The passage already carries c4 (merged earlier): its link is followed, its text not repeated.
    result = hit(make_result, 5, "Short five.", sub_chunk_id=["c4"])
    expand_short_passages([result], lookup)
    assert document[4].content not in result.content
    assert document[3].content[-20:] in result.content
    assert result.sub_chunk_id.count("c4") == 1
    assert {"c3", "c6"} <= set(result.sub_chunk_id)


def test_thresholds_are_parameters(make_result, document, lookup):
    result = hit(make_result, 5, body(5, 100))
    assert expand_short_passages([result], lookup, short_chars=50) == 0
    assert expand_short_passages([result], lookup, short_chars=150, target=300) == 1
    assert len(result.content) <= 300 + 2 * len(JOIN_SEPARATOR)


def test_assemble_never_cuts_the_hit_and_shares_the_budget():
    base = "H" * 900
    assert assemble("previous words", base, "following words") == base
    assert assemble("aaa bbb ccc", "HIT", "", target=10) == "bbb ccc" + JOIN_SEPARATOR + "HIT"
    assert assemble("", "HIT", "aaa bbb ccc", target=10) == "HIT" + JOIN_SEPARATOR + "aaa bbb"
    both = assemble("p1 p2 p3 p4", "HIT", "n1 n2 n3 n4", target=15)
    assert both == "p3 p4" + JOIN_SEPARATOR + "HIT" + JOIN_SEPARATOR + "n1 n2"


def test_word_boundary_cuts():
    assert keep_tail("alpha beta gamma", 7) == "gamma"
    assert keep_tail("alpha beta gamma", 6) == "gamma"
    assert keep_tail("alpha beta gamma", 100) == "alpha beta gamma"
    assert keep_tail("abcdef", 3) == "def"  # no space to cut at (e.g. Chinese): characters it is
    assert keep_head("alpha beta gamma", 8) == "alpha"
    assert keep_head("alpha beta gamma", 10) == "alpha beta"
    assert keep_head("abcdef", 3) == "abc"
    assert keep_head("abc", 0) == ""
    assert keep_tail("abc", 0) == ""
