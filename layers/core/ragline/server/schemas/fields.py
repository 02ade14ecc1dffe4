"""Field limits and types that several request bodies share, so that each is written once."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

# The description of a knowledge base, a session or a document.
MAX_DESCRIPTION_CHARS = 2000
# Tags one document carries, or tag ids one search filters by.
MAX_TAGS = 50

# A score threshold of a search (vector or keyword similarity): 0 to 1.
Threshold = Annotated[float, Field(ge=0, le=1)]
# The strings a chunker splits text at (WeKnora's ``separators``).
Separators = Annotated[list[Annotated[str, Field(max_length=100)]], Field(max_length=50)]
