"""KnowledgeQA by event: runs a turn's stages in order and decides what the client sees around them.

Rules from the reference design:
- progress windows: ``query_understand`` around that stage; ``knowledge_search`` from the first search
  stage to the last one in the plan; a window opened is closed on every path, errors and short-circuits
  included, so no client shows a spinner forever;
- ``references`` right before streamed generation, when there are results;
- after every stage, cancellation first (a stop must never read as "no results"), then ``search_nothing``
  leads to the fallback answer, any other error to an ``error`` event naming the stage.

``run_stage`` handles one stage, so the serverless runtime can run each stage in its own invocation with
exactly the rules the embedded loop applies.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from enum import StrEnum
from typing import Any

from ragline.event.bus import BusEventType
from ragline.observability import failed_call, stage_span
from ragline.pipeline.emit import emit, event_id, turn_hex
from ragline.pipeline.fallback import FallbackResponder
from ragline.pipeline.plugin import ERR_SEARCH_NOTHING, EventManager, PluginError
from ragline.pipeline.session_title import SessionTitler
from ragline.types import ChatManage, EventType

logger = logging.getLogger(__name__)

SEARCH_WINDOW_STAGES = frozenset(
    {
        EventType.CHUNK_SEARCH,
        EventType.CHUNK_SEARCH_PARALLEL,
        EventType.CHUNK_RERANK,
        EventType.WEB_FETCH,
        EventType.CHUNK_MERGE,
        EventType.FILTER_TOP_K,
        EventType.DATA_ANALYSIS,
    }
)
QUERY_UNDERSTAND_TOOL = "query_understand"
KNOWLEDGE_SEARCH_TOOL = "knowledge_search"


class StageOutcome(StrEnum):
    """How a stage (or the turn) ended, as the runtimes act on it."""

    CONTINUE = "continue"
    SEARCH_NOTHING = "search_nothing"
    STOPPED = "stopped"
    FAILED = "failed"
    COMPLETED = "completed"


def search_source(cm: ChatManage) -> str:
    """``mixed``, ``web`` or ``knowledge``: where this turn searches, as the progress events say."""
    has_kb, web = cm.request.has_knowledge, cm.request.web_search_enabled
    return "mixed" if has_kb and web else ("web" if web else "knowledge")


def _tool_call_id(cm: ChatManage, tool: str) -> str:
    return f"{turn_hex(cm)}-{tool}"


class Orchestrator:
    """Runs a turn's stages and decides what the client sees around them (see the module docstring)."""

    def __init__(
        self,
        events: EventManager,
        fallback: FallbackResponder,
        titles: SessionTitler | None = None,
        after_turn: Sequence[Callable[[ChatManage], Awaitable[None]]] = (),
    ) -> None:
        """An orchestrator of ``events``' plugins, with the fallback, the session titler and the after-turn work."""
        self._events = events
        self._fallback = fallback
        self._titles = titles
        self._after_turn = list(after_turn)

    # Progress windows -----------------------------------------------------------------------------------
    @staticmethod
    def _search_window(plan: Sequence[EventType]) -> tuple[EventType | None, EventType | None]:
        in_window = [stage for stage in plan if stage in SEARCH_WINDOW_STAGES]
        return (in_window[0], in_window[-1]) if in_window else (None, None)

    @staticmethod
    def _understanding_shown(cm: ChatManage) -> bool:
        return cm.request.enable_rewrite or bool(cm.request.images)

    async def _open_tool(self, cm: ChatManage, tool: str, arguments: dict[str, Any]) -> None:
        call_id = _tool_call_id(cm, tool)
        await emit(
            cm,
            BusEventType.TOOL_CALL,
            call_id,
            f"Calling tool: {tool}",
            data={"tool_name": tool, "arguments": arguments, "tool_call_id": call_id},
        )

    async def _close_tool(self, cm: ChatManage, tool: str, content: str, data: dict[str, Any]) -> None:
        call_id = _tool_call_id(cm, tool)
        await emit(
            cm,
            BusEventType.TOOL_RESULT,
            call_id,
            content,
            done=True,
            data={"tool_name": tool, "tool_call_id": call_id, **data},
        )

    def _search_summary(self, cm: ChatManage, success: bool, error: PluginError | None = None) -> dict[str, Any]:
        results = cm.final_results() if success else []
        web_count = sum(1 for r in results if r.is_web)
        data: dict[str, Any] = {
            "count": len(results),
            "doc_count": len({r.knowledge_id for r in results if not r.is_web}),
            "web_count": web_count,
            "search_source": search_source(cm),
            "candidate_count": cm.state.candidate_count,
            "success": error is None or error.error_type == ERR_SEARCH_NOTHING.error_type,
        }
        if error is not None and error.error_type != ERR_SEARCH_NOTHING.error_type:
            data["error"] = error.message
        return data

    async def _before(self, cm: ChatManage, stage: EventType, plan: Sequence[EventType]) -> None:
        first, _ = self._search_window(plan)
        if stage == EventType.QUERY_UNDERSTAND and self._understanding_shown(cm):
            await self._open_tool(cm, QUERY_UNDERSTAND_TOOL, {"query": cm.request.query})
        if stage == first and cm.needs_retrieval():
            await self._open_tool(
                cm, KNOWLEDGE_SEARCH_TOOL, {"query": cm.search_query, "search_source": search_source(cm)}
            )
        if stage == EventType.CHAT_COMPLETION_STREAM:
            results = cm.final_results() if cm.needs_retrieval() else []
            if results:
                await emit(
                    cm,
                    BusEventType.REFERENCES,
                    event_id(cm, "references"),
                    done=True,
                    references=[r.model_dump(mode="json") for r in results],
                )

    async def _after(self, cm: ChatManage, stage: EventType, plan: Sequence[EventType]) -> None:
        _, last = self._search_window(plan)
        if stage == EventType.QUERY_UNDERSTAND and self._understanding_shown(cm):
            await self._close_tool(
                cm,
                QUERY_UNDERSTAND_TOOL,
                cm.state.rewrite_query,
                {"rewrite_query": cm.state.rewrite_query, "intent": cm.state.intent, "success": True},
            )
        if stage == last and cm.needs_retrieval():
            summary = self._search_summary(cm, success=True)
            await self._close_tool(cm, KNOWLEDGE_SEARCH_TOOL, f"Found {summary['count']} results", summary)

    async def _close_open_windows(
        self, cm: ChatManage, stage: EventType, plan: Sequence[EventType], error: PluginError
    ) -> None:
        first, last = self._search_window(plan)
        if stage == EventType.QUERY_UNDERSTAND and self._understanding_shown(cm):
            await self._close_tool(cm, QUERY_UNDERSTAND_TOOL, error.message, {"success": False, "error": error.message})
        if first is not None and cm.needs_retrieval():
            position, start, end = plan.index(stage), plan.index(first), plan.index(last or first)
            if start <= position <= end:
                summary = self._search_summary(cm, success=False, error=error)
                await self._close_tool(cm, KNOWLEDGE_SEARCH_TOOL, f"Found {summary['count']} results", summary)

    # Stages ---------------------------------------------------------------------------------------------
    async def begin_stage(self, cm: ChatManage, stage: EventType, plan: Sequence[EventType]) -> bool:
        """What the client sees before a stage runs; False when the turn is already stopped."""
        if cm.context.cancelled():
            return False
        await self._before(cm, stage, plan)
        return True

    async def end_stage(
        self, cm: ChatManage, stage: EventType, plan: Sequence[EventType], error: PluginError | None
    ) -> StageOutcome:
        """What a stage's result means: stop first, then nothing found, then failure, else continue."""
        keys = {"session_id": cm.request.session_id, "message_id": cm.request.assistant_message_id}
        cm.state.steps_run += 1
        # Cancellation first: a stop during search must not turn into a "nothing found" answer.
        if cm.context.cancelled():
            return StageOutcome.STOPPED
        if error is not None:
            await self._close_open_windows(cm, stage, plan, error)
            if error.error_type == ERR_SEARCH_NOTHING.error_type:
                return StageOutcome.SEARCH_NOTHING
            logger.warning(
                "stage failed: %s", error.error_type, extra={**keys, "stage": stage.value, "error": error.message}
            )
            await emit(
                cm,
                BusEventType.ERROR,
                event_id(cm, "error"),
                error.message,
                done=True,
                data={"stage": stage.value, "error_type": error.error_type, "error": error.message},
            )
            return StageOutcome.FAILED
        await self._after(cm, stage, plan)
        return StageOutcome.CONTINUE

    async def run_stage(self, cm: ChatManage, stage: EventType, plan: Sequence[EventType]) -> StageOutcome:
        """One stage with everything around it: the unit a serverless step executes."""
        if not await self.begin_stage(cm, stage, plan):
            return StageOutcome.STOPPED
        keys = {"session_id": cm.request.session_id, "message_id": cm.request.assistant_message_id}
        with stage_span(stage.value, logger, **keys):
            error = await self._events.trigger(stage, cm)
        return await self.end_stage(cm, stage, plan, error)

    async def fallback(self, cm: ChatManage) -> StageOutcome:
        """Answer with the fallback, then complete the turn unless it was stopped."""
        await self._fallback.respond(cm)
        if cm.context.cancelled():
            return StageOutcome.STOPPED
        return await self.complete(cm)

    async def complete(self, cm: ChatManage) -> StageOutcome:
        """End the turn: the title, then ``complete``, then the after-turn work; STOPPED when a stop came first."""
        # A stop may have been requested from another process since the token last looked.
        if cm.context.cancel is not None:
            await cm.context.cancel.refresh()
        if cm.context.cancelled():
            return StageOutcome.STOPPED
        if self._titles is not None:
            # Before complete: a reader's stream ends at complete, and the title belongs in it.
            await self._titles.finish(cm)
            if cm.context.cancelled():
                return StageOutcome.STOPPED
        total_ms = int(time.time() * 1000) - cm.state.started_at_ms if cm.state.started_at_ms else 0
        await emit(
            cm,
            BusEventType.COMPLETE,
            event_id(cm, "complete"),
            done=True,
            data={"total_steps": cm.state.steps_run, "total_duration_ms": total_ms},
        )
        await self.after_turn(cm)
        return StageOutcome.COMPLETED

    async def after_turn(self, cm: ChatManage) -> None:
        """Work that follows a completed answer (memory extraction).

        Never visible to the reader, never failing the turn.
        """
        for hook in self._after_turn:
            try:
                await hook(cm)
            except Exception as exc:  # the turn is answered; what failed here is said in the log, and lost
                logger.error(
                    "after-turn work failed: the turn stays answered",
                    exc_info=True,
                    extra={
                        "session_id": cm.request.session_id,
                        "message_id": cm.request.assistant_message_id,
                        "work": getattr(hook, "__qualname__", repr(hook)),
                        **failed_call(exc),
                    },
                )

    async def run(self, cm: ChatManage, plan: Sequence[EventType]) -> StageOutcome:
        """The whole turn in this process: every stage, then the fallback or ``complete``."""
        if self._titles is not None:
            self._titles.start(cm)  # the title is written while the answer is
        for stage in plan:
            outcome = await self.run_stage(cm, stage, plan)
            if outcome == StageOutcome.SEARCH_NOTHING:
                return await self.fallback(cm)
            if outcome != StageOutcome.CONTINUE:
                return outcome
        return await self.complete(cm)
