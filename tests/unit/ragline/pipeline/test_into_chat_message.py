import asyncio

import pytest

from ragline.config import load_config
from ragline.pipeline.into_chat_message import PluginIntoChatMessage, render_passages, validate_input
from ragline.pipeline.plugin import EventManager
from ragline.types import ChatManage, EventType, SearchResult


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  How do I resume a stream?  ", "How do I resume a stream?"),
        ("line one\nline two\twith tab", "line one\nline two\twith tab"),
        ("\n\tpadded\n", "padded"),
        ("Windows line\r\nend", "Windows line\r\nend"),
        ("中文问题？", "中文问题？"),
        ("Is a < b and c > d?", "Is a < b and c > d?"),
        ("what does onboarding mean", "what does onboarding mean"),
    ],
)
def test_valid_input_is_trimmed_and_accepted(text, expected):
    assert validate_input(text) == (expected, True)


def test_empty_input_is_accepted():
    assert validate_input("") == ("", True)


@pytest.mark.parametrize(
    "text",
    [
        "null\x00byte",
        "bell\x07",
        "escape \x1b[31m red",
        "backspace\x08",
        "\x0bvertical tab",
        "form\x0cfeed",
    ],
)
def test_control_characters_are_rejected(text):
    assert validate_input(text) == ("", False)


@pytest.mark.parametrize(
    "text",
    [
        "<script>alert(1)</script>",
        "hi <SCRIPT type='x'>evil()</SCRIPT> there",
        "<script>\nmulti\nline\n</script>",
        "click javascript:alert(1)",
        "JavaScript:void(0)",
        "vbscript:msgbox",
        '<iframe src="x"></iframe>',
        '<img src=x onerror="alert(1)">',
        "<embed src=x>",
        '<input value="x">',
        "<form action=x>y</form>",
    ],
)
def test_markup_injection_is_rejected(text):
    assert validate_input(text) == ("", False)


def test_lone_surrogate_is_rejected():
    assert validate_input("broken \ud800 text") == ("", False)


def result(id: str, content: str, title: str = "", description: str = "", filename: str = "") -> SearchResult:
    return SearchResult(
        id=id,
        content=content,
        knowledge_title=title,
        knowledge_description=description,
        knowledge_filename=filename,
    )


def test_render_passages_numbers_contexts_and_dedups_titles():
    rendered = render_passages(
        [
            result("1", "first passage", title="Handbook", description="Company handbook"),
            result("2", "second passage", title="Guide"),
            result("3", "third passage", title="Handbook", description="ignored second description"),
            result("4", "fourth passage", filename="notes.md"),
        ]
    )
    header, *passages = rendered.split("\n")
    assert header == (
        "<documents>"
        "<document><title>Handbook</title><description>Company handbook</description></document>"
        "<document><title>Guide</title></document>"
        "<document><title>notes.md</title></document>"
        "</documents>"
    )
    assert passages == [
        '<context id="1">first passage</context>',
        '<context id="2">second passage</context>',
        '<context id="3">third passage</context>',
        '<context id="4">fourth passage</context>',
    ]


def test_render_passages_escapes_titles_and_omits_header_without_titles():
    assert render_passages([result("1", "a"), result("2", "b")]) == (
        '<context id="1">a</context>\n<context id="2">b</context>'
    )
    rendered = render_passages([result("1", "a", title="A & <B>", description='"d"')])
    assert rendered.startswith(
        "<documents><document><title>A &amp; &lt;B&gt;</title><description>&quot;d&quot;</description>"
    )


def run_plugin(cm: ChatManage, template_id: str = "inline_contexts"):
    _, templates = load_config()
    manager = EventManager()
    manager.register(PluginIntoChatMessage(templates, template_id))
    return asyncio.run(manager.trigger(EventType.INTO_CHAT_MESSAGE, cm))


def test_plugin_renders_contexts_into_user_content(make_request):
    cm = ChatManage.start(make_request(query="  What is X?  ", knowledge_base_ids=("kb",)))
    cm.state.merge_result = [result("1", "X is a thing", title="Doc")]
    assert run_plugin(cm) is None
    assert cm.state.rendered_contexts == render_passages(cm.state.merge_result)
    assert "Question: What is X?" in cm.state.user_content
    assert '<context id="1">X is a thing</context>' in cm.state.user_content


def test_plugin_rejects_invalid_query(make_request):
    cm = ChatManage.start(make_request(query="<script>x</script>"))
    error = run_plugin(cm)
    assert error is not None
    assert error.error_type == "template_execution_failed"
    assert error.cause == "user query contains invalid content"
    assert cm.state.user_content == ""


def test_plugin_without_retrieval_renders_no_contexts(make_request):
    cm = ChatManage.start(make_request(query="hello"))
    cm.state.intent = "greeting"
    cm.state.merge_result = [result("1", "should not appear")]
    assert run_plugin(cm, "default") is None
    assert cm.state.rendered_contexts == ""
    assert cm.state.user_content == "hello"
