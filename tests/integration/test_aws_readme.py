"""The README's curl sequence for the AWS stack (the block after ``<!-- aws-curl -->``), run as it stands by
bash and curl against the deployed stack: API Gateway → ingest_turn, the indexing function, the workflow's
pipeline_step tasks searching the real OpenSearch, stream_reader's function URL."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.cfn import ROOT
from tests.support.scripted_model import Script

NOTES = "# Leave\n\nEvery employee has 25 days of paid leave a year.\n\n## Sick days\n\nSick days need a note."


def _block() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- aws-curl -->\n```sh\n(.*?)\n```", readme, re.DOTALL)
    assert found, "README.md has no aws-curl block"
    return found.group(1)


def _frames(text: str) -> list[tuple[int, dict]]:
    """(id, data) of each SSE frame curl printed."""
    frames = []
    for raw in text.split("\n\n"):
        lines = dict(line.split(":", 1) for line in raw.splitlines() if ":" in line and not line.startswith(":"))
        if "id" in lines and "data" in lines:
            frames.append((int(lines["id"].strip()), json.loads(lines["data"].strip())))
    return frames


@pytest.mark.usefixtures("aws_search")
def test_the_readme_curl_sequence_runs_end_to_end_against_the_deployed_stack(aws, scripted, tmp_path: Path):
    (tmp_path / "notes.md").write_text(NOTES, encoding="utf-8")
    scripted.queue(
        Script.answer("Employees get 25 days ", '<ref id="c1"/>', "."),
        Script.answer(*[f"w{i} " for i in range(600)], delay=0.1),  # still streaming when it is stopped
    )
    script = _block()
    # Each command's output on its own, delimited: the block runs exactly as written between the markers.
    marked = "\n".join(
        f"{line}\necho '<<<{n}>>>'" if not line.endswith("\\") else line for n, line in enumerate(script.splitlines())
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "API": aws.stack.api_url.rstrip("/"),
        "STREAM": aws.stack.stream_url.rstrip("/"),
        "KEY": aws.key,
    }
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", marked],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    outputs = [part.strip("\n") for part in re.split(r"<<<\d+>>>\n?", done.stdout)]
    printed = [o for o in outputs if o]
    status, streamed, resumed, stopped = printed
    assert status == "indexed"
    frames = _frames(streamed)
    types = [data.get("response_type") for _, data in frames]
    assert types[-1] == "complete", types
    assert "references" in types
    answer = "".join(d.get("content", "") for _, d in frames if d.get("response_type") == "answer")
    assert "25 days" in answer
    assert [i for i, _ in _frames(resumed)] == [i for i, _ in frames if i > 2]
    assert stopped == "stopped"
