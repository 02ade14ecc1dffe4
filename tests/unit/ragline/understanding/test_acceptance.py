"""A rewrite is searched only if it still looks like the question (issue: an echoed prompt line searched for
nothing)."""

from __future__ import annotations

import pytest

from ragline.config import load_config
from ragline.types import History
from ragline.understanding.acceptance import REJECT_PROMPT_LINE, REJECT_UNRELATED, content_words, rewrite_rejection
from ragline.understanding.prompt import understanding_messages

_, TEMPLATES = load_config()
HISTORY = [History(query="What is ragline?", answer="ragline is a question-answering service with streamed answers.")]


def prompt(query: str, history=HISTORY) -> list[str]:
    return [m.content for m in understanding_messages(TEMPLATES, query=query, history=history, language="English")]


@pytest.mark.parametrize(
    ("echo", "history"),
    [
        ("Conversation so far:", HISTORY),
        ("Latest message:", HISTORY),
        ("conversation so far", []),
        ("  Latest message:  ", []),
        ("(no earlier messages)", []),
        ("--- END ROUND 1 ---", HISTORY),
    ],
)
def test_a_line_of_the_prompt_is_refused(echo, history):
    query = "Does it stream answers?"
    assert rewrite_rejection(echo, query, history, prompt(query, history)) == REJECT_PROMPT_LINE


def test_a_conversation_line_with_its_role_is_refused():
    query = "Does it stream answers?"
    assert rewrite_rejection("User: What is ragline?", query, HISTORY, prompt(query)) == REJECT_PROMPT_LINE


@pytest.mark.parametrize(
    ("rewrite", "query", "history"),
    [
        ("Does ragline stream answers?", "Does it stream answers?", HISTORY),  # the subject from the conversation
        ("Does it stream answers?", "Does it stream answers?", HISTORY),  # repeated unchanged
        ("What is ragline?", "And that?", HISTORY),  # a previous question, verbatim
        ("How do streamed answers resume?", "resume?", []),
        ("反应堆如何冷却？", "反应堆怎么冷却", []),  # Chinese: shared characters
        ("What did the 2024 report say?", "and in 2024?", []),
        ("Tell me about Kubernetes pods", "kubernetes pod", []),  # plural and case folded
    ],
)
def test_rewrites_that_look_like_the_question_are_kept(rewrite, query, history):
    assert rewrite_rejection(rewrite, query, history, prompt(query, history)) is None


@pytest.mark.parametrize(
    ("rewrite", "query"),
    [
        ("What is the weather in Paris?", "How does the reactor cool?"),
        ("What is it?", "How does the reactor cool?"),  # only function words
        ("猫喜欢吃鱼", "反应堆怎么冷却"),
    ],
)
def test_rewrites_that_share_no_content_word_are_refused(rewrite, query):
    assert rewrite_rejection(rewrite, query, [], prompt(query, [])) == REJECT_UNRELATED


def test_the_description_of_images_the_model_saw_counts_as_a_source():
    query = "What is this?"
    assert rewrite_rejection("What is the total on this receipt?", query, [], [], seen=["A receipt, TOTAL 42"]) is None
    assert rewrite_rejection("What is the total on this receipt?", query, [], []) is None  # nothing to judge by
    assert rewrite_rejection("Total of the receipt?", "What about the invoice?", [], []) == REJECT_UNRELATED


def test_content_words_drop_function_words_and_keep_topics():
    assert content_words("What is the cooling of the reactors?") == {"cooling", "reactor"}
    assert content_words("什么是反应堆") == {"反", "应", "堆"}
