"""Where query understanding leaves what it learnt about the user's message for later turns."""

from __future__ import annotations

from typing import Protocol


class UserMessageNotes(Protocol):
    """Writes onto a stored user message. Implemented by a session store adapter; wired by the container.

    The image description is stored so that the next turn's history can say what the images showed
    (the seed keeps it as the first image's caption). Called off the request path; may raise.
    """

    def set_image_description(self, session_id: str, message_id: str, text: str) -> None:
        """Store the description of the images of a user's message."""
        ...


class InMemoryUserMessageNotes:
    """Keeps notes in a dict: for tests and for runtimes without a message store."""

    def __init__(self) -> None:
        """No notes yet."""
        self.image_descriptions: dict[tuple[str, str], str] = {}

    def set_image_description(self, session_id: str, message_id: str, text: str) -> None:
        """Keep the image description in :attr:`image_descriptions`."""
        self.image_descriptions[(session_id, message_id)] = text
