"""The local GGUF's prompt fitted to its context window: whole excerpts dropped, from the last listed."""

from __future__ import annotations

import re

from ragline.modelcontext.registry import SourceRegistry
from ragline.models.base import ChatMessage
from ragline.models.llama_cpp import fit_prompt
from ragline.types import SearchResult

INSTRUCTIONS = "You answer questions using the knowledge base excerpts given below.\n\nKnowledge base excerpts:\n"


def words(text: str) -> int:
    return len(text.split())


def passage(n: int, document: str) -> SearchResult:
    content = f"passage{n} " + " ".join(f"w{n}x{i}" for i in range(40))
    return SearchResult(id=f"chunk-{n}", content=content, knowledge_title=document, knowledge_id=document)


def system_prompt() -> str:
    # Ranks 1..6 over three documents: A holds 1, 4; B holds 2, 5; C holds 3, 6.
    results = [passage(n, "ABC"[(n - 1) % 3]) for n in range(1, 7)]
    return INSTRUCTIONS + SourceRegistry().render_results(results)


def excerpts(text: str) -> list[str]:
    return re.findall(r"passage(\d)", text)


def test_a_prompt_that_fits_is_unchanged() -> None:
    messages = [ChatMessage("system", system_prompt()), ChatMessage("user", "What is w1x3?")]
    fitted = fit_prompt(messages, 10_000, words)
    assert fitted == [{"role": m.role, "content": m.content} for m in messages]


def test_whole_excerpts_go_from_the_last_listed_document_and_empty_documents_with_them() -> None:
    system = system_prompt()
    assert excerpts(system) == ["1", "4", "2", "5", "3", "6"]  # grouped by document, in rank order
    messages = [ChatMessage("system", system), ChatMessage("user", "What is w1x3?")]
    budget = words(system) - 60  # two excerpts (41 words each) too many

    fitted = fit_prompt(messages, budget, words)

    kept = fitted[0]["content"]
    assert excerpts(kept) == ["1", "4", "2", "5"]
    assert sum(words(item["content"]) + 8 for item in fitted) <= budget
    assert kept.startswith(INSTRUCTIONS)
    assert 'title="C"' not in kept  # no document left without excerpts
    assert kept.rstrip().endswith("</retrieval>")
    assert re.search(r"<chunk [^>]*><content>passage5 [^<]*</content></chunk>", kept)  # cut at excerpt bounds
    assert fitted[1] == {"role": "user", "content": "What is w1x3?"}


def test_history_goes_before_any_excerpt() -> None:
    system = system_prompt()
    messages = [
        ChatMessage("system", system),
        ChatMessage("user", "an earlier question " * 10),
        ChatMessage("assistant", "an earlier answer " * 10),
        ChatMessage("user", "What is w1x3?"),
    ]
    budget = words(system) + 8 + words("What is w1x3?") + 8

    fitted = fit_prompt(messages, budget, words)

    assert [item["role"] for item in fitted] == ["system", "user"]
    assert excerpts(fitted[0]["content"]) == ["1", "4", "2", "5", "3", "6"]
