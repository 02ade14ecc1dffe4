"""The X-Ray daemon a traced Lambda function sends its segments to, standing in on this machine.

Lambda runs a daemon beside every function whose ``TracingConfig`` is ``Active`` and points the SDK at it
(``AWS_XRAY_DAEMON_ADDRESS``); the SDK sends each finished subsegment as one UDP datagram: a JSON header line
(``{"format": "json", "version": 1}``), a newline, then the segment document. This one keeps the documents.
"""

from __future__ import annotations

import json
import secrets
import socket
import threading
import time
from typing import Any

# The largest datagram the SDK sends (its emitter's limit is the daemon's 64 KiB).
_MAX_DATAGRAM = 65_536


def trace_header(sampled: bool) -> str:
    """A new ``Lambda-Runtime-Trace-Id``: a root trace id (its first part the time), a parent, the sampling."""
    root = f"1-{int(time.time()):08x}-{secrets.token_hex(12)}"
    return f"Root={root};Parent={secrets.token_hex(8)};Sampled={1 if sampled else 0}"


class XRayDaemon:
    """Receives segment documents on a UDP port of 127.0.0.1 and keeps them in arrival order."""

    def __init__(self) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.bind(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self._lock = threading.Lock()
        self._documents: list[dict[str, Any]] = []
        self.malformed: list[bytes] = []
        self._thread = threading.Thread(target=self._receive, name="xray-daemon", daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def environment(self) -> dict[str, str]:
        """What Lambda sets in a traced function's sandbox to reach its daemon."""
        return {
            "AWS_XRAY_DAEMON_ADDRESS": self.address,
            "_AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1",
            "_AWS_XRAY_DAEMON_PORT": str(self.port),
            "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
        }

    def documents(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._documents)

    def subsegments(self, trace_id: str | None = None) -> list[dict[str, Any]]:
        """The subsegments received (of one trace), nested ones included, each once."""
        found: list[dict[str, Any]] = []

        def walk(document: dict[str, Any]) -> None:
            if document.get("type") == "subsegment" or "parent_id" in document:
                found.append(document)
            for child in document.get("subsegments", []):
                walk(child)

        for document in self.documents():
            if trace_id is None or document.get("trace_id") == trace_id:
                walk(document)
        return found

    def _receive(self) -> None:
        while True:
            try:
                datagram = self._socket.recv(_MAX_DATAGRAM)
            except OSError:
                return  # closed
            header, _, body = datagram.partition(b"\n")
            try:
                if json.loads(header) != {"format": "json", "version": 1}:
                    raise ValueError("unknown header")
                document = json.loads(body)
            except ValueError:
                with self._lock:
                    self.malformed.append(datagram)
                continue
            with self._lock:
                self._documents.append(document)

    def stop(self) -> None:
        self._socket.close()
