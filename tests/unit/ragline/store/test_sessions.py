import time

from ragline.store.sessions import SqliteSessionStore as SessionStore


def test_create_and_read_session(db):
    store = SessionStore(db)
    session = store.create_session("t1", ["kb1", "kb2"], title="Hello", options={"web": True})
    assert store.session("t1", session.id) == session
    assert store.session("t2", session.id) is None
    assert session.knowledge_base_ids == ["kb1", "kb2"]
    assert session.options == {"web": True}


def test_create_turn_makes_user_and_pending_assistant(db):
    store = SessionStore(db)
    session = store.create_session("t1", [])
    user, assistant = store.create_turn(session, "req-1", "What is it?")
    assert user.role == "user"
    assert user.is_completed is True
    assert user.content == "What is it?"
    assert assistant.role == "assistant"
    assert assistant.is_completed is False
    assert assistant.content == ""
    assert user.request_id == assistant.request_id == "req-1"
    assert user.id != assistant.id
    assert store.message("t1", session.id, user.id) == user
    assert store.message("t1", session.id, assistant.id) == assistant
    assert store.message("t2", session.id, assistant.id) is None
    assert store.message("t1", "other-session", assistant.id) is None


def test_complete_assistant_message_only_once(db):
    store = SessionStore(db)
    session = store.create_session("t1", [])
    _user, assistant = store.create_turn(session, "req-1", "q")
    refs = [{"id": "c1", "title": "中文"}]
    assert (
        store.complete_assistant_message(session.id, assistant.id, "first answer", refs, stop_reason="stopped") is True
    )
    assert store.complete_assistant_message(session.id, assistant.id, "second answer", [], stop_reason="") is False
    stored = store.message("t1", session.id, assistant.id)
    assert stored is not None
    assert stored.is_completed is True
    assert stored.content == "first answer"
    assert stored.knowledge_references == refs
    assert stored.stop_reason == "stopped"


def test_complete_does_not_touch_user_messages_or_unknown_ids(db):
    store = SessionStore(db)
    session = store.create_session("t1", [])
    user, _ = store.create_turn(session, "req-1", "q")
    assert store.complete_assistant_message(session.id, user.id, "overwrite", []) is False
    assert store.message("t1", session.id, user.id).content == "q"
    assert store.complete_assistant_message(session.id, "no-such-id", "x", []) is False


def test_recent_messages_newest_first_and_limited(db):
    store = SessionStore(db)
    session = store.create_session("t1", [])
    other = store.create_session("t1", [])
    turns = []
    for i in range(3):
        turns.append(store.create_turn(session, f"req-{i}", f"q{i}"))
        time.sleep(0.003)  # distinct millisecond timestamps
    store.create_turn(other, "other-req", "elsewhere")
    recent = store.recent_messages(session.id, 10)
    assert [(m.request_id, m.role) for m in recent] == [
        ("req-2", "assistant"),
        ("req-2", "user"),
        ("req-1", "assistant"),
        ("req-1", "user"),
        ("req-0", "assistant"),
        ("req-0", "user"),
    ]
    limited = store.recent_messages(session.id, 3)
    assert [(m.request_id, m.role) for m in limited] == [
        ("req-2", "assistant"),
        ("req-2", "user"),
        ("req-1", "assistant"),
    ]


def test_messages_chronological_user_before_assistant(db):
    store = SessionStore(db)
    session = store.create_session("t1", [])
    for i in range(2):
        store.create_turn(session, f"req-{i}", f"q{i}")
        time.sleep(0.003)
    assert [(m.request_id, m.role) for m in store.messages("t1", session.id)] == [
        ("req-0", "user"),
        ("req-0", "assistant"),
        ("req-1", "user"),
        ("req-1", "assistant"),
    ]
    assert store.messages("t2", session.id) == []


def test_sessions_listed_per_tenant(db):
    store = SessionStore(db)
    a = store.create_session("t1", [])
    store.create_session("t2", [])
    assert [s.id for s in store.sessions("t1")] == [a.id]
    store.set_title("t1", a.id, "New title")
    assert store.session("t1", a.id).title == "New title"


def test_message_by_request_finds_the_pair_of_one_tenant(db):
    store = SessionStore(db)
    session = store.create_session("t1", [])
    user, assistant = store.create_turn(session, "req-1", "q")
    assert store.message_by_request("t1", session.id, "req-1") == (user, assistant)
    assert store.message_by_request("t2", session.id, "req-1") is None
    assert store.message_by_request("t1", session.id, "req-2") is None
