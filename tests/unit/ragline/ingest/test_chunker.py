import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragline.ingest.chunker import plan_chunks

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"]


def plan(text: str, *, markdown: bool = True, size: int = 200, min_size: int = 20, parent: int = 1000, **kw):
    return plan_chunks(text, markdown=markdown, chunk_size=size, min_size=min_size, parent_size=parent, **kw)


def paragraph(rng: random.Random, max_words: int = 120) -> str:
    words = []
    for _ in range(rng.randint(1, max_words)):
        word = rng.choice(WORDS)
        if rng.random() < 0.1:
            word += "."
        words.append(word)
    return " ".join(words)


def random_document(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 15)):
        roll = rng.random()
        if roll < 0.2:
            parts.append("#" * rng.randint(1, 4) + " " + rng.choice(WORDS).title())
        elif roll < 0.3:
            parts.append("```\n# not a heading\nx = 1\n\n# still code\n```")
        elif roll < 0.35:
            parts.append("x" * rng.randint(100, 900))
        elif roll < 0.4:
            parts.append("中文句子。" * rng.randint(10, 200))
        else:
            parts.append(paragraph(rng))
    return "\n\n".join(parts)


def contents(text, chunk_plan):
    return [text[c.start : c.end] for c in chunk_plan.children]


def test_headings_become_header_paths_and_title():
    text = (
        "# Title\n\nintro text here\n\n## Install\n\nrun the installer\n\n### Linux\n\nuse apt\n\n"
        "## Usage\n\nrun it\n\n# Second\n\nother top\n"
    )
    result = plan(text)
    assert result.title == "Title"
    assert [(c.header, text[c.start : c.end]) for c in result.children] == [
        ("Title", "intro text here"),
        ("Title > Install", "run the installer"),
        ("Title > Install > Linux", "use apt"),
        ("Title > Usage", "run it"),
        ("Second", "other top"),
    ]
    assert result.parents == []  # no section is longer than one chunk


def test_text_before_first_heading_has_empty_header():
    text = "preamble words\n\n## Section\n\nbody"
    result = plan(text, fallback_title="Fallback")
    assert [(c.header, text[c.start : c.end]) for c in result.children] == [("", "preamble words"), ("Section", "body")]
    assert result.title == "Fallback"  # no level-1 heading


def test_code_fence_lines_with_hash_are_not_headings():
    text = "# Real\n\nintro\n\n```python\n# a comment\nx = 1\n\n# another comment\n```\n\nafter code\n"
    result = plan(text)
    assert {c.header for c in result.children} == {"Real"}
    joined = "\n".join(contents(text, result))
    assert "# a comment" in joined
    assert "# another comment" in joined
    # the fenced block (with its blank line) stays in one chunk
    fenced = [c for c in contents(text, result) if "```python" in c]
    assert len(fenced) == 1
    assert fenced[0].count("```") == 2


def test_plain_text_mode_has_no_headings():
    text = "# Not a heading\n\nparagraph"
    result = plan(text, markdown=False, fallback_title="fb")
    assert result.title == "fb"
    assert all(c.header == "" for c in result.children)
    assert "# Not a heading" in "".join(contents(text, result))


def test_empty_and_blank_text_give_no_chunks():
    assert plan("").children == []
    assert plan("   \n\n  \n").children == []


@settings(max_examples=60)
@given(rng=st.randoms(use_true_random=False))
def test_random_documents_invariants(rng):
    text = random_document(rng)
    size = rng.choice([100, 200, 400, 800])
    result = plan(text, size=size, min_size=size // 10, parent=size * 5)
    previous_end = -1
    for child in result.children:
        content = text[child.start : child.end]
        assert content  # exact, non-empty slice
        assert content == content.strip()
        assert child.end - child.start <= size + size // 2
        assert child.start >= previous_end  # in order, not overlapping
        previous_end = child.end
        assert "not a heading" not in child.header
        assert "still code" not in child.header
        if child.parent is not None:
            parent = result.parents[child.parent]
            assert parent.start <= child.start
            assert child.end <= parent.end
            assert parent.header == child.header
    # every word of the source (outside headings) is in some chunk
    covered = [False] * len(text)
    for child in result.children:
        for i in range(child.start, child.end):
            covered[i] = True
    for line_start, line in _lines(text):
        if line.startswith("#") and not line.startswith("# not") and not line.startswith("# still"):
            continue
        for offset, char in enumerate(line):
            if not char.isspace():
                assert covered[line_start + offset], (line, offset)


def _lines(text):
    position = 0
    for line in text.splitlines(keepends=True):
        yield position, line.rstrip("\n")
        position += len(line)


def test_long_section_gets_parent_chunks_containing_children():
    rng = random.Random(5)
    body = "\n\n".join(paragraph(rng, 40) for _ in range(30))
    text = f"# Doc\n\n## Long\n\n{body}\n\n## Short\n\nshort body\n"
    result = plan(text, size=200, min_size=20, parent=800)
    long_children = [c for c in result.children if c.header == "Doc > Long"]
    short_children = [c for c in result.children if c.header == "Doc > Short"]
    assert len(long_children) > 1
    assert all(c.parent is not None for c in long_children)
    assert all(c.parent is None for c in short_children)
    assert len(result.parents) >= 2
    for parent_index, parent in enumerate(result.parents):
        assert parent.end - parent.start <= 800
        members = [c for c in long_children if c.parent == parent_index]
        assert members
        parent_text = text[parent.start : parent.end]
        for child in members:
            assert text[child.start : child.end] in parent_text
    # parents cover every child of the section and do not overlap one another
    spans = sorted((p.start, p.end) for p in result.parents)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))


def test_long_paragraph_is_split_at_sentences_or_spaces():
    sentence = "This is a sentence with several words in it. "
    text = sentence * 40
    result = plan(text, markdown=False, size=120, min_size=10)
    assert len(result.children) > 1
    for piece in contents(text, result):
        assert len(piece) <= 180
        assert not piece.startswith(" ")
    assert "".join(contents(text, result)).replace(" ", "") == text.replace(" ", "")


def test_unbroken_text_is_hard_split():
    text = "x" * 1000
    result = plan(text, markdown=False, size=300, min_size=10)
    assert "".join(contents(text, result)) == text
    assert all(len(c) <= 450 for c in contents(text, result))


def test_small_paragraphs_are_packed_together():
    text = "one\n\ntwo\n\nthree"
    result = plan(text, markdown=False, size=200)
    assert contents(text, result) == [text]


def test_tilde_fence_hash_lines_are_not_headings():
    text = "~~~\n# in a tilde fence\n~~~\n\n# Real\n\ntext"
    result = plan(text)
    assert result.title == "Real"
    assert [c.header for c in result.children] == ["", "Real"]


@pytest.mark.parametrize(
    "code_block",
    [
        # a ~~~ line inside a ``` block does not close it (CommonMark: same character, at least as long)
        "```\n# a\n~~~\n# b comment\n```",
        # a ``` block shown inside a ```` block (how Markdown documentation quotes Markdown)
        "````markdown\n```python\n# b comment\n```\n````",
    ],
)
def test_mismatched_fence_inside_code_block_does_not_end_it(code_block):
    text = f"# Real\n\nintro\n\n{code_block}\n\nafter\n"
    result = plan(text)
    assert result.title == "Real"
    assert {c.header for c in result.children} == {"Real"}
    assert all("comment" not in c.header for c in result.children)
