"""FAQ files: questions are refused with NUL or bidi controls, whichever format carries them."""

from __future__ import annotations

import json

import pytest

from ragline.ingest.faq import InvalidFAQ, parse_faq_file


def test_a_csv_row_with_a_bidi_control_in_a_question_is_refused_naming_row_and_column():
    raw = "standard_question,answer,similar_questions\nDo pears ripen?,Yes,ok|pe\u202eras?\n".encode()
    with pytest.raises(InvalidFAQ, match=r"row 1: similar_questions: must not contain a bidirectional"):
        parse_faq_file("faq.csv", raw)


def test_a_json_entry_with_a_nul_in_its_question_is_refused():
    raw = json.dumps([{"question": "fine?", "answer": "a"}, {"question": "bad\u0000?", "answer": "b"}]).encode()
    with pytest.raises(InvalidFAQ, match=r"entry 2: standard_question: must not contain a NUL"):
        parse_faq_file("faq.json", raw)


def test_line_breaks_in_answers_and_clean_questions_are_accepted():
    raw = json.dumps(
        [{"question": "Do pears ripen?", "answer": "Yes.\nOff the tree.", "similar_questions": ["Pears?"]}]
    )
    (entry,) = parse_faq_file("faq.json", raw.encode())
    assert entry.standard_question == "Do pears ripen?"
    assert entry.answers == ["Yes.\nOff the tree."]
