"""A real SSE client for tests (httpx + httpx-sse)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import httpx
from httpx_sse import connect_sse


@dataclass
class Frame:
    id: int
    data: dict[str, Any]

    @property
    def type(self) -> str:
        return str(self.data["response_type"])

    @property
    def content(self) -> str:
        return str(self.data.get("content", ""))

    @property
    def done(self) -> bool:
        return bool(self.data.get("done"))

    @property
    def extra(self) -> dict[str, Any]:
        return dict(self.data.get("data") or {})


def read_frames(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    limit: int | None = None,
    headers: dict[str, str] | None = None,
    **kwargs: Any,
) -> list[Frame]:
    """Frames until the server ends the stream, or the first ``limit`` frames (then disconnect)."""
    frames: list[Frame] = []
    with connect_sse(client, method, url, headers=dict(headers or {}), **kwargs) as source:
        source.response.raise_for_status()
        for event in source.iter_sse():
            if not event.data:
                # A ``: ping`` comment: httpx-sse reports it as an empty event once an id has been seen.
                continue
            frames.append(Frame(int(event.id), json.loads(event.data)))
            if limit is not None and len(frames) >= limit:
                break
    return frames


def answer_text(frames: list[Frame]) -> str:
    return "".join(f.content for f in frames if f.type == "answer")


def joined_runs(frames: Iterable[tuple[str, str, bool]]) -> list[tuple[str, str, bool]]:
    """What a client makes of frames given as (type, content, done): consecutive chunks of one answer joined.

    A read that catches up gets the chunks already in the log joined into one frame (``coalesce``), a live read gets
    them one by one: two reads of one log compare alike only so.
    """
    runs: list[list[Any]] = []
    for kind, content, done in frames:
        if runs and not done and not runs[-1][2] and kind == runs[-1][0] and kind in {"answer", "thinking"}:
            runs[-1][1] += content
        else:
            runs.append([kind, content, done])
    return [(kind, content, done) for kind, content, done in runs]
