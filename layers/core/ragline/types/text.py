"""Text a client sends: what is refused in names and questions, and what an uploaded file may be called.

- NUL and the other control characters (except tab and line breaks in free text) break stores, logs and
  terminals; the bidirectional embedding, override and isolate controls (U+202A–U+202E, U+2066–U+2069)
  make a name display as something else ("Trojan Source"). Both are refused, naming the field (422).
  Right-to-left text itself, and the invisible left/right marks it may need, are accepted.
- An uploaded file keeps only a safe base name: no directories (``../../etc/passwd`` → ``passwd``), no
  control or bidi characters, no characters a file system refuses, at most 255 bytes, never hidden.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated

from pydantic import AfterValidator

BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_LINE_BREAKS = frozenset("\t\n\r")
_UNSAFE_IN_FILENAMES = re.compile(r'[<>:"|?*\\/]')
MAX_FILENAME_BYTES = 255


def _is_control(char: str) -> bool:
    return unicodedata.category(char) == "Cc"


def forbidden_characters(value: str, *, allow_line_breaks: bool) -> str | None:
    """A description of the first refused character of ``value``, or None when there is none."""
    for char in value:
        if char in BIDI_CONTROLS:
            return f"a bidirectional control character (U+{ord(char):04X})"
        if _is_control(char) and not (allow_line_breaks and char in _LINE_BREAKS):
            return "a NUL character" if char == "\x00" else f"a control character (U+{ord(char):04X})"
    return None


def _checked(allow_line_breaks: bool) -> AfterValidator:
    def check(value: str) -> str:
        found = forbidden_characters(value, allow_line_breaks=allow_line_breaks)
        if found is not None:
            raise ValueError(f"must not contain {found}")
        return value

    return AfterValidator(check)


# A name or title (one line): no control or bidi characters at all.
PlainName = Annotated[str, _checked(allow_line_breaks=False)]
# Free text (a question, a description): tabs and line breaks allowed, other controls and bidi refused.
PlainText = Annotated[str, _checked(allow_line_breaks=True)]


def safe_filename(name: str | None, default: str = "upload") -> str:
    """The base name of an uploaded file's name, safe to store and to show."""
    base = (name or "").replace("\\", "/").rsplit("/", 1)[-1]
    base = "".join(c for c in base if c not in BIDI_CONTROLS and not _is_control(c))
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
