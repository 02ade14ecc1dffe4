"""The AWS event log: one DynamoDB item per event, partition ``{session_id}#{message_id}``, sort ``seq``."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from ragline.stream.base import StreamManager
from ragline.types import StreamEvent

PARTITION = "stream_key"
SORT = "seq"
TTL_ATTRIBUTE = "expires_at"
# The sequence number is still free: this is the first write of this offset, so the log stays gap-free and
# no two writers can both claim one offset.
SEQ_IS_FREE = "attribute_not_exists(#seq)"
# The next offsets this writer remembers, for the turns it wrote to last: a warm container writes many turns, and
# a forgotten offset only costs one read of the log's last event.
REMEMBERED_TURNS = 256


def _is_conditional_failure(error: ClientError) -> bool:
    return error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


class DynamoDBStreamManager(StreamManager):
    """Append-only with conditional writes; reads are consistent and paginated.

    Readers are not woken by appends (another process writes); they poll, backing off while idle.
    """

    def __init__(self, table: Any, ttl_seconds: int) -> None:
        """A log on the state ``table``; each event expires ``ttl_seconds`` after it is written."""
        self._table = table
        self._ttl = ttl_seconds
        self._next_seq: OrderedDict[str, int] = OrderedDict()

    # Writing --------------------------------------------------------------------------------------------
    def put_at(self, key: str, seq: int, event: StreamEvent) -> bool:
        """Write ``event`` at exactly ``seq``; False when that offset is taken (a retry, or another writer)."""
        try:
            self._table.put_item(
                Item={
                    PARTITION: key,
                    SORT: seq,
                    "event": event.model_dump_json(exclude={"seq"}),
                    TTL_ATTRIBUTE: int(time.time()) + self._ttl,
                },
                ConditionExpression=SEQ_IS_FREE,
                ExpressionAttributeNames={"#seq": SORT},
            )
        except ClientError as error:
            if _is_conditional_failure(error):
                return False
            raise
        return True

    def append_sync(self, key: str, event: StreamEvent) -> StreamEvent:
        """Append at the next free offset, retrying past offsets another writer took; the event with its ``seq``."""
        seq = self._next_seq.get(key)
        if seq is None:
            seq = self._last_seq(key) + 1
        while not self.put_at(key, seq, event):
            seq = self._last_seq(key) + 1
        self._remember(key, seq + 1, event)
        return event.model_copy(update={"seq": seq})

    def _remember(self, key: str, next_seq: int, event: StreamEvent) -> None:
        """Where the next event of ``key`` goes; forgotten once the turn ended, or when older turns crowd it out."""
        if event.is_terminal:
            self._next_seq.pop(key, None)
            return
        self._next_seq[key] = next_seq
        self._next_seq.move_to_end(key)
        while len(self._next_seq) > REMEMBERED_TURNS:
            self._next_seq.popitem(last=False)

    async def append_event(self, key: str, event: StreamEvent) -> StreamEvent:
        """Append (:meth:`append_sync` in a worker thread)."""
        return await asyncio.to_thread(self.append_sync, key, event)

    def append_if_open_sync(self, key: str, event: StreamEvent) -> StreamEvent | None:
        """Write at the offset right after the last event unless that one is terminal.

        Two writers racing for that offset cannot both win (conditional put): the loser reads the log again and, finding
        the winner's terminal event, writes nothing.
        """
        while True:
            last = self.last_event_sync(key)
            if last is not None and last.is_terminal:
                return None
            seq = 0 if last is None else last.seq + 1
            if self.put_at(key, seq, event):
                self._remember(key, seq + 1, event)
                return event.model_copy(update={"seq": seq})

    async def append_if_open(self, key: str, event: StreamEvent) -> StreamEvent | None:
        """Append unless the log already ended (:meth:`append_if_open_sync` in a worker thread)."""
        return await asyncio.to_thread(self.append_if_open_sync, key, event)

    # Reading --------------------------------------------------------------------------------------------
    def _query(self, **kwargs: Any) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        while True:
            page = self._table.query(ConsistentRead=True, **kwargs)
            items.extend(page.get("Items", []))
            last = page.get("LastEvaluatedKey")
            if not last or "Limit" in kwargs:
                return items
            kwargs["ExclusiveStartKey"] = last

    @staticmethod
    def _event(item: dict[str, Any]) -> StreamEvent:
        return StreamEvent.model_validate_json(item["event"]).model_copy(update={"seq": int(item[SORT])})

    def events_sync(self, key: str, from_offset: int = 0) -> list[StreamEvent]:
        """Events with ``seq >= from_offset`` in order, read consistently across pages."""
        items = self._query(KeyConditionExpression=Key(PARTITION).eq(key) & Key(SORT).gte(max(0, from_offset)))
        return [self._event(item) for item in items]

    async def get_events(self, key: str, from_offset: int = 0) -> list[StreamEvent]:
        """Events from ``from_offset`` (:meth:`events_sync` in a worker thread)."""
        return await asyncio.to_thread(self.events_sync, key, from_offset)

    def last_event_sync(self, key: str) -> StreamEvent | None:
        """The log's last event (one item read backwards), or None for an empty log."""
        items = self._query(KeyConditionExpression=Key(PARTITION).eq(key), ScanIndexForward=False, Limit=1)
        return self._event(items[0]) if items else None

    async def last_event(self, key: str) -> StreamEvent | None:
        """The log's last event (:meth:`last_event_sync` in a worker thread)."""
        return await asyncio.to_thread(self.last_event_sync, key)

    async def has_events(self, key: str) -> bool:
        """Whether the log holds any event: one item read, not the whole log."""
        return await self.last_event(key) is not None

    def _last_seq(self, key: str) -> int:
        last = self.last_event_sync(key)
        return -1 if last is None else last.seq


