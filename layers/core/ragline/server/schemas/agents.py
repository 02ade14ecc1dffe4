"""The request body of the agent routes: WeKnora's request for an answer's follow-up suggestions."""

from __future__ import annotations

from pydantic import BaseModel


class EnsureSuggestionsBody(BaseModel):
    """WeKnora's request for follow-ups (``regenerate``, which is refused: there is nothing to regenerate)."""

    regenerate: bool = False
