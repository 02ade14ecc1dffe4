import asyncio

import pytest

from ragline.pipeline import plugin as plugin_module
from ragline.pipeline.plugin import (
    ERR_GET_CHAT_MODEL,
    ERR_INTERNAL,
    ERR_SEARCH_NOTHING,
    EventManager,
    Plugin,
    PluginError,
    PluginErrorException,
)
from ragline.types import ChatManage, EventType, PipelineRequest

REQUEST = PipelineRequest(query="q", request_id="r", session_id="s", tenant_id="t")


def new_cm() -> ChatManage:
    return ChatManage.start(REQUEST)


class Recorder:
    """Records 'before' and 'after' around next(); returns whatever the inner chain returned."""

    def __init__(self, name: str, log: list[str], events=(EventType.CHUNK_RERANK,)) -> None:
        self.name = name
        self.log = log
        self.events = list(events)

    def activation_events(self):
        return self.events

    async def on_event(self, event_type, cm, next):
        self.log.append(f"{self.name}:before")
        result = await next()
        self.log.append(f"{self.name}:after")
        return result


class Stopper:
    """Does not call next(): the inner links never run."""

    def __init__(self, log: list[str], result: PluginError | None = None) -> None:
        self.log = log
        self.result = result

    def activation_events(self):
        return [EventType.CHUNK_RERANK]

    async def on_event(self, event_type, cm, next):
        self.log.append("stopper")
        return self.result


class Raiser:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def activation_events(self):
        return [EventType.CHUNK_RERANK]

    async def on_event(self, event_type, cm, next):
        raise self.exc


def trigger(manager: EventManager, cm: ChatManage, event: EventType = EventType.CHUNK_RERANK):
    return asyncio.run(manager.trigger(event, cm))


def test_first_registered_is_outermost():
    log: list[str] = []
    manager = EventManager()
    for name in ("a", "b", "c"):
        manager.register(Recorder(name, log))
    assert trigger(manager, new_cm()) is None
    assert log == ["a:before", "b:before", "c:before", "c:after", "b:after", "a:after"]


def test_registration_order_reversed_gives_reversed_chain():
    log: list[str] = []
    manager = EventManager()
    for name in ("c", "b", "a"):
        manager.register(Recorder(name, log))
    trigger(manager, new_cm())
    assert log[:3] == ["c:before", "b:before", "a:before"]


def test_plugin_reaches_inner_links_only_via_next():
    log: list[str] = []
    manager = EventManager()
    manager.register(Stopper(log))
    manager.register(Recorder("inner", log))
    assert trigger(manager, new_cm()) is None
    assert log == ["stopper"]


def test_not_calling_next_stops_chain_and_returns_its_error():
    log: list[str] = []
    manager = EventManager()
    manager.register(Recorder("outer", log))
    manager.register(Stopper(log, result=ERR_SEARCH_NOTHING))
    manager.register(Recorder("never", log))
    error = trigger(manager, new_cm())
    assert error == ERR_SEARCH_NOTHING
    assert log == ["outer:before", "stopper", "outer:after"]


def test_outer_plugin_post_processes_after_next():
    """A boost that calls next() first sees (and reorders) what the inner plugin produced."""

    class Producer:
        def activation_events(self):
            return [EventType.CHUNK_RERANK]

        async def on_event(self, event_type, cm, next):
            cm.state.entity = ["a", "b", "c"]
            return await next()

    class Reverser:
        def __init__(self):
            self.seen_before: list[str] | None = None

        def activation_events(self):
            return [EventType.CHUNK_RERANK]

        async def on_event(self, event_type, cm, next):
            self.seen_before = list(cm.state.entity)
            error = await next()
            cm.state.entity = list(reversed(cm.state.entity))
            return error

    reverser = Reverser()
    manager = EventManager()
    manager.register(reverser)  # outermost
    manager.register(Producer())
    cm = new_cm()
    assert trigger(manager, cm) is None
    assert reverser.seen_before == []
    assert cm.state.entity == ["c", "b", "a"]


def test_two_post_processors_apply_innermost_first():
    """As rerank → WikiBoost → MemoryAffinity: the inner boost's change happens before the outer one's."""
    applied: list[str] = []

    class Boost:
        def __init__(self, name):
            self.name = name

        def activation_events(self):
            return [EventType.CHUNK_RERANK]

        async def on_event(self, event_type, cm, next):
            error = await next()
            applied.append(self.name)
            return error

    manager = EventManager()
    manager.register(Boost("wiki"))
    manager.register(Boost("memory"))
    trigger(manager, new_cm())
    assert applied == ["memory", "wiki"]


