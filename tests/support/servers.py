"""Running ASGI apps with uvicorn on 127.0.0.1 in a background thread."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

from ragline.server.embedded import KEEP_ALIVE_S


class ServerThread:
    """uvicorn on a free 127.0.0.1 port; ``url`` once started, stopped on ``stop()``."""

    def __init__(self, app: Any) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2, timeout_keep_alive=KEEP_ALIVE_S
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    def start(self) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("server did not start")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 10) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=timeout)
        self._sock.close()


def free_port() -> int:
    """A 127.0.0.1 port free at the time of the call, for servers that bind it themselves (moto)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
