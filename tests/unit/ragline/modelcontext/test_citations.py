import random
import re
import zlib

import pytest

from ragline.modelcontext.citations import StreamDecoder, expand_text
from ragline.modelcontext.registry import SourceRegistry
from ragline.types import SearchResult

KB1 = '<kb doc="Handbook" chunk_id="chunk-uuid-1" kb_id="kb-uuid" />'
KB2 = '<kb doc="Guide" chunk_id="chunk-uuid-2" />'
WEB1 = '<web url="https://example.com/a" title="Example" />'


def make_registry(citations_enabled: bool = True) -> SourceRegistry:
    registry = SourceRegistry(citations_enabled=citations_enabled)
    registry.register_chunk(
        SearchResult(id="chunk-uuid-1", content="x", knowledge_title="Handbook", knowledge_base_id="kb-uuid")
    )
    registry.register_chunk(SearchResult(id="chunk-uuid-2", content="y", knowledge_title="Guide"))
    registry.register_web("https://example.com/a#section", "Example")
    registry.register_document("doc-1")
    registry.register_knowledge_base("kb-uuid")
    return registry


REGISTRY = make_registry()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('Claim.<ref id="c1"/>', f"Claim.{KB1}"),
        ('Claim <ref id="c2" />', f"Claim {KB2}"),
        ('Web <ref id="w1"/> fact', f"Web {WEB1} fact"),
        ('Upper <REF ID="C1"/>', f"Upper {KB1}"),
        ('Spaced <ref  id = "c1" >', f"Spaced {KB1}"),
        ('Two <ref id="c1"/><ref id="w1"/>.', f"Two {KB1}{WEB1}."),
        ('Newline <ref\nid="c2"/>', f"Newline {KB2}"),
    ],
)
def test_known_aliases_expand(text, expected):
    assert expand_text(text, REGISTRY) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('Unknown <ref id="c999"/> gone', "Unknown  gone"),
        ('Doc <ref id="d1"/> gone', "Doc  gone"),
        ('Base <ref id="b1"/> gone', "Base  gone"),
        ("Single <ref id='c1'/> gone", "Single  gone"),
        ('Raw id <ref id="chunk-uuid-1"/> gone', "Raw id  gone"),
        ("No id <ref/> gone", "No id  gone"),
        ("Closing </ref> gone", "Closing  gone"),
        ('Unterminated at end <ref id="c1"', "Unterminated at end "),
        ("Bare at end <ref", "Bare at end "),
        ('Model kb <kb doc="Forged" chunk_id="evil" /> gone', "Model kb  gone"),
        ('Model web <web url="https://evil.example" title="x"/> gone', "Model web  gone"),
        ("Paired <kb>inner</kb> tags", "Paired inner tags"),
        ("Unterminated kb <kb doc='x' and more text", "Unterminated kb "),
        ('Empty id <ref id=""/>', "Empty id "),
    ],
)
def test_everything_else_vanishes(text, expected):
    assert expand_text(text, REGISTRY) == expected


@pytest.mark.parametrize(
    "text",
    [
        "a < b and c > d",
        "<b>bold</b> <reference> <kbd>x</kbd> <webpage>",
        "x <= y, 3<4",
        "no tags at all",
        "ends with <",
        "ends with <r",
        "中文文本",
    ],
)
def test_ordinary_text_and_other_tags_are_kept(text):
    assert expand_text(text, REGISTRY) == text


def test_citations_disabled_removes_every_ref():
    registry = make_registry(citations_enabled=False)
    text = 'A <ref id="c1"/> B <ref id="w1"/> C <ref id="c999"/> D <kb doc="x"/> E <b>ok</b>'
    assert expand_text(text, registry) == "A  B  C  D  E <b>ok</b>"


def test_expanded_output_never_contains_refs_or_unregistered_sources():
    rng = random.Random(2024)
    pieces = ['<ref id="c1"/>', '<ref id="c7"/>', '<kb doc="evil"/>', "text ", "<", ">", '<web url="x">', " "]
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        out = expand_text(text, REGISTRY)
        assert "<ref" not in out.lower()
        assert "evil" not in out
        assert '<web url="x">' not in out


# Streaming ------------------------------------------------------------------------------------------------

STREAM_TEXTS = [
    'Hello <ref id="c1"/> world <ref id="w1"/>.',
    'A <ref id="c999"/> B <ref id="d1"/> C <ref id=\'c1\'/> D <kb doc="x"/> E <web url="y"/> F <ref id="c2">',
    'a<b>c<ref id="C1" /> x < y <= z <reference> <kbd> <webby> </ref> </kb> <ref',
    '<<ref id="c1"/>><ref id="c1"/<ref id="w1"/>',
    'text <ref  id = "c1" > more <ref id="b1"/> <REF ID="W1"/> trailing <we',
    "<",
    "x<r",
    'x<ref id="c1"',
    '<ref\nid="c1"/>',
    "a <kb\n foo",
    "<web>",
    "plain text no tags",
    '中文<ref id="c1"/>测试<ref id="w1"/>。',
    '<ref id="c1"/><ref id="c2"/><ref id="w1"/>',
    "",
    "<<<<",
    '<ref id="c1"/',
    'text then <kb doc="Forged" chunk_id="1"',
]


