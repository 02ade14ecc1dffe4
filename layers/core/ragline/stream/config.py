"""How a turn's log is written and read: the ``stream`` section of config/config.yaml.

It lives beside the code that reads it (the stream package sits below ``ragline.config``), with the defaults the
signatures take.
"""

from __future__ import annotations

from pydantic import BaseModel


class StreamConfig(BaseModel):
    """How a turn's log is written (answer chunks batched) and read (SSE pings, polling, limits)."""

    # Answer chunks are written to the log at most once per this window (a chunk that comes a window after the last
    # write goes at once; sooner ones wait, joined, for at most this long, or this many characters): on AWS, where
    # each event is a DynamoDB write that is paid for.
    batch_max_delay_ms: int = 100
    # The same in the embedded server, whose events are rows of a local SQLite table: frames four times as often,
    # for about a fifth of a core more with 50 answers streaming at once (bench/mixed_load.py, README).
    embedded_batch_max_delay_ms: int = 25
    batch_max_chars: int = 2048
    ping_interval_s: float = 15.0
    # Readers poll at least this often, so appends by another process are seen without a wake-up.
    poll_min_wait_s: float = 0.05
    poll_max_wait_s: float = 1.0
    # Unset in the embedded server; stream_reader ends responses before its function timeout.
    max_stream_seconds: float | None = None
    # When the server shuts down, a reader's response may continue this long, so a draining turn's last
    # event reaches it (the embedded server sets it from recovery.shutdown_grace_s).
    shutdown_drain_s: float = 0.0


# The defaults, for signatures: config/config.yaml lists the same values (tests/unit/ragline/test_config.py).
DEFAULTS = StreamConfig()
