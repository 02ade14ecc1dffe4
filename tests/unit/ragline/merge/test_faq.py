from ragline.merge.faq import faq_answers, faq_content, render_faq, render_faq_answers
from ragline.types import ChunkType


def faq_result(make_result, id="f1", **fields):
    values = {"chunk_type": ChunkType.FAQ, "content": "How do I reset my password?"}
    values.update(fields)
    content = values.pop("content")
    return make_result(id, content, **values)


def test_rendering_format():
    assert render_faq("How do I reset?", ["Open settings", "Click reset"]) == (
        "Q: How do I reset?\nAnswer:\n- Open settings\n- Click reset"
    )
    assert render_faq("", ["Only an answer"]) == "Answer:\n- Only an answer"
    assert render_faq("Question only", []) == "Q: Question only"


def test_answers_may_be_a_string_or_a_list():
    assert faq_answers("Single answer") == ["Single answer"]
    assert faq_answers(["One", "  ", "Two ", None]) == ["One", "Two"]
    assert faq_answers(None) == []
    assert faq_answers(42) == []


def test_metadata_without_answers_renders_nothing():
    assert faq_content({"standard_question": "Q?"}) == ""
    assert faq_content({"standard_question": "Q?", "answers": "A."}) == "Q: Q?\nAnswer:\n- A."
    assert faq_content({"answers": ["A."]}, fallback_question="Matched?") == "Q: Matched?\nAnswer:\n- A."


def test_faq_hits_are_rendered_from_the_stored_entry(make_result, make_chunk, lookup):
    lookup.add(
        make_chunk(
            "f1",
            "How do I reset my password?",
            chunk_type=ChunkType.FAQ,
            metadata={"standard_question": "How do I reset my password?", "answers": ["Open settings", "Click reset"]},
        )
    )
    stale = faq_result(make_result, chunk_metadata={"standard_question": "old", "answers": ["old answer"]})
    text = make_result("t1", "Unrelated passage.")
    kept, rendered = render_faq_answers([stale, text], lookup)
    assert rendered == 1
    assert [r.id for r in kept] == ["f1", "t1"]
    assert kept[0].content == "Q: How do I reset my password?\nAnswer:\n- Open settings\n- Click reset"
    assert kept[1].content == "Unrelated passage."
    assert lookup.calls == [["f1"]]


def test_single_answer_string_and_metadata_carried_by_retrieval(make_result, lookup):
    hit = faq_result(make_result, chunk_metadata={"standard_question": "Where is the office?", "answers": "Paris"})
    kept, rendered = render_faq_answers([hit], lookup)  # not in the store: retrieval's copy is used
    assert rendered == 1
    assert kept[0].content == "Q: Where is the office?\nAnswer:\n- Paris"


def test_question_falls_back_to_the_matched_text(make_result, lookup):
    hit = faq_result(make_result, chunk_metadata={"answers": ["Use the reset link."]})
    [result], _ = render_faq_answers([hit], lookup)
    assert result.content == "Q: How do I reset my password?\nAnswer:\n- Use the reset link."


def test_disabled_entries_are_dropped_and_answerless_ones_kept_as_matched(make_result, make_chunk, lookup):
    lookup.add(
        make_chunk("off", "Old question?", chunk_type=ChunkType.FAQ, enabled=False, metadata={"answers": ["x"]}),
        make_chunk("bare", "Bare question?", chunk_type=ChunkType.FAQ, metadata={}),
    )
    kept, rendered = render_faq_answers(
        [faq_result(make_result, "off"), faq_result(make_result, "bare", content="Bare question?")], lookup
    )
    assert rendered == 0
    assert [(r.id, r.content) for r in kept] == [("bare", "Bare question?")]


def test_no_faq_reads_nothing(make_result, lookup):
    kept, rendered = render_faq_answers([make_result("t")], lookup)
    assert (len(kept), rendered, lookup.calls) == (1, 0, [])
