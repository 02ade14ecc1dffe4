"""The append-only event log of a turn, its replay and its SSE framing."""

from ragline.stream.base import StreamManager, stream_key
from ragline.stream.coalesce import coalesce
from ragline.stream.memory import InMemoryStreamManager
from ragline.stream.sqlite import SqliteStreamManager

__all__ = ["InMemoryStreamManager", "SqliteStreamManager", "StreamManager", "coalesce", "stream_key"]
