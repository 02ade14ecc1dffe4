import asyncio
import time

from ragline.models.base import strip_think_tags
from ragline.pipeline.load_history import PluginLoadHistory, pair_rounds
from ragline.pipeline.plugin import EventManager
from ragline.store.models import Message
from ragline.store.sessions import SqliteSessionStore as SessionStore
from ragline.types import ChatManage, EventType


def msg(request_id: str, role: str, content: str, minute: int, completed: bool = True) -> Message:
    stamp = f"2024-01-01T00:{minute:02d}:00.000+00:00"
    return Message(
        id=f"{request_id}-{role}",
        session_id="s",
        tenant_id="t",
        request_id=request_id,
        role=role,
        content=content,
        is_completed=completed,
        created_at=stamp,
        updated_at=stamp,
    )


def turn(request_id: str, minute: int, answer: str | None = None, completed: bool = True) -> list[Message]:
    return [
        msg(request_id, "user", f"question {request_id}", minute),
        msg(request_id, "assistant", answer if answer is not None else f"answer {request_id}", minute, completed),
    ]


def test_pairs_by_request_id_in_chronological_order():
    messages = [*turn("r2", 2), *turn("r1", 1), *turn("r3", 3)]
    messages.reverse()  # newest first, as the store returns them
    history = pair_rounds(messages, max_rounds=5)
    assert [(h.request_id, h.query, h.answer) for h in history] == [
        ("r1", "question r1", "answer r1"),
        ("r2", "question r2", "answer r2"),
        ("r3", "question r3", "answer r3"),
    ]


def test_keeps_newest_max_rounds():
    messages = [m for i in range(1, 8) for m in turn(f"r{i}", i)]
    history = pair_rounds(reversed(messages), max_rounds=3)
    assert [h.request_id for h in history] == ["r5", "r6", "r7"]


def test_skips_incomplete_unpaired_and_empty_answers():
    messages = [
        *turn("ok1", 1),
        *turn("pending", 2, completed=False),
        msg("lonely-user", "user", "q", 3),
        msg("lonely-assistant", "assistant", "a", 4),
        *turn("empty", 5, answer="   "),
        *turn("only-think", 6, answer="<think>reasoning</think>"),
        *turn("ok2", 7),
    ]
    assert [h.request_id for h in pair_rounds(messages, max_rounds=10)] == ["ok1", "ok2"]


def test_excludes_current_request():
    messages = [*turn("r1", 1), *turn("current", 2), *turn("r3", 3)]
    history = pair_rounds(messages, max_rounds=10, exclude_request_id="current")
    assert [h.request_id for h in history] == ["r1", "r3"]


def test_strips_think_tags():
    messages = turn("r1", 1, answer="<think>hidden reasoning\nmore</think>\nThe visible answer")
    history = pair_rounds(messages, max_rounds=1)
    assert history[0].answer == "The visible answer"
    assert strip_think_tags("<THINK>x</THINK>a<think>unterminated") == "a"
    assert strip_think_tags("a<think>1</think>b<think>2</think>c") == "abc"


def test_history_carries_user_timestamp():
    history = pair_rounds(turn("r1", 9), max_rounds=1)
    assert history[0].created_at == "2024-01-01T00:09:00.000+00:00"


def test_zero_rounds_gives_nothing():
    assert pair_rounds(turn("r1", 1), max_rounds=0) == []


class FailingSessions:
    def recent_messages(self, session_id, limit):
        raise RuntimeError("database down")


class RecordingSessions:
    def __init__(self, messages):
        self.messages = messages
        self.calls = []

    def recent_messages(self, session_id, limit):
        self.calls.append((session_id, limit))
        return self.messages


def run(plugin, cm):
    manager = EventManager()
    manager.register(plugin)
    return asyncio.run(manager.trigger(EventType.LOAD_HISTORY, cm))


def test_plugin_fetches_rounds_times_two_plus_ten(make_request):
    sessions = RecordingSessions([*turn("old", 1), *turn("req-1", 2)])
    cm = ChatManage.start(make_request(max_rounds=3, request_id="req-1", session_id="sess-9"))
    assert run(PluginLoadHistory(sessions), cm) is None  # type: ignore[arg-type]
    assert sessions.calls == [("sess-9", 16)]
    assert [h.request_id for h in cm.state.history] == ["old"]


def test_plugin_skips_when_max_rounds_not_positive(make_request):
    sessions = RecordingSessions(turn("old", 1))
    cm = ChatManage.start(make_request(max_rounds=0))
    assert run(PluginLoadHistory(sessions), cm) is None  # type: ignore[arg-type]
    assert sessions.calls == []
    assert cm.state.history == []


def test_plugin_ignores_read_errors(make_request):
    cm = ChatManage.start(make_request())
    assert run(PluginLoadHistory(FailingSessions()), cm) is None  # type: ignore[arg-type]
    assert cm.state.history == []


def test_plugin_with_real_store(db, make_request):
    store = SessionStore(db)
    session = store.create_session("t-1", ["kb"])
    for i in range(3):
        _, assistant = store.create_turn(session, f"r{i}", f"question {i}")
        store.complete_assistant_message(session.id, assistant.id, f"answer {i}", [])
        time.sleep(0.003)  # distinct millisecond timestamps
    store.create_turn(session, "current", "now?")
    cm = ChatManage.start(make_request(session_id=session.id, request_id="current", max_rounds=2))
    assert run(PluginLoadHistory(store), cm) is None
    assert [(h.query, h.answer) for h in cm.state.history] == [("question 1", "answer 1"), ("question 2", "answer 2")]


def alternative(request_id: str, minute: int, of: str) -> list[Message]:
    """A turn that regenerates (or edits) the turn whose answer is ``of``."""
    return [m.model_copy(update={"alternative_of": of}) for m in turn(request_id, minute)]


def test_of_alternative_turns_the_newest_alone_is_history():
    messages = [
        *turn("r1", 1),
        *turn("r2", 2),
        *alternative("r2b", 3, of="r2-assistant"),
        *alternative("r2c", 4, of="r2-assistant"),
        *turn("r3", 5),
    ]
    assert [h.request_id for h in pair_rounds(reversed(messages), max_rounds=10)] == ["r1", "r2c", "r3"]


def test_a_regenerated_turn_does_not_see_the_answers_it_replaces():
    messages = [*turn("r1", 1), *turn("r2", 2), *alternative("r2b", 3, of="r2-assistant"), *turn("now", 4)]
    now = alternative("now", 4, of="r2-assistant")
    history = pair_rounds([*messages[:6], *now], max_rounds=10, exclude_request_id="now")
    assert [h.request_id for h in history] == ["r1"]
