"""A chat message that carries images next to its text.

:class:`ragline.models.base.ChatMessage` is text only. Query understanding must hand a vision model the
user's images, so it builds this subclass: adapters that know about ``images`` can send them, the others
still read ``role`` and ``content`` and see the text-only prompt (which says how many images there are).
"""

from __future__ import annotations

from dataclasses import dataclass

from ragline.models.base import ChatMessage


@dataclass(frozen=True)
class ImageChatMessage(ChatMessage):
    """``images``: URLs or ``data:`` URLs, in the order the user attached them."""

    images: tuple[str, ...] = ()


def message_images(message: ChatMessage) -> tuple[str, ...]:
    """The images a message carries (none for a plain :class:`ChatMessage`)."""
    return message.images if isinstance(message, ImageChatMessage) else ()
