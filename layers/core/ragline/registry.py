"""Id → factory registries whose objects are built on first use and then kept.

Models, rerank models and web search providers are all registered this way: building one can mean loading
weights or opening a connection pool, which a process that never uses it should not pay for.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class LazyRegistry(Generic[T]):
    """Factories by id, each built once on its first ``get``; a factory that raised is tried again next time.

    The first id added is the default unless a later ``add`` says ``default``. ``unknown`` makes the error
    raised for an id no factory was added under.
    """

    def __init__(self, unknown: Callable[[str], Exception]) -> None:
        """An empty registry; ``unknown(id)`` is the exception raised for an id nobody registered."""
        # Re-entrant: a factory may get the objects it is built from (an ensemble embedder its parts).
        self._lock = threading.RLock()
        self._unknown = unknown
        self._factories: dict[str, Callable[[], T]] = {}
        self._built: dict[str, T] = {}
        self.default_id = ""

    def add(self, item_id: str, factory: Callable[[], T], default: bool = False) -> None:
        """Register (or replace) a factory; an object built by a replaced factory is dropped."""
        with self._lock:
            self._factories[item_id] = factory
            self._built.pop(item_id, None)
            if default or not self.default_id:
                self.default_id = item_id

    def has(self, item_id: str) -> bool:
        """True when ``item_id`` is registered."""
        return item_id in self._factories

    def ids(self) -> list[str]:
        """The registered ids, in registration order."""
        return list(self._factories)

    def get(self, item_id: str) -> T:
        """The item ``item_id``, built by its factory on first use (once, under a lock)."""
        with self._lock:
            if item_id in self._built:
                return self._built[item_id]
            factory = self._factories.get(item_id)
            if factory is None:
                raise self._unknown(item_id)
            item = factory()
            self._built[item_id] = item
            return item

    async def release_loop(self) -> None:
        """Let built objects close what they bound to the running event loop (connection pools)."""
        with self._lock:
            built = list(self._built.values())
        for item in built:
            release = getattr(item, "release_loop", None)
            if release is not None:
                await release()
