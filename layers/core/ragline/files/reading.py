"""What every file parser shares: text decoding, and the refusals that become 415/422 replies.

Ingestion's extractors (:mod:`ragline.ingest.extract`) and the table parser (:mod:`ragline.tables.parse`) both raise
these, so the routes answer a refused file the same way whichever parser read it.
"""

from __future__ import annotations


class UnsupportedFile(ValueError):
    """The file's content cannot be ingested (no text layer, not text, unreadable)."""


class NoText(UnsupportedFile):
    """The file was read but has no text (a scan, a deck of pictures): its images may still have some."""


class UnsupportedFileType(UnsupportedFile):
    """The file's type is not one ragline reads (here: HTTP 415)."""


def require_parser(module: str, file_kind: str) -> None:
    """Refuse a file type whose parser this installation leaves out, naming the type and why.

    A file type whose parser this installation leaves out (a slimmed install, or a Lambda layer held to its size limit)
    is refused as a type, naming the type and why, instead of failing as an internal error.
    """
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise UnsupportedFileType(
            f"{file_kind} files are not accepted by this deployment: their parser ({module}) is not installed "
            "here; upload the text instead, or install it"
        )


def decode_text(raw: bytes) -> str:
    """Bytes as text (UTF-8, with or without BOM, or UTF-16); :class:`UnsupportedFile` for anything else."""
    for encoding in ("utf-8-sig", "utf-16"):
        try:
            text = raw.decode(encoding)
            if "\x00" not in text:
                return text
        except UnicodeDecodeError:
            continue
    raise UnsupportedFile("file is not UTF-8 or UTF-16 text")
