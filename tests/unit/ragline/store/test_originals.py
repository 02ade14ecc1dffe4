"""Originals kept as received, in both stores: files under the data directory and S3 objects (moto's server,
over HTTP, so a presigned link is fetched as a browser would fetch it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from botocore.config import Config as BotoConfig

from ragline.store.originals import FileOriginalStore, S3OriginalStore, content_disposition
from tests.support.servers import free_port

DATA = "野外手册: charge the radios every night.\n".encode()


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


def _s3(url: str, **config: Any) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=BotoConfig(signature_version="s3v4", **config),
    )


@pytest.fixture(params=["file", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "file":
        return FileOriginalStore(tmp_path / "originals")
    url = request.getfixturevalue("moto_url")
    client = _s3(url)
    bucket = f"state-{request.node.name.lower().replace('[', '-').replace(']', '')}"[:60]
    client.create_bucket(Bucket=bucket)
    return S3OriginalStore(client, bucket, presigner=_s3(url))


def test_an_original_is_kept_read_measured_and_deleted(store: Any) -> None:
    assert store.load("t1", "doc1") is None
    assert store.size("t1", "doc1") is None
    store.save("t1", "doc1", DATA)
    assert store.load("t1", "doc1") == DATA
    assert store.size("t1", "doc1") == len(DATA)
    assert store.load("t2", "doc1") is None  # another tenant's document of the same id is another file
    store.save("t1", "doc1", b"replaced")
    assert store.load("t1", "doc1") == b"replaced"
    store.delete("t1", "doc1")
    store.delete("t1", "doc1")  # deleting what is gone is not an error
    assert store.load("t1", "doc1") is None


@pytest.mark.parametrize("bad", ["../etc", "a/b", "", ".hidden", "x" * 200])
def test_ids_that_could_name_another_path_are_refused(store: Any, bad: str) -> None:
    with pytest.raises(ValueError, match="not a valid id"):
        store.save(bad, "doc", DATA)
    with pytest.raises(ValueError, match="not a valid id"):
        store.load("t1", bad)


def test_a_presigned_link_hands_the_original_over_with_its_name(moto_url: str) -> None:
    client = _s3(moto_url)
    client.create_bucket(Bucket="links")
    store = S3OriginalStore(client, "links", presigner=_s3(moto_url))
    store.save("t1", "doc1", DATA)
    link = store.link("t1", "doc1", filename="野外手册.md", media_type="text/markdown; charset=utf-8", inline=False)
    assert link is not None
    fetched = httpx.get(link, timeout=30)
    assert fetched.status_code == 200, fetched.text
    assert fetched.content == DATA
    assert fetched.headers["content-type"] == "text/markdown; charset=utf-8"
    assert fetched.headers["content-disposition"] == content_disposition("野外手册.md", inline=False)
    assert FileOriginalStore(Path("/nonexistent")).link("t1", "doc1", filename="a", media_type="b", inline=True) is None


def test_content_disposition_keeps_the_exact_name_and_an_ascii_fallback() -> None:
    assert content_disposition('report "final".pdf', inline=True) == (
        "inline; filename=\"report _final_.pdf\"; filename*=UTF-8''report%20%22final%22.pdf"
    )
    assert content_disposition("手册.md", inline=False) == (
        "attachment; filename=\"__.md\"; filename*=UTF-8''%E6%89%8B%E5%86%8C.md"
    )
