import pytest

from ragline.types import QueryIntent, needs_kb_retrieval, normalize_query_intent
from ragline.types.intent import needs_retrieval


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("KB-Search", "kb_search"),
        (" Web Search ", "web_search"),
        ("GREETING", "greeting"),
        ("follow-up", "follow_up"),
        ("weather", ""),
        ("", ""),
        (None, ""),
    ],
)
def test_normalize_query_intent(raw, expected):
    assert normalize_query_intent(raw) == expected


def test_nine_intents():
    assert len(QueryIntent) == 9


@pytest.mark.parametrize("intent", ["kb_search", "clarification", "summarize", "", "nonsense"])
def test_retrieval_intents_search_the_knowledge_base(intent):
    assert needs_kb_retrieval(intent)


@pytest.mark.parametrize("intent", ["greeting", "chitchat", "follow_up", "image_only", "doc_only", "web_search"])
def test_other_intents_do_not(intent):
    assert not needs_kb_retrieval(intent)


def test_web_search_intent_depends_on_web_search_being_enabled():
    assert needs_retrieval("web_search", web_search_enabled=True)
    assert not needs_retrieval("web_search", web_search_enabled=False)
    assert needs_retrieval("kb_search", web_search_enabled=False)
