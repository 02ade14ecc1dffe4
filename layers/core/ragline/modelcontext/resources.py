"""Storage handles in what the model reads, aliased as ``res://NNNN`` both ways.

Chunks can carry storage URLs (``resource://``, ``s3://``, ``minio://`` …): long, meaningless to a model,
and internal. The model sees ``res://0001``; an alias it writes back is expanded to the original URL, and
an alias it invents is dropped (fail closed, as for citations).
"""

from __future__ import annotations

import re

STORAGE_URL = re.compile(r"\b(?:resource|storage|local|minio|cos|tos|s3|oss|ks3|obs)://[^\s)\]\"'<>]+", re.IGNORECASE)
ALIAS = re.compile(r"res://(\d{4,})")
ALIAS_PREFIX = "res://"
ALIAS_DIGITS = 4
# Longer than any alias a turn can produce (res:// and up to 26 digits): older text is never held back.
MAX_ALIAS_CHARS = 32


class ResourceAliases:
    """One turn's storage URLs and their ``res://NNNN`` aliases, both ways."""

    def __init__(self) -> None:
        """No aliases yet."""
        self._by_url: dict[str, str] = {}
        self._by_alias: dict[str, str] = {}

    def alias(self, url: str) -> str:
        """The alias of ``url``, made on first sight (``res://0001``, ``res://0002``, …)."""
        existing = self._by_url.get(url)
        if existing is not None:
            return existing
        alias = f"{ALIAS_PREFIX}{len(self._by_url) + 1:0{ALIAS_DIGITS}d}"
        self._by_url[url] = alias
        self._by_alias[alias] = url
        return alias

    def encode(self, text: str) -> str:
        """Storage URLs → ``res://NNNN`` (the same URL always gets the same alias)."""
        return STORAGE_URL.sub(lambda m: self.alias(m.group(0)), text)

    def decode(self, text: str) -> str:
        """``res://NNNN`` → the URL it stands for; unknown aliases vanish."""
        return ALIAS.sub(lambda m: self._by_alias.get(m.group(0), ""), text)


def held_alias_start(text: str) -> int | None:
    """Where a possibly unfinished ``res://`` alias starts at the end of ``text`` (a stream must hold it)."""
    position = text.rfind("r")
    while position >= 0 and len(text) - position <= MAX_ALIAS_CHARS:
        tail = text[position:]
        if ALIAS_PREFIX.startswith(tail) or (tail.startswith(ALIAS_PREFIX) and tail[len(ALIAS_PREFIX) :].isdigit()):
            return position
        position = text.rfind("r", 0, position)
    return None
