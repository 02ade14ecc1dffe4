"""The query-understanding prompt and the system prompt of intents that do not search.

The query-understanding prompt (rewrite.yaml) and the system prompt of intents that do not search (intent_prompts.yaml).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ragline.config import ConversationConfig, PromptTemplates, render_placeholders
from ragline.models.base import ChatMessage
from ragline.types import History
from ragline.understanding.conversation import format_conversation

REWRITE_TEMPLATES_FILE = "rewrite"
# The configuration's default (conversation.rewrite_template_id) is the one source.
DEFAULT_REWRITE_TEMPLATE_ID = ConversationConfig().rewrite_template_id
INTENT_PROMPTS_FILE = "intent_prompts"

# Appended to the question so the model knows images came with it, whether or not it can see them; a
# model that cannot see them is told so, or it would invent a description to fill the JSON field.
IMAGES_ATTACHED = '<images_attached count="{count}" />'
IMAGES_NOT_VISIBLE = (
    '<images_attached count="{count}" visible="false">The images cannot be shown to you; do not describe '
    'them and leave "image_description" empty.</images_attached>'
)

# Either marker, as a model may copy it back into its rewrite.
IMAGES_MARKER = re.compile(r"<images_attached\b[^>]*/>|<images_attached\b[^>]*>.*?</images_attached>", re.DOTALL)


def without_image_markers(text: str) -> str:
    """``text`` without the images-attached markers this prompt adds (a rewrite must not search for them)."""
    return IMAGES_MARKER.sub("", text).strip()


def understanding_messages(
    templates: PromptTemplates,
    *,
    query: str,
    history: Sequence[History],
    language: str,
    images: Sequence[str] = (),
    send_images: bool = False,
    template_id: str = DEFAULT_REWRITE_TEMPLATE_ID,
) -> list[ChatMessage]:
    """System and user messages from the rewrite template, ``{conversation}``, ``{query}``, ``{language}``.

    Raises ``KeyError`` when the template is missing. With ``send_images`` the user message is an
    :class:`ChatMessage` carrying ``images``.
    """
    query_text = query
    if images:
        marker = IMAGES_ATTACHED if send_images else IMAGES_NOT_VISIBLE
        query_text = f"{query}\n\n{marker.format(count=len(images))}".lstrip()
    values = {"conversation": format_conversation(history), "query": query_text, "language": language}
    system = render_placeholders(templates.get(REWRITE_TEMPLATES_FILE, template_id, "system"), values)
    user = render_placeholders(templates.get(REWRITE_TEMPLATES_FILE, template_id, "user"), values)
    user_message = (
        ChatMessage("user", user, images=tuple(images)) if send_images and images else ChatMessage("user", user)
    )
    return [ChatMessage("system", system), user_message]


def intent_system_prompt(
    intent: str,
    language: str,
    templates: PromptTemplates,
    agent_prompts: Mapping[str, str] | None = None,
) -> str:
    """The system prompt for an intent that does not search; ``""`` when there is none.

    An agent's own prompt for the intent wins when it is not blank and is used exactly as written
    (agents rely on their leading/trailing whitespace); otherwise the global template of that id,
    with ``{{language}}`` filled in.
    """
    agent_prompt = (agent_prompts or {}).get(intent, "")
    if agent_prompt.strip():
        return agent_prompt
    if not intent:
        return ""
    try:
        template = templates.get(INTENT_PROMPTS_FILE, intent)
    except KeyError:
        return ""
    return render_placeholders(template, {"language": language})
