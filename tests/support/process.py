"""``ragline serve`` as a real subprocess on a free 127.0.0.1 port, for crash, restart and shutdown tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.support.polling import CLIENT_TIMEOUT
from tests.support.servers import free_port

ROOT = Path(__file__).resolve().parents[2]


class RaglineProcess:
    """One data directory; ``start()`` / ``kill()`` / ``terminate()`` / ``start()`` again on a new port.

    ``root`` and ``python`` say which checkout serves (default: this one, with this interpreter); a benchmark
    runs another checkout's code with its own ``.venv/bin/python`` to compare it with this one.
    """

    def __init__(
        self,
        data_dir: Path,
        chat_url: str,
        *,
        api_key: str = "rl-process-test-key",
        root: Path = ROOT,
        python: str = sys.executable,
        **env: str,
    ) -> None:
        self.data_dir = data_dir
        self.root = root
        self.python = python
        self.api_key = api_key
        self.env = {
            **os.environ,
            "RAGLINE_DATA_DIR": str(data_dir),
            "RAGLINE_API_KEY": api_key,
            "RAGLINE_CHAT_BASE_URL": chat_url,
            "RAGLINE_CHAT_MODEL": "scripted",
            "RAGLINE_CHAT_API_KEY": "test",
            "RAGLINE_LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
            **env,
        }
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.log_path = data_dir.parent / "serve.log"
        self.starts = 0

    def start(self, timeout: float = 90.0) -> RaglineProcess:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.starts += 1
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [self.python, "-m", "ragline.cli", "serve", "--port", str(port)],
            cwd=self.root,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ragline serve exited with {self.proc.returncode}:\n{self.log()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"ragline serve did not start:\n{self.log()}")

    def client(self, **kwargs: object) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"X-API-Key": self.api_key}, timeout=CLIENT_TIMEOUT, **kwargs)

    def kill(self) -> None:
        """kill -9: no handler runs, nothing is flushed or ended."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def terminate(self) -> None:
        """SIGTERM: the server drains (see ragline.server.embedded); returns at once."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)

    def wait(self, timeout: float = 60.0) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout=timeout)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
