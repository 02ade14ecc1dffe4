import pytest

from ragline.text.segmentation import (
    content_signature,
    cut_for_search,
    has_han,
    normalize_content,
    segment_for_index,
    tokenize_simple,
)


def test_tokenize_simple_lowercases_and_splits_words():
    assert tokenize_simple("Hello World, HELLO again") == {"hello", "world", "again"}


def test_tokenize_simple_drops_one_char_and_punctuation_tokens():
    tokens = tokenize_simple("a I x -- !! ... ok go ?? 7 42 __ ！！ 、、")
    assert tokens == {"ok", "go", "42"}


def test_tokenize_simple_han_uses_jieba():
    tokens = tokenize_simple("我爱北京天安门")
    assert "北京" in tokens
    assert "天安门" in tokens
    assert "我" not in tokens  # one character
    assert "爱" not in tokens
    assert tokens <= set(cut_for_search("我爱北京天安门"))


def test_tokenize_simple_mixed_text():
    tokens = tokenize_simple("Ragline 支持中文检索, and English.")
    assert {"ragline", "and", "english"} <= tokens
    assert "中文" in tokens
    assert "检索" in tokens
    assert all(len(t) > 1 for t in tokens)
    assert "," not in tokens


def test_tokenize_simple_empty():
    assert tokenize_simple("") == set()
    assert tokenize_simple("  ,.;  ") == set()


def test_has_han():
    assert has_han("abc 中 def")
    assert not has_han("abc déf")


@pytest.mark.parametrize(
    "variant",
    ["Hello   World", "hello world", "  HELLO\tworld\n", "Hello\n\nWorld  "],
)
def test_content_signature_ignores_case_and_whitespace(variant):
    assert content_signature(variant) == content_signature("hello world")
    assert normalize_content(variant) == "hello world"


def test_content_signature_differs_for_different_text():
    assert content_signature("hello world") != content_signature("hello  worlds")
    assert content_signature("helloworld") != content_signature("hello world")
    assert len(content_signature("x")) == 32


def test_segment_for_index_leaves_non_han_text_unchanged():
    text = "Plain English, with punctuation!"
    assert segment_for_index(text) == text


def test_segment_for_index_splits_chinese_into_words():
    segmented = segment_for_index("我爱北京天安门")
    words = segmented.split()
    assert "北京" in words
    assert "天安门" in words
    assert len(words) > 1
    # every word comes from the source run
    assert all(w in "我爱北京天安门" for w in words)


def test_segment_for_index_keeps_surrounding_text():
    segmented = segment_for_index("FTS5索引abc")
    assert segmented.startswith("FTS5 ")
    assert segmented.endswith(" abc")
    assert "索引" in segmented.split()
