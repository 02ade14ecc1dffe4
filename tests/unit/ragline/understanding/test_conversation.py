import pytest

from ragline.types import History
from ragline.understanding.conversation import (
    MAX_ANSWER_CHARS,
    NO_CONVERSATION,
    TRUNCATION_MARK,
    format_conversation,
    truncate_answer,
)


def test_no_history_says_so():
    assert format_conversation([]) == NO_CONVERSATION


def test_rounds_are_numbered_blocks_oldest_first():
    history = [
        History(query="What is ragline?", answer="A RAG pipeline."),
        History(query="  Does it stream?\n", answer="\nYes, over SSE.  "),
    ]
    assert format_conversation(history) == (
        "--- BEGIN ROUND 1 ---\n"
        "User: What is ragline?\n"
        "Assistant: A RAG pipeline.\n"
        "--- END ROUND 1 ---\n"
        "--- BEGIN ROUND 2 ---\n"
        "User: Does it stream?\n"
        "Assistant: Yes, over SSE.\n"
        "--- END ROUND 2 ---"
    )


def test_multiline_answers_stay_inside_their_block():
    text = format_conversation([History(query="List them", answer="1. one\n\n2. two\nUser: not a turn")])
    assert text.startswith("--- BEGIN ROUND 1 ---\n")
    assert text.endswith("User: not a turn\n--- END ROUND 1 ---")


def test_long_answers_are_truncated_in_the_block():
    answer = "word " * 1000
    text = format_conversation([History(query="q", answer=answer)])
    body = text.split("Assistant: ", 1)[1].split("\n--- END", 1)[0]
    assert body.endswith(TRUNCATION_MARK)
    assert len(body) <= MAX_ANSWER_CHARS + len(TRUNCATION_MARK)


@pytest.mark.parametrize(
    ("answer", "limit", "expected"),
    [
        ("short", 10, "short"),
        ("exactly10!", 10, "exactly10!"),
        ("alpha beta gamma delta", 20, "alpha beta gamma" + TRUNCATION_MARK),
        # No word boundary near the limit (Han text, long tokens): a plain cut.
        ("知识库检索配置知识库检索配置", 6, "知识库检索配" + TRUNCATION_MARK),
        ("a " + "x" * 30, 20, "a " + "x" * 18 + TRUNCATION_MARK),
    ],
)
def test_truncate_answer(answer, limit, expected):
    assert truncate_answer(answer, limit) == expected