class StageLog(StreamManager):
    """The log as one pipeline step writes it: event ``i`` of the step goes to offset ``start + i``.

    ``start`` is claimed once per step (and read back on a retry), so a retried step rewrites the same
    offsets; conditional writes make those repeats no-ops instead of duplicates. The claim is made on the
    first event: most stages write none, and then pay for no claim at all. ``start`` may be an int (tests)
    or a coroutine function returning it.
    """

    def __init__(
        self,
        log: DynamoDBStreamManager,
        start: int | Callable[[], Awaitable[int]],
        writable: Callable[[], Awaitable[bool]] | None = None,
    ) -> None:
        """The step's view of ``log`` from offset ``start``: an offset, or a function that claims one on first append.

        ``writable``, asked before each write, fences a step that generates text: once it says False (another
        attempt owns the answer) nothing more of this step is written.
        """
        self._log = log
        self._claim = start if callable(start) else None
        self._next = start if isinstance(start, int) else -1
        self._writable = writable
        self._ended = False
        self.skipped = 0

    async def append_event(self, key: str, event: StreamEvent) -> StreamEvent:
        """Write the event at the step's next offset; an offset already taken is skipped and counted in ``skipped``."""
        if self._next < 0 and self._claim is not None:
            self._next = await self._claim()
        seq = self._next
        self._next += 1
        if not self._ended and self._writable is not None and not await self._writable():
            self._ended = True
        if self._ended:
            self.skipped += 1
            return event.model_copy(update={"seq": seq})
        written = await asyncio.to_thread(self._log.put_at, key, seq, event)
        if not written:
            self.skipped += 1
            # Taken by a retry's first attempt (go on: the same offsets), or by another writer that ended the
            # turn (a stop): then nothing more of this step belongs in the log.
            last = await self._log.last_event(key)
            self._ended = last is not None and last.is_terminal
        return event.model_copy(update={"seq": seq})

    async def append_if_open(self, key: str, event: StreamEvent) -> StreamEvent | None:
        """Append at the step's next offset unless the log has already ended; None when it has.

        The log has ended after a retry of the step that wrote the terminal event, or a turn ended by a sweep: a
        terminal event is the step's last, so no offset after it is needed.
        """
        last = await self._log.last_event(key)
        if last is not None and last.is_terminal:
            self.skipped += 1
            return None
        return await self.append_event(key, event)

    async def get_events(self, key: str, from_offset: int = 0) -> list[StreamEvent]:
        """Events of the whole log, as the underlying log reads them."""
        return await self._log.get_events(key, from_offset)

    async def last_event(self, key: str) -> StreamEvent | None:
        """The whole log's last event, as the underlying log reads it."""
        return await self._log.last_event(key)
