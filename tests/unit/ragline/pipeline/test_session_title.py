"""The session_title event carries plain text, whatever markup the model put in its reply."""

from __future__ import annotations

import asyncio

import pytest

from ragline.config import load_config
from ragline.event.bus import EventBus
from ragline.models.base import ChatResponse
from ragline.pipeline.session_title import SessionTitler, clean_title


@pytest.mark.parametrize(
    ("reply", "title"),
    [
        ('Heavy water cooling <ref id="1"/>', "Heavy water cooling"),
        ('<ref id="2" />Reactor <ref id="3"/>basics', "Reactor basics"),
        ('Brewing <kb doc="d1" chunk_id="c1" kb_id="k1" /> coffee', "Brewing coffee"),
        ("<think>The user asks about tea.</think>Green tea temperatures", "Green tea temperatures"),
        ("<b>Bold</b> <i>title</i>", "Bold title"),
        ("Title: \u202eevil\u202c name\x00", "evil name"),
        ("**Streaming** `answers`", "Streaming answers"),
        ("1 < 2 and 3 > 2", "1 < 2 and 3 > 2"),  # comparisons are not tags
        ("Reactor cooling [1] basics", "Reactor cooling basics"),
        ("Heavy water[1][2]", "Heavy water"),
        ("Neutron moderation [1, 3] and [^2] cooling", "Neutron moderation and cooling"),
        ("Top 10 [draft] ideas", "Top 10 [draft] ideas"),  # brackets that are not citations stay
    ],
)
def test_titles_are_plain_text(reply, title):
    assert clean_title(reply) == title


class Sessions:
    def __init__(self):
        self.titles = {}

    def session(self, tenant_id, session_id):
        from ragline.store.models import Session

        return Session(id=session_id, tenant_id=tenant_id, created_at="", updated_at="")

    def set_title(self, tenant_id, session_id, title):
        self.titles[session_id] = title


class Model:
    model_id = "generative"

    async def chat(self, messages, options):
        return ChatResponse('"Reactor cooling with heavy water" <ref id="1"/>')


class Models:
    def chat_model(self, model_id):
        return Model()


def test_the_title_event_and_the_stored_title_carry_no_tags(make_request):
    from ragline.types import ChatManage, PipelineContext

    _, templates = load_config()
    sessions = Sessions()
    bus, seen = EventBus(), []

    async def record(event):
        seen.append(event)

    bus.subscribe(record)
    cm = ChatManage.start(make_request(), PipelineContext(event_bus=bus))
    asyncio.run(SessionTitler(sessions, Models(), templates).finish(cm))
    [event] = seen
    assert event.content == event.data["title"] == "Reactor cooling with heavy water"
    assert sessions.titles == {"sess-1": "Reactor cooling with heavy water"}
