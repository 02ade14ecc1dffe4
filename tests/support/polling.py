"""Waiting for a condition in tests that watch something running elsewhere (a server thread, a browser)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_until(predicate: Callable[[], Any], timeout: float = 20.0, interval: float = 0.03) -> Any:
    """``predicate()``'s first truthy value, polled every ``interval`` s; fails the test after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not met in time")
