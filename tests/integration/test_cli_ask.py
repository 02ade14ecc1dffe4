"""`ragline ask` against a running server: the answer streams to the terminal whatever the SSE stream carries.

A slow model (a local GGUF on 2 cores, a remote model thinking) leaves the stream idle long enough for the
server's ``: ping`` comments; the CLI must read through them. httpx-sse reports a comment after an ``id:`` line
as an event with empty data, which the CLI once handed to ``json.loads`` and died on.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from ragline.cli import app
from tests.support.scripted_model import Script

DOCS = {"Guide": "# Guide\n\nThe reactor cools with heavy water. Heavy water slows neutrons down."}


def test_ask_reads_through_the_servers_pings(ragline, scripted, monkeypatch: pytest.MonkeyPatch) -> None:
    ragline.create_kb("kb", DOCS)
    ragline.container.config.stream.ping_interval_s = 1
    script = Script.answer("The reactor cools ", "with heavy water.")
    script.pieces[1].delay = 2.5  # the stream idles past two pings before the second piece
    scripted.queue(script)
    monkeypatch.setenv("RAGLINE_API_KEY", ragline.key)

    result = CliRunner().invoke(app, ["ask", "How does the reactor cool?", "--url", ragline.url])

    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "The reactor cools with heavy water." in result.output
    assert scripted.answers[-1].completed
