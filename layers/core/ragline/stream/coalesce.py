"""Replay coalescing: one frame per run of incremental chunks instead of thousands of tiny ones."""

from __future__ import annotations

from ragline.types import StreamEvent
from ragline.types.stream import COALESCABLE_TYPES


def coalesce(events: list[StreamEvent]) -> list[StreamEvent]:
    """Join consecutive non-done chunks of the same type and id (answer, thinking, reflection).

    The joined frame has the concatenated content, the last chunk's timestamp and ``seq`` (so resuming
    after it neither loses nor repeats text) and the union of their data, later keys winning. A done
    chunk, another type or another id ends a run and passes through unchanged. Inputs are not mutated.
    """
    if len(events) < 2:
        return list(events)
    out: list[StreamEvent] = []
    run: StreamEvent | None = None
    parts: list[str] = []

    def flush() -> None:
        nonlocal run
        if run is not None:
            run.content = "".join(parts)
            out.append(run)
            run = None
            parts.clear()

    for event in events:
        if event.type in COALESCABLE_TYPES and not event.done:
            if run is not None and run.type == event.type and run.id == event.id:
                parts.append(event.content)
                run.timestamp = event.timestamp
                run.seq = event.seq
                run.data = {**run.data, **event.data}
                continue
            flush()
            run = event.model_copy(update={"data": dict(event.data)})
            parts.append(event.content)
            continue
        flush()
        out.append(event)
    flush()
    return out