def decode_pieces(pieces: list[str], registry: SourceRegistry = REGISTRY) -> str:
    decoder = StreamDecoder(registry)
    return "".join(decoder.feed(piece) for piece in pieces) + decoder.flush()


@pytest.mark.parametrize("text", STREAM_TEXTS)
def test_stream_split_at_every_position_equals_expand_text(text):
    whole = expand_text(text, REGISTRY)
    for cut in range(len(text) + 1):
        assert decode_pieces([text[:cut], text[cut:]]) == whole, cut


@pytest.mark.parametrize("text", STREAM_TEXTS)
def test_stream_split_at_every_pair_of_positions(text):
    whole = expand_text(text, REGISTRY)
    for first in range(len(text) + 1):
        for second in range(first, len(text) + 1):
            assert decode_pieces([text[:first], text[first:second], text[second:]]) == whole, (first, second)


@pytest.mark.parametrize("text", STREAM_TEXTS)
def test_stream_char_by_char_equals_expand_text(text):
    assert decode_pieces(list(text)) == expand_text(text, REGISTRY)


def random_split(text: str, rng: random.Random) -> list[str]:
    pieces = []
    position = 0
    while position < len(text):
        size = rng.randint(0, 6)  # empty pieces too
        pieces.append(text[position : position + size])
        position += size
    return pieces


@pytest.mark.parametrize("citations_enabled", [True, False])
def test_stream_random_texts_random_pieces(citations_enabled):
    registry = make_registry(citations_enabled)
    rng = random.Random(12345)
    alphabet = ["<", ">", "/", '"', "'", " ", "ref", "kb", "web", "id", "=", "c1", "w1", "c9", "a", "\n", "REF", "中"]
    for _ in range(1500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        whole = expand_text(text, registry)
        for _ in range(4):
            assert decode_pieces(random_split(text, rng), registry) == whole, text


@pytest.mark.parametrize("text", STREAM_TEXTS)
def test_stream_random_pieces_of_known_texts(text):
    rng = random.Random(zlib.crc32(text.encode()))
    whole = expand_text(text, REGISTRY)
    for _ in range(50):
        assert decode_pieces(random_split(text, rng)) == whole


def test_decoder_releases_text_before_a_tag_immediately():
    decoder = StreamDecoder(REGISTRY)
    assert decoder.feed("Hello ") == "Hello "
    assert decoder.feed("world <re") == "world "
    assert decoder.feed('f id="c1"') == ""
    assert decoder.feed("/> done") == f"{KB1} done"
    assert decoder.flush() == ""


def test_decoder_releases_a_lone_angle_bracket_once_it_cannot_be_a_tag():
    decoder = StreamDecoder(REGISTRY)
    assert decoder.feed("a <") == "a "
    assert decoder.feed(" b") == "< b"


def test_decoder_flush_drops_a_partial_tag():
    decoder = StreamDecoder(REGISTRY)
    assert decoder.feed('Text <ref id="c1"') == "Text "
    assert decoder.flush() == ""
    assert decoder.flush() == ""


def _merged_registry() -> SourceRegistry:
    """c1 is a passage merge made of three stored chunks; citations of it name the chunk of the claim."""
    from ragline.modelcontext.registry import ChunkPart

    registry = SourceRegistry()
    registry.register_chunk(
        SearchResult(id="first", content="A. B. C.", knowledge_title="Guide", knowledge_base_id="kb")
    )
    registry.set_parts(
        "first",
        [
            ChunkPart("first", "Every answer is written to a log."),
            ChunkPart("second", "To resume, send the Last-Event-ID header with the last sequence number."),
            ChunkPart("third", "A ping comment keeps idle connections open."),
        ],
    )
    return registry


def test_a_citation_of_a_merged_passage_names_the_chunk_holding_its_claim():
    registry = _merged_registry()
    text = (
        'To resume, send the Last-Event-ID header with the last sequence number.<ref id="c1"/> '
        'Idle connections stay open thanks to a ping comment.<ref id="c1"/> And a log.<ref id="c1"/>'
    )
    expanded = expand_text(text, registry)
    assert re.findall(r'chunk_id="([^"]+)"', expanded) == ["second", "third", "first"]


def test_merged_passage_citations_decode_the_same_wherever_the_stream_is_split():
    registry = _merged_registry()
    text = (
        'To resume, send the Last-Event-ID header with the last sequence number.<ref id="c1"/>'
        '<ref id="c1"/> A ping comment keeps idle connections open. <ref id="c1"/>'
    )
    whole = expand_text(text, registry)
    rng = random.Random(7)
    for _ in range(50):
        cuts = sorted(rng.sample(range(1, len(text)), 6))
        decoder = StreamDecoder(registry)
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        assert "".join(decoder.feed(p) for p in pieces) + decoder.flush() == whole
    assert re.findall(r'chunk_id="([^"]+)"', whole) == ["second", "second", "third"]
