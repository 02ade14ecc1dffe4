"""Maven, the one client ragline uses for Maven Central: the engines' jars and the embedding models' jars.

Standard library only: ``make install`` and ``make test`` run the scripts that import this before anything else is
known to work.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


class MavenUnavailable(Exception):
    """Maven cannot fetch here (no ``mvn``, no Java, a failed resolution); the message says why, in one line."""


def maven() -> str:
    """The ``mvn`` on PATH; :class:`MavenUnavailable` when there is none."""
    found = shutil.which("mvn")
    if not found:
        raise MavenUnavailable("no `mvn` on PATH")
    return found


def run(arguments: list[str], *, what: str, timeout_s: float, m2: str = "") -> None:
    """``mvn -q -B`` with ``arguments`` (``m2``: another local repository than ~/.m2).

    :class:`MavenUnavailable` with the tail of Maven's output when it fails or runs past ``timeout_s``.
    """
    command = [maven(), "-q", "-B", *arguments]
    if m2:
        command.append(f"-Dmaven.repo.local={m2}")
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise MavenUnavailable(f"{what}: Maven did not finish in {timeout_s:.0f} s") from None
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
        raise MavenUnavailable(f"{what}: Maven failed: {' | '.join(tail)}")


def copy_artifact(coordinates: str, directory: Path, *, timeout_s: float, m2: str = "") -> Path:
    """One artifact (``group:artifact:version``, no dependencies) copied into ``directory``; its path."""
    _, artifact, version = coordinates.split(":")
    directory.mkdir(parents=True, exist_ok=True)
    run(
        ["dependency:copy", f"-Dartifact={coordinates}", "-Dtransitive=false", f"-DoutputDirectory={directory}"],
        what=artifact,
        timeout_s=timeout_s,
        m2=m2,
    )
    jar = directory / f"{artifact}-{version}.jar"
    if not jar.is_file():
        raise MavenUnavailable(f"{artifact}: Maven reported success but wrote no {jar.name}")
    return jar
