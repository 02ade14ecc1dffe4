"""The plugin framework: a chain of responsibility per pipeline event.

For one event the first registered plugin is the outermost link; it reaches the inner links only by
calling ``next()``. A plugin works before ``next()`` (most stages) or calls ``next()`` first and
post-processes (boosts that reorder what rerank produced).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ragline.types import ChatManage, EventType

NextFn = Callable[[], Awaitable["PluginError | None"]]


@dataclass(frozen=True)
class PluginError:
    """A stage's failure or short-circuit. ``error_type`` is stable: clients and tests match on it."""

    error_type: str
    description: str
    cause: str = ""

    def with_cause(self, cause: BaseException | str) -> PluginError:
        """The same error with ``cause`` attached."""
        return PluginError(self.error_type, self.description, str(cause))

    @property
    def message(self) -> str:
        """The description, with the cause when there is one."""
        return f"{self.description}: {self.cause}" if self.cause else self.description


# "No results" is an outcome that leads to the fallback answer, not a failure.
ERR_SEARCH_NOTHING = PluginError("search_nothing", "no relevant content found")
ERR_SEARCH = PluginError("search_failed", "search failed")
ERR_GET_CHAT_MODEL = PluginError("get_chat_model_failed", "failed to get chat model")
ERR_TEMPLATE_EXECUTE = PluginError("template_execution_failed", "failed to execute template")
ERR_MODEL_CALL = PluginError("model_call_failed", "failed to call model")
ERR_INTERNAL = PluginError("internal_error", "internal error")


@runtime_checkable
class Plugin(Protocol):
    """One stage implementation (or one link of a stage's chain)."""

    def activation_events(self) -> Iterable[EventType]:
        """The stages this plugin runs at."""
        ...

    async def on_event(self, event_type: EventType, cm: ChatManage, next: NextFn) -> PluginError | None:
        """Do the stage's work around ``next()`` (the rest of the chain); an error ends the stage."""
        ...


async def _end_of_chain() -> PluginError | None:
    return None


class EventManager:
    """Event type → ordered plugins; ``trigger`` runs the chain for one event."""

    def __init__(self) -> None:
        """No plugins yet."""
        self._plugins: dict[EventType, list[Plugin]] = {}

    def register(self, plugin: Plugin) -> None:
        """Add ``plugin`` to the chain of each of its stages, after those registered before it."""
        for event_type in plugin.activation_events():
            self._plugins.setdefault(EventType(event_type), []).append(plugin)

    def plugins_for(self, event_type: EventType) -> list[Plugin]:
        """The chain of ``event_type``, in registration order."""
        return list(self._plugins.get(event_type, []))

    def has(self, event_type: EventType) -> bool:
        """True when some plugin runs at ``event_type``."""
        return bool(self._plugins.get(event_type))

    def events(self) -> set[EventType]:
        """Every stage with at least one plugin."""
        return {event for event, plugins in self._plugins.items() if plugins}

    async def trigger(self, event_type: EventType, cm: ChatManage) -> PluginError | None:
        """Run the chain; an exception escaping a plugin becomes ``internal_error`` naming the stage."""
        handler: NextFn = _end_of_chain
        # Wrap from the innermost plugin outwards so the first registered one runs first.
        for plugin in reversed(self._plugins.get(event_type, [])):
            handler = _link(plugin, event_type, cm, handler)
        try:
            return await handler()
        except PluginErrorException as exc:
            return exc.error
        except Exception as exc:  # CancelledError is a BaseException and passes through
            return ERR_INTERNAL.with_cause(f"{type(exc).__name__}: {exc}")


def _link(plugin: Plugin, event_type: EventType, cm: ChatManage, inner: NextFn) -> NextFn:
    async def run() -> PluginError | None:
        return await plugin.on_event(event_type, cm, inner)

    return run


class PluginErrorException(Exception):
    """Carries a :class:`PluginError` through code that can only raise (helpers deep in a stage)."""

    def __init__(self, error: PluginError) -> None:
        """The exception carrying ``error``."""
        super().__init__(error.message)
        self.error = error
