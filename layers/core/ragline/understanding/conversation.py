"""The earlier rounds as the rewrite prompt's ``{conversation}`` placeholder.

Each round sits between numbered BEGIN/END markers so the model can tell where one exchange stops and the
next starts even when an answer contains blank lines, lists or "User:"-like text of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragline.types import History

# Resolving "it" or "the second one" needs the gist of an answer, not all of it; long answers would
# crowd out the question in a small understanding model's context and slow every turn.
MAX_ANSWER_CHARS = 600
TRUNCATION_MARK = " […]"
# A cut answer ends at a word boundary only if that keeps at least this share of the allowed characters.
_WORD_BOUNDARY_MIN_KEEP = 0.8
# Written instead of an empty section, which small models tend to read as a formatting mistake.
NO_CONVERSATION = "(no earlier messages)"


def format_conversation(history: Sequence[History], max_answer_chars: int = MAX_ANSWER_CHARS) -> str:
    """Rounds oldest first, numbered from 1, answers cut to ``max_answer_chars`` characters.

    >>> print(format_conversation([History(query="What is X?", answer="X is a tool.")]))
    --- BEGIN ROUND 1 ---
    User: What is X?
    Assistant: X is a tool.
    --- END ROUND 1 ---
    """
    if not history:
        return NO_CONVERSATION
    blocks = []
    for number, round_ in enumerate(history, start=1):
        blocks.append(
            f"--- BEGIN ROUND {number} ---\n"
            f"User: {round_.query.strip()}\n"
            f"Assistant: {truncate_answer(round_.answer.strip(), max_answer_chars)}\n"
            f"--- END ROUND {number} ---"
        )
    return "\n".join(blocks)


def truncate_answer(answer: str, max_chars: int = MAX_ANSWER_CHARS) -> str:
    """The answer, or its first ``max_chars`` characters (cut at a word when one ends nearby) and a mark."""
    if len(answer) <= max_chars:
        return answer
    head = answer[:max_chars]
    boundary = head.rfind(" ")
    if boundary >= max_chars * _WORD_BOUNDARY_MIN_KEEP:
        head = head[:boundary]
    return head.rstrip() + TRUNCATION_MARK
