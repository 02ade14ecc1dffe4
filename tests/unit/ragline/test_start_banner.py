"""``ragline serve``'s start banner: its example commands paste as they are, however narrow the terminal."""

from __future__ import annotations

import io

from rich.console import Console

from ragline.cli import start_banner

KEY = "rl-" + "k" * 32


def printed(width: int) -> list[str]:
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None, force_terminal=False)
    for line in start_banner("127.0.0.1", 8000, KEY):
        console.print(line, soft_wrap=True, highlight=False)
    return out.getvalue().splitlines()


def test_each_command_is_one_line_at_any_width() -> None:
    curl = f"curl -H 'X-API-Key: {KEY}' http://127.0.0.1:8000/api/v1/knowledge-bases"
    for width in (40, 80, 200):
        lines = [line.strip() for line in printed(width)]
        assert curl in lines, (width, lines)
        assert 'ragline ask "How do I resume a stream?"' in lines
        assert f"API key: {KEY}" in lines
        # Nothing of a command spills onto a line of its own.
        assert not [line for line in lines if line.startswith(("http://127.0.0.1:8000/api", "-H"))]


def test_the_banner_names_the_chat_page() -> None:
    assert "the chat page: http://127.0.0.1:8000/" in printed(200)[0]
