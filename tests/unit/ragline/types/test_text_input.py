"""Names and questions refuse NUL, control and bidi override characters; uploaded files keep a safe base name."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from ragline.types.text import MAX_FILENAME_BYTES, PlainName, PlainText, forbidden_characters, safe_filename


class Named(BaseModel):
    name: PlainName = ""
    text: PlainText = ""


@pytest.mark.parametrize(
    "bad", ["a\x00b", "\u202eevil", "x\u2066y", "tab\there", "line\nbreak", "\x1b[31mred", "del\x7f", "c1\x85"]
)
def test_names_refuse_control_and_bidi_characters(bad):
    with pytest.raises(ValidationError) as caught:
        Named(name=bad)
    assert caught.value.errors()[0]["loc"] == ("name",)


@pytest.mark.parametrize("bad", ["a\x00b", "\u202eevil", "x\u2069y", "\x1b[2J"])
def test_free_text_refuses_nul_controls_and_bidi_but_keeps_line_breaks(bad):
    with pytest.raises(ValidationError):
        Named(text=bad)
    assert Named(text="two\nlines\tand a tab\r\n").text == "two\nlines\tand a tab\r\n"


@pytest.mark.parametrize(
    "good", ["Handbook", "手册", "دليل المستخدم", "עברית\u200f", "Zoë's notes", "emoji 📘", "a" * 200]
)
def test_real_names_in_any_script_are_accepted(good):
    assert Named(name=good).name == good


def test_forbidden_characters_names_the_character():
    assert forbidden_characters("a\x00", allow_line_breaks=True) == "a NUL character"
    assert forbidden_characters("\u202e", allow_line_breaks=True) == "a bidirectional control character (U+202E)"
    assert forbidden_characters("ok\n", allow_line_breaks=True) is None
    assert forbidden_characters("ok\n", allow_line_breaks=False) == "a control character (U+000A)"


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        ("../../etc/passwd", "passwd"),
        ("..\\..\\windows\\system32\\cmd.exe", "cmd.exe"),
        ("/abs/path/notes.md", "notes.md"),
        ("notes.md", "notes.md"),
        ("..", "upload"),
        ("", "upload"),
        (None, "upload"),
        (".hidden", "hidden"),
        ("../.env", "env"),
        ("report\u202egpj.exe", "reportgpj.exe"),
        ("nul\x00byte.txt", "nulbyte.txt"),
        ('what?<is>:"this"|*.md', "what__is___this___.md"),
        ("  spaced   out  .md", "spaced out .md"),
        ("手册.pdf", "手册.pdf"),
    ],
)
def test_uploaded_filenames_keep_a_safe_base_name(sent, stored):
    assert safe_filename(sent) == stored


def test_long_filenames_are_cut_to_255_bytes_keeping_the_extension():
    name = safe_filename("字" * 200 + ".pdf")
    assert len(name.encode("utf-8")) <= MAX_FILENAME_BYTES
    assert name.endswith(".pdf")
    assert safe_filename("x" * 1000).startswith("x")
    assert len(safe_filename("x" * 1000).encode()) == MAX_FILENAME_BYTES
