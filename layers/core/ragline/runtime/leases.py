"""Which process runs which turn, in the embedded runtime: the answer to "is this turn's runner alive?".

Every :class:`~ragline.runtime.embedded.LocalRunner` registers itself as a runner (host, pid, the
process's start time, a heartbeat) and takes a lease on each turn it runs. A turn's runner is gone when:
- its lease names a runner of this process that no longer holds it (a runner closed without ending it);
- its runner's process on this host is gone: no such pid, or a pid reused by a newer process (checked at
  once, so a restart after kill -9 ends the orphaned turns before it serves anything);
- its runner is on another host (a shared data directory) and missed its heartbeats for ``ttl_s``;
- it has no lease at all and its message is older than ``unclaimed_grace_s`` (a turn is accepted
  before it is launched; a crash between the two leaves it unclaimed).
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
import uuid
from pathlib import Path

from ragline.config import RecoveryConfig
from ragline.runtime.recovery import OpenTurn
from ragline.store.db import Database


def _boot_id() -> str:
    with contextlib.suppress(OSError):
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return ""


def process_start(pid: int) -> str:
    """When process ``pid`` started (clock ticks since boot, Linux); "" where that cannot be read."""
    with contextlib.suppress(OSError, IndexError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        # Field 22, counted after the command name, which is in parentheses and may hold spaces.
        return stat.rsplit(")", 1)[1].split()[19]
    return ""


def process_alive(pid: int, started: str) -> bool:
    """Whether the process ``pid`` that started at ``started`` still runs (a zombie does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, owned by someone else
    with contextlib.suppress(OSError, IndexError):
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state in {"Z", "X"}:
            return False
    return not started or process_start(pid) == started


HOST = f"{socket.gethostname()}/{_boot_id()}"


class SqliteTurnLeases:
    """Runners and their turns in the embedded database (tables ``turn_runners`` and ``turn_leases``)."""

    def __init__(
        self,
        db: Database,
        *,
        ttl_s: float = RecoveryConfig().runner_ttl_s,
        unclaimed_grace_s: float = RecoveryConfig().unclaimed_grace_s,
    ) -> None:
        """Leases in ``db``; a runner silent for ``ttl_s`` is gone, an unclaimed turn gets ``unclaimed_grace_s`` to be claimed."""
        self._db = db
        self._ttl = ttl_s
        self._unclaimed_grace = unclaimed_grace_s
        self.runner_id = uuid.uuid4().hex
        self._pid = os.getpid()
        self._held: set[str] = set()
        self._registered = False

    # The runner's side ---------------------------------------------------------------------------------
    def register(self) -> None:
        """Record this runner (host, pid and process start) once, before its first lease."""
        if self._registered:
            return
        self._db.execute(
            "INSERT OR REPLACE INTO turn_runners (id, host, pid, process_start, heartbeat_at) VALUES (?, ?, ?, ?, ?)",
            (self.runner_id, HOST, self._pid, process_start(self._pid), time.time()),
        )
        self._registered = True
        _LIVE_RUNNERS[self.runner_id] = self

    def acquire(self, key: str) -> None:
        """Record ``key``'s turn as this runner's."""
        self.register()
        self._held.add(key)
        self._db.execute(
            "INSERT OR REPLACE INTO turn_leases (stream_key, runner_id, acquired_at) VALUES (?, ?, ?)",
            (key, self.runner_id, time.time()),
        )

    def release(self, key: str) -> None:
        """Give up this runner's lease on ``key``."""
        self._held.discard(key)
        self._db.execute("DELETE FROM turn_leases WHERE stream_key = ? AND runner_id = ?", (key, self.runner_id))

    def heartbeat(self) -> None:
        """Tell other processes this runner is alive."""
        if self._registered:
            self._db.execute("UPDATE turn_runners SET heartbeat_at = ? WHERE id = ?", (time.time(), self.runner_id))

    def close(self) -> None:
        """The runner is done: its remaining leases (turns it did not end) now read as gone."""
        self._held.clear()
        _LIVE_RUNNERS.pop(self.runner_id, None)
        if self._registered:
            with self._db.transaction() as conn:
                conn.execute("DELETE FROM turn_leases WHERE runner_id = ?", (self.runner_id,))
                conn.execute("DELETE FROM turn_runners WHERE id = ?", (self.runner_id,))
            self._registered = False

    def holds(self, key: str) -> bool:
        """True while this runner holds ``key``'s turn."""
        return key in self._held

    def claimed(self, key: str) -> bool:
        """Whether any runner holds the turn (this one or another process's)."""
        return self._db.query_one("SELECT 1 FROM turn_leases WHERE stream_key = ?", (key,)) is not None

    # The recovery's side (RunnerLiveness) ------------------------------------------------------------------
    async def alive(self, turn: OpenTurn) -> bool:
        """Whether the turn's runner is alive: by pid on this host, by heartbeat elsewhere; unclaimed turns get a grace period."""
        row = self._db.query_one(
            "SELECT l.runner_id, r.host, r.pid, r.process_start, r.heartbeat_at FROM turn_leases AS l"
            " LEFT JOIN turn_runners AS r ON r.id = l.runner_id WHERE l.stream_key = ?",
            (turn.key,),
        )
        if row is None:
            return turn.age_s(time.time()) < self._unclaimed_grace
        if row["runner_id"] == self.runner_id:
            return self.holds(turn.key)
        if row["host"] is None:
            return False  # its runner closed
        if row["host"] == HOST:
            if int(row["pid"]) == self._pid:
                # Another runner of this process (tests run several); its own object knows.
                return _LIVE_RUNNERS.get(str(row["runner_id"]), _NOT_LIVE).holds(turn.key)
            return process_alive(int(row["pid"]), str(row["process_start"]))
        return time.time() - float(row["heartbeat_at"]) < self._ttl


class _NotLive:
    def holds(self, key: str) -> bool:
        return False


_NOT_LIVE = _NotLive()
# The lease books of this process's runners, by runner id (a runner adds its own when it registers).
_LIVE_RUNNERS: dict[str, SqliteTurnLeases] = {}
