import json
import random

import pytest

from ragline.understanding.parse import (
    OCR_SEPARATOR,
    Understanding,
    decode_json_string,
    merge_description_and_ocr,
    parse_understanding,
)


def ok(rewrite: str = "", intent: str = "", description: str = "") -> Understanding:
    return Understanding(rewrite_query=rewrite, intent=intent, image_description=description, parsed=True)


NOT_PARSED = Understanding()


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        # Plain JSON, trimmed values, normalised intent.
        ('{"rewrite_query":"rewritten query","intent":"summarize"}', ok("rewritten query", "summarize")),
        (
            '{"rewrite_query":" 改写后的问题 ","intent":"chitchat","image_description":" 一只猫 "}',
            ok("改写后的问题", "chitchat", "一只猫"),
        ),
        ('  {"intent":"greeting"}  ', ok(intent="greeting")),
        ('{"rewrite_query":"q","intent":"KB-Search"}', ok("q", "kb_search")),
        ('{"rewrite_query":"q","intent":" Web Search "}', ok("q", "web_search")),
        ('{"rewrite_query":"q","intent":"follow-up"}', ok("q", "follow_up")),
        ('{"rewrite_query":"q","intent":"weather"}', ok("q", "")),
        # Rewrite aliases, in preference order.
        ('{"query":"alt query key"}', ok("alt query key")),
        ('{"question":"question key","intent":"follow_up"}', ok("question key", "follow_up")),
        ('{"rewritten_query":"rewritten key"}', ok("rewritten key")),
        ('{"question":"fourth","query":"third","rewritten_query":"second","rewrite_query":"first"}', ok("first")),
        ('{"rewrite_query":"  ","query":"next non-blank alias"}', ok("next non-blank alias")),
        # Description aliases, OCR aliases and their merge.
        ('{"image_desc":"desc only"}', ok(description="desc only")),
        ('{"ocr_text":"pure ocr"}', ok(description="pure ocr")),
        ('{"image_text":"img text","ocr":"ocr body"}', ok(description="img text\n\n[OCR]\nocr body")),
        ('{"description":"plain desc","full_ocr":"full"}', ok(description="plain desc\n\n[OCR]\nfull")),
        (
            '{"image_description":"already contains ocr body","ocr":"ocr body"}',
            ok(description="already contains ocr body"),
        ),
        (
            '{"image_description":"A","image_ocr_text":"B","image_ocr":"C","ocr_content":"D"}',
            ok(description="A\n\n[OCR]\nC"),
        ),
        ('{"image_ocr_text":"B","ocr_content":"D"}', ok(description="B\n\n[OCR]\nD")),
        # Fences and prose around the object.
        ('```json\n{"rewrite_query":"fenced","intent":"kb_search"}\n```', ok("fenced", "kb_search")),
        ('```\n{"rewrite_query":"bare fence"}\n```', ok("bare fence")),
        (
            'Here is the result: {"rewrite_query":"wrapped","intent":"doc_only"} hope it helps',
            ok("wrapped", "doc_only"),
        ),
        ('[{"rewrite_query":"inside a list"}]', ok("inside a list")),
        ('{"rewrite_query":"nested","extra":{"a":[1,2,{"b":"}"}]}}', ok("nested")),
        # Valid objects without usable fields are still parsed: the intent becomes empty (search).
        ('{"rewrite_query":123,"intent":456}', ok()),
        ('{"unknown_key":"value"}', ok()),
        ('{"rewrite_query":null,"intent":["greeting"],"image_description":{"x":"y"}}', ok()),
        ("{}", ok()),
        # Unicode escapes and surrogates.
        ('{"rewrite_query":"caf\\u00e9 \\ud83d\\ude00"}', ok("café 😀")),
        ('{"rewrite_query":"lone \\ud83d half"}', ok("lone  half")),
        # Nothing readable.
        ("not json at all", NOT_PARSED),
        ("The answer is: check the admin console", NOT_PARSED),
        ("   \n\t  ", NOT_PARSED),
        ("", NOT_PARSED),
        ('"just a string"', NOT_PARSED),
        ("42", NOT_PARSED),
        ("} backwards {", NOT_PARSED),
        ('The user wrote "query": "x" in prose', NOT_PARSED),
        ("[" * 100_000, NOT_PARSED),
    ],
)
def test_complete_replies(reply, expected):
    assert parse_understanding(reply) == expected


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        # Closed fields survive the cut; an unclosed rewrite or intent is dropped.
        ('{"rewrite_query":"What is X?","intent":"kb_se', ok("What is X?", "")),
        (
            '{"rewrite_query":"What is X?","intent":"greeting","image_description":"A red',
            ok("What is X?", "greeting", "A red"),
        ),
        ('{"rewrite_query":"What is X?","intent":"greeting",', ok("What is X?", "greeting")),
        ('{"rewrite_query":"What is X?"', ok("What is X?")),
        ('{"rewrite_query":"What is', NOT_PARSED),
        ('{"rewrite_query":', NOT_PARSED),
        ("{", NOT_PARSED),
        ('{"foo":"bar","baz":"qu', NOT_PARSED),
        # Every image_* field and "description" may stay unclosed; OCR fields outside image_* may not.
        ('{"intent":"image_only","description":"a chart of', ok(intent="image_only", description="a chart of")),
        ('{"image_desc":"a cat","image_ocr":"HELLO WOR', ok(description="a cat" + OCR_SEPARATOR + "HELLO WOR")),
        ('{"image_desc":"a cat","ocr_text":"HELLO WOR', ok(description="a cat")),
        ('{"image_text":"sign","ocr":"STOP"', ok(description="sign" + OCR_SEPARATOR + "STOP")),
        # Inside a fence, and with text before the object.
        ('```json\n{"rewrite_query":"fenced","intent":"summ', ok("fenced")),
        ('Sure! {"rewrite_query":"after prose","image_description":"x', ok("after prose", description="x")),
        # Escapes: decoded when complete, dropped when the cut falls inside one.
        (
            '{"rewrite_query":"say \\"hi\\"\\nnow","intent":"chitchat","image_description":"tab\\tend\\',
            ok('say "hi"\nnow', "chitchat", "tab\tend"),
        ),
        ('{"rewrite_query":"q","image_description":"caf\\u00', ok("q", description="caf")),
        ('{"rewrite_query":"q","image_description":"smile \\ud83d', ok("q", description="smile")),
        ('{"rewrite_query":"q","image_description":"smile \\ud83d\\ude0', ok("q", description="smile")),
        ('{"rewrite_query":"q","image_description":"smile \\ud83d\\ude00', ok("q", description="smile 😀")),
        # Braces inside a value make the first-{-to-last-} slice invalid; field recovery still works.
        ('{"rewrite_query":"q","image_description":"code {x} and more', ok("q", description="code {x} and more")),
        # A raw newline inside a value (invalid JSON) is still read.
        ('{"rewrite_query":"two\nlines","intent":"kb_search"', ok("two\nlines", "kb_search")),
        # The first occurrence of a repeated key wins.
        ('{"rewrite_query":"first","rewrite_query":"second","intent":"gr', ok("first")),
        # Upper-case keys are not JSON-ish field names for the recovery pattern.
        ('{"Rewrite_Query":"x","intent":"greeting","image_description":"y', ok(intent="greeting", description="y")),
    ],
)
def test_truncated_replies(reply, expected):
    assert parse_understanding(reply) == expected