def test_inner_error_propagates_through_next():
    class Failing:
        def activation_events(self):
            return [EventType.CHUNK_RERANK]

        async def on_event(self, event_type, cm, next):
            return ERR_GET_CHAT_MODEL.with_cause("no model")

    log: list[str] = []
    manager = EventManager()
    manager.register(Recorder("outer", log))
    manager.register(Failing())
    error = trigger(manager, new_cm())
    assert error is not None
    assert error.error_type == "get_chat_model_failed"
    assert error.cause == "no model"
    assert error.message == "failed to get chat model: no model"


def test_exception_becomes_internal_error():
    manager = EventManager()
    manager.register(Raiser(RuntimeError("boom")))
    error = trigger(manager, new_cm())
    assert error is not None
    assert error.error_type == ERR_INTERNAL.error_type == "internal_error"
    assert "RuntimeError" in error.cause
    assert "boom" in error.cause


def test_exception_in_inner_plugin_becomes_internal_error():
    log: list[str] = []
    manager = EventManager()
    manager.register(Recorder("outer", log))
    manager.register(Raiser(ValueError("bad value")))
    error = trigger(manager, new_cm())
    assert error is not None
    assert error.error_type == "internal_error"
    assert "bad value" in error.cause
    assert log == ["outer:before"]


def test_plugin_error_exception_carries_its_error():
    manager = EventManager()
    manager.register(Raiser(PluginErrorException(ERR_SEARCH_NOTHING)))
    assert trigger(manager, new_cm()) == ERR_SEARCH_NOTHING


def test_cancelled_error_is_not_swallowed():
    manager = EventManager()
    manager.register(Raiser(asyncio.CancelledError()))
    with pytest.raises(asyncio.CancelledError):
        trigger(manager, new_cm())


def test_empty_chain_returns_none():
    assert trigger(EventManager(), new_cm(), EventType.FILTER_TOP_K) is None


def test_plugin_registers_for_each_of_its_events_and_only_those():
    log: list[str] = []
    manager = EventManager()
    plugin = Recorder("multi", log, events=(EventType.CHUNK_SEARCH, EventType.CHUNK_MERGE))
    manager.register(plugin)
    assert manager.events() == {EventType.CHUNK_SEARCH, EventType.CHUNK_MERGE}
    assert manager.has(EventType.CHUNK_SEARCH)
    assert not manager.has(EventType.CHUNK_RERANK)
    assert manager.plugins_for(EventType.CHUNK_MERGE) == [plugin]
    trigger(manager, new_cm(), EventType.CHUNK_RERANK)
    assert log == []
    trigger(manager, new_cm(), EventType.CHUNK_SEARCH)
    assert log == ["multi:before", "multi:after"]


def test_plugins_for_returns_a_copy():
    manager = EventManager()
    manager.register(Recorder("a", []))
    manager.plugins_for(EventType.CHUNK_RERANK).clear()
    assert len(manager.plugins_for(EventType.CHUNK_RERANK)) == 1


def test_string_event_types_are_accepted():
    class StringEvents(Recorder):
        def activation_events(self):
            return ["chunk_rerank"]

    log: list[str] = []
    manager = EventManager()
    manager.register(StringEvents("s", log))
    trigger(manager, new_cm(), EventType.CHUNK_RERANK)
    assert log == ["s:before", "s:after"]


def test_recorder_satisfies_plugin_protocol():
    assert isinstance(Recorder("a", []), Plugin)


@pytest.mark.parametrize(
    ("name", "error_type"),
    [
        ("ERR_SEARCH_NOTHING", "search_nothing"),
        ("ERR_SEARCH", "search_failed"),
        ("ERR_GET_CHAT_MODEL", "get_chat_model_failed"),
        ("ERR_TEMPLATE_EXECUTE", "template_execution_failed"),
        ("ERR_MODEL_CALL", "model_call_failed"),
    ],
)
def test_predefined_error_types(name, error_type):
    error = getattr(plugin_module, name)
    assert isinstance(error, PluginError)
    assert error.error_type == error_type
    assert error.description
    assert error.cause == ""
    assert error.message == error.description


def test_with_cause_keeps_type_and_does_not_mutate_original():
    error = ERR_SEARCH_NOTHING.with_cause(ValueError("x"))
    assert error.error_type == "search_nothing"
    assert error.cause == "x"
    assert ERR_SEARCH_NOTHING.cause == ""
