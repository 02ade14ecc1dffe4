"""Waiting for a condition in tests that watch something running elsewhere (a server thread, a browser)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx


def wait_until(predicate: Callable[[], Any], timeout: float = 60.0, interval: float = 0.03) -> Any:
    """``predicate()``'s first truthy value, polled every ``interval`` s; fails the test after ``timeout`` s.

    The default bounds only a failure: the wait ends when the condition holds, and a loaded 2-core machine took
    over 20 s for what takes one idle (a clean clone's .ci/run with both cores busy)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not met in time")


# The tests' HTTP clients wait for a reply as long as it takes (a request under a loaded machine's OCR or indexing
# may take minutes): only connecting is bounded, and pytest-timeout is the safety net against a hang. A fixed read
# timeout stood in for "the server answered" and failed the suite under load (ReadTimeouts while OCR ran).
CLIENT_TIMEOUT = httpx.Timeout(None, connect=60.0)