@pytest.mark.parametrize(
    ("description", "ocr", "expected"),
    [
        ("", "", ""),
        ("desc", "", "desc"),
        ("", "ocr", "ocr"),
        ("desc", "ocr", "desc\n\n[OCR]\nocr"),
        ("a sign saying STOP", "STOP", "a sign saying STOP"),
    ],
)
def test_merge_description_and_ocr(description, ocr, expected):
    assert merge_description_and_ocr(description, ocr) == expected


@pytest.mark.parametrize(
    ("raw", "complete", "expected"),
    [
        ("plain", True, "plain"),
        ('a\\"b\\\\c\\/d\\n\\t\\r\\b\\f', True, 'a"b\\c/d\n\t\r\b\f'),
        ("\\u00e9", True, "é"),
        ("bad \\x escape", True, "bad x escape"),
        ("short \\u12 escape", True, "short u12 escape"),
        ("cut \\u12", False, "cut "),
        ("cut \\u", False, "cut "),
        ("\\ud83d\\ude00 pair", True, "😀 pair"),
        ("\\ud83d\\ude00 pair \\x", True, "😀 pair x"),
        ("lone \\udc00 low", True, "lone  low"),
    ],
)
def test_decode_json_string(raw, complete, expected):
    assert decode_json_string(raw, complete) == expected


