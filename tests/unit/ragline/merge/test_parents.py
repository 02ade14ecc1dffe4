import json

from ragline.merge.coordinates import REWRITTEN_KEY, coordinates_trusted
from ragline.merge.parents import resolve_parents
from ragline.types import ChunkType

SOURCE = "Intro paragraph about backups.\n\nBackups run nightly.\n\nThey are kept thirty days.\n"
PARENT_START = SOURCE.index("Backups run")
PARENT_END = len(SOURCE) - 1
CHILD = "Backups run nightly."
CHILD_START = SOURCE.index(CHILD)


def parent_chunk(make_chunk, **fields):
    values = {
        "chunk_type": ChunkType.PARENT_TEXT,
        "start_at": PARENT_START,
        "end_at": PARENT_END,
        "searchable": False,
    }
    values.update(fields)
    return make_chunk("p1", SOURCE[PARENT_START:PARENT_END], **values)


def child_result(make_result, id="c1", content=CHILD, **fields):
    values = {
        "parent_chunk_id": "p1",
        "chunk_index": 4,
        "start_at": CHILD_START,
        "end_at": CHILD_START + len(CHILD),
        "score": 0.7,
    }
    values.update(fields)
    return make_result(id, content, **values)


def test_text_child_takes_the_parent_text_and_keeps_its_identity(make_result, make_chunk, lookup):
    lookup.add(parent_chunk(make_chunk))
    images = json.dumps([{"url": "https://img/child.png"}])
    child = child_result(make_result, image_info=images)
    assert resolve_parents([child], lookup) == 1
    assert child.content == SOURCE[PARENT_START:PARENT_END]
    assert (child.id, child.chunk_index, child.score) == ("c1", 4, 0.7)
    assert child.sub_chunk_id == ["c1"]
    # Image info stays strictly the matched child's.
    assert child.image_info == images
    # The text is exactly the parent's slice, so the parent's coordinates now describe it.
    assert (child.start_at, child.end_at) == (PARENT_START, PARENT_END)
    assert coordinates_trusted(child)


def test_siblings_are_resolved_with_one_batched_read(make_result, make_chunk, lookup):
    lookup.add(parent_chunk(make_chunk))
    children = [child_result(make_result, "c1"), child_result(make_result, "c2", "They are kept thirty days.")]
    assert resolve_parents(children, lookup) == 2
    assert lookup.calls == [["p1"]]
    assert children[0].content == children[1].content


def test_edited_child_text_is_kept_and_marked_rewritten(make_result, make_chunk, lookup):
    lookup.add(parent_chunk(make_chunk))
    child = child_result(make_result, content="Backups now run hourly.")
    resolve_parents([child], lookup)
    assert child.content == SOURCE[PARENT_START:PARENT_END] + "\n\nBackups now run hourly."
    assert child.metadata[REWRITTEN_KEY] == "true"
    assert not coordinates_trusted(child)


def test_edited_parent_does_not_lend_its_coordinates(make_result, make_chunk, lookup):
    lookup.add(parent_chunk(make_chunk, metadata={"revision": 2}))
    child = child_result(make_result)
    resolve_parents([child], lookup)
    assert child.content == SOURCE[PARENT_START:PARENT_END]
    assert not coordinates_trusted(child)


def test_unusable_parents_leave_the_child_as_it_was(make_result, make_chunk, lookup):
    cases = {
        "missing": None,
        "wrong type": parent_chunk(make_chunk, chunk_type=ChunkType.TEXT),
        "other document": parent_chunk(make_chunk, knowledge_id="other"),
        "disabled": parent_chunk(make_chunk, enabled=False),
        "empty": parent_chunk(make_chunk).model_copy(update={"content": ""}),
    }
    for parent in cases.values():
        lookup.chunks.clear()
        if parent is not None:
            lookup.add(parent)
        child = child_result(make_result)
        assert resolve_parents([child], lookup) == 0
        assert child.content == CHILD
        assert child.sub_chunk_id == []
        assert REWRITTEN_KEY not in child.metadata


def test_only_text_sub_chunks_are_resolved(make_result, make_chunk, lookup):
    lookup.add(parent_chunk(make_chunk))
    faq = child_result(make_result, chunk_type=ChunkType.FAQ)
    orphan = make_result("o1", "No parent here.")
    assert resolve_parents([faq, orphan], lookup) == 0
    assert lookup.calls == []
    assert faq.content == CHILD


def test_nothing_to_resolve_reads_nothing(make_result, lookup):
    assert resolve_parents([make_result("a")], lookup) == 0
    assert lookup.calls == []
