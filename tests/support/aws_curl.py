"""The README's curl sequence for the AWS stack (the block after ``<!-- aws-curl -->``): run as it stands by bash
and curl against an API URL, a stream URL and a tenant's key, and what it must print. Shared by the deployed-stack
test (``test_aws_readme``) and the LocalStack deployment's (``test_deploy_local``)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import httpx

from tests.support.cfn import ROOT
from tests.support.polling import CLIENT_TIMEOUT
from tests.support.scripted_model import Script
from tests.support.sse import joined_runs

NOTES = "# Leave\n\nEvery employee has 25 days of paid leave a year.\n\n## Sick days\n\nSick days need a note."


def block() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- aws-curl -->\n```sh\n(.*?)\n```", readme, re.DOTALL)
    assert found, "README.md has no aws-curl block"
    return found.group(1)


def frames(text: str) -> list[tuple[int, dict[str, Any]]]:
    """(id, data) of each SSE frame curl printed."""
    found = []
    for raw in text.split("\n\n"):
        lines = dict(line.split(":", 1) for line in raw.splitlines() if ":" in line and not line.startswith(":"))
        if "id" in lines and "data" in lines:
            found.append((int(lines["id"].strip()), json.loads(lines["data"].strip())))
    return found


def queue_answers(scripted: Any) -> None:
    """The scripted model's answers to the block's two questions: the first cited, the second still streaming
    when the block stops it."""
    scripted.queue(
        Script.answer("Employees get 25 days ", '<ref id="c1"/>', "."),
        Script.answer(*[f"w{i} " for i in range(600)], delay=0.1),
    )


def run_block(work_dir: Path, api: str, stream: str, key: str) -> list[str]:
    """The block run by bash as written (``notes.md`` beside it), each command's output on its own: what the
    commands printed, in order (the empty ones left out)."""
    (work_dir / "notes.md").write_text(NOTES, encoding="utf-8")
    marked = "\n".join(
        f"{line}\necho '<<<{n}>>>'" if not line.endswith("\\") else line for n, line in enumerate(block().splitlines())
    )
    env = {"PATH": "/usr/bin:/bin", "API": api.rstrip("/"), "STREAM": stream.rstrip("/"), "KEY": key}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", marked],
        cwd=work_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"exit {done.returncode} after:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    outputs = [part.strip("\n") for part in re.split(r"<<<\d+>>>\n?", done.stdout)]
    return [o for o in outputs if o]


def assert_sequence(printed: list[str], api: str, key: str) -> None:
    """The document indexed, the answer streamed to ``complete`` with its references, the stream resumed after
    event 2 with exactly the later frames, the second turn stopped, and the first answer stored as streamed (read
    back through the API: the tenant's one session, its first assistant message)."""
    status, streamed, resumed, stopped = printed
    assert status == "indexed"
    streamed_frames = frames(streamed)
    types = [data.get("response_type") for _, data in streamed_frames]
    assert types[-1] == "complete", types
    assert "references" in types
    answer = "".join(d.get("content", "") for _, d in streamed_frames if d.get("response_type") == "answer")
    assert "25 days" in answer
    # Exactly the later frames, as a client makes of them: the resumed read joins the answer's chunks already in the
    # log, which the first read may have had one by one.
    later = frames(resumed)
    assert later[-1][0] == streamed_frames[-1][0]
    assert min(i for i, _ in later) > 2
    assert _runs(later) == _runs([(i, d) for i, d in streamed_frames if i > 2])
    assert stopped == "stopped"
    with httpx.Client(base_url=api.rstrip("/"), headers={"X-API-Key": key}, timeout=CLIENT_TIMEOUT) as client:
        sessions = client.get("/api/v1/sessions")
        assert sessions.status_code == 200, sessions.text
        (session,) = sessions.json()["data"]
        messages = client.get(f"/api/v1/sessions/{session['id']}/messages")
        assert messages.status_code == 200, messages.text
    stored = next(m for m in messages.json()["data"] if m["role"] == "assistant")
    assert stored["content"] == answer
    assert stored["is_completed"] is True


def _runs(numbered: list[tuple[int, dict[str, Any]]]) -> list[tuple[str, str, bool]]:
    return joined_runs((d.get("response_type", ""), d.get("content", ""), bool(d.get("done"))) for _, d in numbered)