# Cutting at every position ----------------------------------------------------------------------------------

LONG_DESCRIPTION = (
    'A screenshot of a terminal titled "deploy {prod}" showing a failed build.\n'
    "Line 3 reads: ERROR \\ missing key café — retry 😀. Braces {} and brackets [] appear too."
)
LONG_OCR = "$ make deploy\nERROR: missing key 'region'\nexit status 2"
LONG_REPLIES = [
    json.dumps(
        {
            "rewrite_query": "Why does the prod deploy fail with a missing key error?",
            "intent": "kb_search",
            "image_description": LONG_DESCRIPTION,
            "ocr_text": LONG_OCR,
        }
    ),
    json.dumps(
        {
            "rewrite_query": "Why does the prod deploy fail with a missing key error?",
            "intent": "Image-Only",
            "image_description": LONG_DESCRIPTION,
            "image_ocr": LONG_OCR,
        },
        ensure_ascii=False,
        indent=2,
    ),
    "```json\n"
    + json.dumps({"query": 'what does "it" refer to?', "intent": "follow_up", "description": LONG_DESCRIPTION})
    + "\n```",
]


@pytest.mark.parametrize("reply", LONG_REPLIES)
def test_cut_at_every_position_never_raises_and_keeps_only_trustworthy_fields(reply):
    full = parse_understanding(reply)
    assert full.parsed
    assert full.rewrite_query
    assert full.image_description
    for cut in range(len(reply) + 1):
        prefix = reply[:cut]
        result = parse_understanding(prefix)
        if not result.parsed:
            assert result == NOT_PARSED, cut
            continue
        # A rewrite or an intent is all or nothing: never a half-written question or label.
        assert result.rewrite_query in ("", full.rewrite_query), (cut, result)
        assert result.intent in ("", full.intent), (cut, result)
        # An image description may be cut, but only ever to a prefix of the real one.
        assert full.image_description.startswith(result.image_description), (cut, result)


@pytest.mark.parametrize("reply", LONG_REPLIES)
def test_cut_after_a_closed_field_keeps_it(reply):
    full = parse_understanding(reply)
    rewrite_closed = _closing_position(reply, full.rewrite_query)
    for cut in range(rewrite_closed, len(reply) + 1):
        assert parse_understanding(reply[:cut]).rewrite_query == full.rewrite_query, cut


def _closing_position(reply: str, value: str) -> int:
    """Where the JSON-encoded ``value`` ends in ``reply`` (just past its closing quote)."""
    encoded = json.dumps(value, ensure_ascii="\\u" in reply)
    position = reply.find(encoded)
    assert position >= 0
    return position + len(encoded)


def test_mangled_replies_never_raise():
    generator = random.Random(20240601)
    alphabet = '{}[]":,\\u0123456789abcdef nrt\n'
    for reply in LONG_REPLIES:
        for _ in range(400):
            chars = list(reply)
            for _ in range(generator.randint(1, 6)):
                position = generator.randrange(len(chars))
                action = generator.choice(("delete", "insert", "replace"))
                if action == "delete":
                    del chars[position]
                elif action == "insert":
                    chars.insert(position, generator.choice(alphabet))
                else:
                    chars[position] = generator.choice(alphabet)
            result = parse_understanding("".join(chars))
            assert isinstance(result, Understanding)
            # Whatever was read must be storable as UTF-8.
            for text in (result.rewrite_query, result.intent, result.image_description):
                text.encode("utf-8")
