"""LazyRegistry: the id → factory registry behind models, rerank models and web search providers."""

import asyncio

import pytest

from ragline.models.registry import ModelRegistry, UnknownModel
from ragline.registry import LazyRegistry


class Built:
    def __init__(self, name: str) -> None:
        self.name = name
        self.released = 0

    async def release_loop(self) -> None:
        self.released += 1


def test_built_once_on_first_get_and_the_first_added_is_the_default():
    calls: list[str] = []
    registry: LazyRegistry[Built] = LazyRegistry(UnknownModel)
    registry.add("a", lambda: calls.append("a") or Built("a"))
    registry.add("b", lambda: calls.append("b") or Built("b"))
    assert calls == []
    assert registry.default_id == "a"
    assert registry.ids() == ["a", "b"]
    first = registry.get("b")
    assert registry.get("b") is first
    assert calls == ["b"]
    registry.add("c", lambda: Built("c"), default=True)
    assert registry.default_id == "c"


def test_unknown_ids_raise_the_registry_s_error_and_a_failed_build_is_retried():
    registry: LazyRegistry[Built] = LazyRegistry(lambda item_id: LookupError(f"no {item_id}"))
    with pytest.raises(LookupError, match="no x"):
        registry.get("x")
    attempts = iter([RuntimeError("weights missing"), None])

    def flaky() -> Built:
        error = next(attempts)
        if error is not None:
            raise error
        return Built("ok")

    registry.add("m", flaky)
    with pytest.raises(RuntimeError, match="weights missing"):
        registry.get("m")
    assert registry.get("m").name == "ok"


def test_replacing_a_factory_drops_what_the_old_one_built():
    models = ModelRegistry()
    models.add_chat_model("chat", lambda: Built("old"))  # type: ignore[arg-type,return-value]
    assert models.chat_model().name == "old"  # type: ignore[attr-defined]
    models.add_chat_model("chat", lambda: Built("new"))  # type: ignore[arg-type,return-value]
    assert models.chat_model("chat").name == "new"  # type: ignore[attr-defined]
    with pytest.raises(UnknownModel):
        models.embedder()


def test_release_loop_reaches_only_built_objects():
    registry: LazyRegistry[Built] = LazyRegistry(UnknownModel)
    registry.add("used", lambda: Built("used"))
    registry.add("idle", lambda: pytest.fail("an unused factory must not be built"))
    used = registry.get("used")
    asyncio.run(registry.release_loop())
    assert used.released == 1
