"""``image_info`` of merged passages: the union of both lists, one entry per image URL."""

from __future__ import annotations

import json
from typing import Any

URL_KEY = "url"


def _entries(raw: str) -> list[Any] | None:
    """The JSON list in ``raw``; None when it is not one (a damaged value is left alone, not guessed at)."""
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, list) else None


def merge_image_info(target: str, source: str) -> str:
    """``source``'s images added to ``target``'s, first occurrence of each URL kept, order preserved.

    Best effort: when ``source`` cannot be read ``target`` is kept, and when only ``target`` cannot be
    read ``source`` replaces it, so a merge never fails over a damaged image list.
    """
    if not source:
        return target
    source_entries = _entries(source)
    if source_entries is None:
        return target
    target_entries = _entries(target) if target else []
    if target_entries is None:
        return source
    seen: set[str] = set()
    merged: list[Any] = []
    for entry in (*target_entries, *source_entries):
        url = entry.get(URL_KEY) if isinstance(entry, dict) else None
        if not isinstance(url, str) or not url or url in seen:
            continue
        seen.add(url)
        merged.append(entry)
    return json.dumps(merged, ensure_ascii=False)
