"""Text a client sends: what is refused in names and questions, and what an uploaded file may be called.

- NUL and the other control characters (except tab and line breaks in free text) break stores, logs and
  terminals; a byte order mark (U+FEFF) is invisible and makes two equal-looking names differ (names only); the bidirectional embedding, override and isolate controls (U+202A–U+202E, U+2066–U+2069)
  make a name display as something else ("Trojan Source"). Both are refused, naming the field (422).
  Right-to-left text itself, and the invisible left/right marks it may need, are accepted.
- An uploaded file keeps only a safe base name: no directories (``../../etc/passwd`` → ``passwd``), no
  control or bidi characters, no characters a file system refuses, at most 255 bytes, never hidden.
- Every text field has a length limit, checked before its characters are (pydantic checks ``max_length`` in
  its core, before any validator reads the text), and the characters are read by one regular expression, not
  one Python call per character: a 19 MB question kept the event loop busy for 15 s.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated

from pydantic import AfterValidator, Field

BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# Unicode's control characters (category Cc: U+0000-U+001F, U+007F-U+009F) and the bidi controls, with and
# without the tab and line breaks that free text may hold.
_REFUSED_IN_NAMES = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ufeff]")
_REFUSED_IN_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

# The longest values fields of each kind take (a request is refused 422 naming the field past them). The
# operator's limits (``limits`` in config.yaml: the question's length, the bodies' sizes) are within these.
MAX_ID_CHARS = 256  # an id, a model id, a timestamp, a short code
MAX_NAME_CHARS = 500  # a name or a title
MAX_TEXT_CHARS = 65_536  # free text: a question, a description, an answer
MAX_DOCUMENT_CHARS = 20 * 1024 * 1024  # a document's whole text (the upload limit bounds it too)
MAX_LIST_ITEMS = 1000  # ids in one request
_UNSAFE_IN_FILENAMES = re.compile(r'[<>:"|?*\\/]')
MAX_FILENAME_BYTES = 255


def forbidden_characters(value: str, *, allow_line_breaks: bool) -> str | None:
    """A description of the first refused character of ``value``, or None when there is none."""
    found = (_REFUSED_IN_TEXT if allow_line_breaks else _REFUSED_IN_NAMES).search(value)
    if found is None:
        return None
    char = found.group()
    if char in BIDI_CONTROLS:
        return f"a bidirectional control character (U+{ord(char):04X})"
    if char == "\ufeff":
        return "a byte order mark (U+FEFF)"
    return "a NUL character" if char == "\x00" else f"a control character (U+{ord(char):04X})"


def _checked(allow_line_breaks: bool) -> AfterValidator:
    def check(value: str) -> str:
        # The field's own limit may be checked after this (an optional field's is): a huge value is refused by
        # its length alone, its characters unread.
        if len(value) > MAX_TEXT_CHARS:
            raise ValueError(f"must be at most {MAX_TEXT_CHARS} characters")
        found = forbidden_characters(value, allow_line_breaks=allow_line_breaks)
        if found is not None:
            raise ValueError(f"must not contain {found}")
        return value

    return AfterValidator(check)


# A name or title (one line): no control or bidi characters at all. Give the field its own max_length.
PlainName = Annotated[str, _checked(allow_line_breaks=False)]
# Free text (a question, a description): tabs and line breaks allowed, other controls and bidi refused. Give the
# field its own max_length (a limit inside this type would override the field's).
PlainText = Annotated[str, _checked(allow_line_breaks=True)]
# A name inside a list or a map (a tag), where no field limit applies: at most MAX_NAME_CHARS.
ItemName = Annotated[str, Field(max_length=MAX_NAME_CHARS), _checked(allow_line_breaks=False)]
# An id or a short code a client sends (a knowledge base's id, a model id, a kind).
Identifier = Annotated[str, Field(max_length=MAX_ID_CHARS)]
# Ids a request names, at most MAX_LIST_ITEMS.
IdList = Annotated[list[Identifier], Field(max_length=MAX_LIST_ITEMS)]


def safe_filename(name: str | None, default: str = "upload") -> str:
    """The base name of an uploaded file's name, safe to store and to show."""
    base = (name or "").replace("\\", "/").rsplit("/", 1)[-1]
    base = _REFUSED_IN_NAMES.sub("", base)
    base = _UNSAFE_IN_FILENAMES.sub("_", unicodedata.normalize("NFC", base))
    base = " ".join(base.split()).lstrip(". ").rstrip(" ")
    if not base or base in {".", ".."}:
        return default
    if len(base.encode("utf-8")) > MAX_FILENAME_BYTES:
        stem, dot, extension = base.rpartition(".")
        if not dot or len(extension) > 16:
            stem, extension = base, ""
        suffix = f".{extension}" if extension else ""
        budget = MAX_FILENAME_BYTES - len(suffix.encode("utf-8"))
        stem = stem.encode("utf-8")[:budget].decode("utf-8", errors="ignore")
        base = stem + suffix
    return base
