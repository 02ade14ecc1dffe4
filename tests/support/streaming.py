"""A streamed response for the tests' own servers whose body generator always finishes."""

from __future__ import annotations

from typing import Any

import anyio
from starlette.responses import StreamingResponse


class ClosingStreamingResponse(StreamingResponse):
    """A ``StreamingResponse`` that closes its body generator when the response ends, however it ends.

    On a client's disconnect Starlette stops pulling the generator but leaves it suspended at its ``yield``: its
    ``finally`` runs only when the garbage collector finalises it, which under load took more than 10 s (CI). A test
    server that records the end of a stream there (or releases an upstream response) needs it to run now.
    """

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            aclose = getattr(self.body_iterator, "aclose", None)
            if aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()
