"""The request bodies of the session routes: a session, its update, batch delete, title, fork and feedback."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragline.server.schemas.fields import MAX_DESCRIPTION_CHARS
from ragline.types.text import MAX_TEXT_CHARS, Identifier, IdList, PlainName, PlainText

# Sessions one batch delete names at most.
MAX_BATCH_DELETE = 1000
# Messages a generate_title request may carry, and the characters of each that are read.
MAX_TITLE_MESSAGES = 100
MAX_TITLE_MESSAGE_CHARS = 20_000


class SessionAgentConfig(BaseModel):
    """WeKnora's web app's ``agent_config`` of a new session.

    Its knowledge bases become the session's (when ``knowledge_base_ids`` names none); the rest (iterations,
    temperature, tools of agent mode, which ragline does not have) is accepted and not acted on.
    """

    model_config = ConfigDict(extra="allow")
    knowledge_bases: list[Identifier] = Field(default_factory=list, max_length=100)
    knowledge_ids: list[Identifier] = Field(default_factory=list, max_length=1000)


class SessionBody(BaseModel):
    """WeKnora's session (a title and a description) and the knowledge bases ragline searches by default."""

    model_config = ConfigDict(extra="forbid")
    knowledge_base_ids: IdList = Field(default_factory=list)
    title: PlainName = Field(default="", max_length=200)
    description: PlainText = Field(default="", max_length=MAX_DESCRIPTION_CHARS)
    agent_config: SessionAgentConfig | None = None


class BatchDeleteBody(BaseModel):
    """WeKnora's batch delete: the sessions named, or every session of the tenant."""

    model_config = ConfigDict(extra="forbid")
    ids: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        default_factory=list, max_length=MAX_BATCH_DELETE
    )
    delete_all: bool = False


class SessionUpdate(BaseModel):
    """WeKnora's update: a title and a description, each set as given when present.

    The read-only fields of a session record (a client may send back the one it read) are ignored.
    """

    model_config = ConfigDict(extra="forbid")
    title: PlainName | None = Field(default=None, max_length=200)
    description: PlainText | None = Field(default=None, max_length=MAX_DESCRIPTION_CHARS)
    id: Identifier | None = None
    tenant_id: int | Identifier | None = None
    user_id: Identifier | None = None
    is_pinned: bool | None = None
    pinned_at: Identifier | None = None
    created_at: Identifier | None = None
    updated_at: Identifier | None = None
    deleted_at: Identifier | None = None
    knowledge_base_ids: IdList | None = None
    options: dict[str, Any] | None = None
    title_provisional: bool | None = None
    matched_content: str | None = Field(default=None, max_length=MAX_TEXT_CHARS)


class TitleMessage(BaseModel):
    """One message of WeKnora's ``Message`` as a client sends it.

    ``role`` and ``content`` are read; the rest of the record (ids, references, times, agent steps) is accepted and not
    used.
    """

    model_config = ConfigDict(extra="ignore")
    role: str = Field(default="", max_length=32)
    content: str = Field(default="", max_length=MAX_TITLE_MESSAGE_CHARS)


class GenerateTitleBody(BaseModel):
    """The conversation to title: its messages as WeKnora's client sends them."""

    model_config = ConfigDict(extra="forbid")
    messages: list[TitleMessage] = Field(min_length=1, max_length=MAX_TITLE_MESSAGES)


class AtMessage(BaseModel):
    """A point in the conversation: the turn of this message (its question and its answer)."""

    model_config = ConfigDict(extra="forbid")
    message_id: str = Field(min_length=1, max_length=200)


# The characters of a feedback comment.
MAX_FEEDBACK_COMMENT = 2000


class FeedbackBody(BaseModel):
    """The reader's rating of an answer: ``up``, ``down``, or ``none`` (or "") to take it back; a comment."""

    model_config = ConfigDict(extra="forbid")
    rating: Literal["up", "down", "none", ""]
    comment: PlainText = Field(default="", max_length=MAX_FEEDBACK_COMMENT)
