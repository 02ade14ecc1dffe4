"""Query understanding: the rewrite prompt, its conversation block, and reading the model's JSON reply."""

from ragline.understanding.conversation import MAX_ANSWER_CHARS, format_conversation, truncate_answer
from ragline.understanding.notes import InMemoryUserMessageNotes, UserMessageNotes
from ragline.understanding.parse import Understanding, merge_description_and_ocr, parse_understanding
from ragline.understanding.prompt import intent_system_prompt, understanding_messages

__all__ = [
    "MAX_ANSWER_CHARS",
    "InMemoryUserMessageNotes",
    "Understanding",
    "UserMessageNotes",
    "format_conversation",
    "intent_system_prompt",
    "merge_description_and_ocr",
    "parse_understanding",
    "truncate_answer",
    "understanding_messages",
]
