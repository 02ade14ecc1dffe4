from ragline.answering.sentences import split_sentences


def texts(text: str) -> list[str]:
    spans = split_sentences(text)
    assert all(text[s.start : s.end] == s.text for s in spans)  # exact slices of the passage
    return [s.text for s in spans]


def test_sentences_end_at_stops_not_at_abbreviations_initials_or_decimals():
    text = "Fr. Sorin founded it in 1842. J. R. R. Tolkien wrote 3.5 books, e.g. this one. Is it? Yes!"
    assert texts(text) == [
        "Fr. Sorin founded it in 1842.",
        "J. R. R. Tolkien wrote 3.5 books, e.g. this one.",
        "Is it?",
        "Yes!",
    ]


def test_chinese_sentences_and_markdown_lines():
    text = "# 标题\n\n范廷颂于1940年完成学业。1949年晋铎；后被派到孤儿院。\n- A list item without a stop\n| a | b |"
    assert texts(text) == [
        "标题",
        "范廷颂于1940年完成学业。",
        "1949年晋铎；",
        "后被派到孤儿院。",
        "A list item without a stop",
        "a | b",
    ]


def test_a_very_long_sentence_is_cut_at_a_comma():
    text = ", ".join(f"clause number {i} of a long enumeration" for i in range(30)) + "."
    pieces = texts(text)
    assert len(pieces) > 1
    assert all(len(p) <= 420 for p in pieces)
