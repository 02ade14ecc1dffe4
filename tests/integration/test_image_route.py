"""``GET /api/v1/images?url=``: a stored image by its handle, with the media type read from its bytes, for its
own tenant only; a handle nothing is kept under is a 404 naming ``url``, a malformed one a 422."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from ragline.models.base import data_url
from tests.support.images import blank_image, latin_font, render_text


def _user_images(ragline: Any, session: str) -> list[dict[str, Any]]:
    [question] = [m for m in ragline.messages(session) if m["role"] == "user"]
    return list(question["images"])


@pytest.mark.parametrize(
    ("image_format", "media_type"),
    [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("WEBP", "image/webp"), ("GIF", "image/gif")],
)
def test_a_question_image_comes_back_with_its_bytes_and_media_type(ragline, image_format, media_type) -> None:
    picture = blank_image(48, 40, image_format)
    session = ragline.session([])
    ragline.ask(session, "What is this?", images=[{"data": data_url(picture, media_type), "caption": "mine"}])
    [image] = _user_images(ragline, session)

    reply = ragline.client.get("/api/v1/images", params={"url": image["url"]})
    assert reply.status_code == 200, reply.text
    assert reply.content == picture
    assert reply.headers["content-type"] == media_type
    assert reply.headers["cache-control"].startswith("private, max-age=")
    assert reply.headers["x-content-type-options"] == "nosniff"


def test_a_document_image_is_served_by_its_chunks_handle(ragline) -> None:
    font = latin_font()
    assert font is not None, "no Latin font on this machine (make test installs DejaVu)"
    picture = render_text(["Invoice 48213"], font=font, size=40)
    kb = ragline.create_kb("scans")
    added = ragline.client.post(
        f"/api/v1/knowledge-bases/{kb}/documents?wait=true", files={"file": ("invoice.png", picture, "image/png")}
    )
    assert added.status_code == 201, added.text
    chunks = ragline.client.get(f"/api/v1/chunks/{added.json()['data']['id']}").json()["data"]
    [chunk] = [c for c in chunks if c["chunk_type"] == "image_ocr"]
    reply = ragline.client.get("/api/v1/images", params={"url": chunk["metadata"]["image_url"]})
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"] == "image/png"
    # The upload is kept as it came (a PNG stays the same bytes).
    assert reply.content == picture


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/cat.png",
        "resource://images/q1",
        "resource://images/../x/1",
        "resource://images/-x/1",
        "res://0001",
        "",
    ],
)
def test_a_malformed_handle_is_a_422_naming_url(ragline, url) -> None:
    reply = ragline.client.get("/api/v1/images", params={"url": url})
    assert reply.status_code == 422, reply.text
    assert reply.json()["error"]["field"] == "url"


def test_a_missing_url_is_a_422_naming_it(ragline) -> None:
    reply = ragline.client.get("/api/v1/images")
    assert reply.status_code == 422, reply.text
    assert reply.json()["error"]["field"] == "url"


def test_an_unknown_handle_is_a_404_naming_url(ragline) -> None:
    reply = ragline.client.get("/api/v1/images", params={"url": "resource://images/qnothing/1"})
    assert reply.status_code == 404, reply.text
    assert reply.json()["error"] == {**reply.json()["error"], "type": "not_found", "field": "url"}


def test_without_a_key_the_route_answers_401(ragline) -> None:
    session = ragline.session([])
    ragline.ask(session, "What is this?", images=[{"data": data_url(blank_image(40, 40), "image/png")}])
    [image] = _user_images(ragline, session)
    reply = httpx.get(f"{ragline.url}/api/v1/images", params={"url": image["url"]})
    assert reply.status_code == 401


def test_a_search_hit_on_an_image_passage_carries_its_image_info(ragline) -> None:
    font = latin_font()
    assert font is not None, "no Latin font on this machine (make test installs DejaVu)"
    kb = ragline.create_kb("scans")
    picture = render_text(["Invoice 48213"], font=font, size=40)
    added = ragline.client.post(
        f"/api/v1/knowledge-bases/{kb}/documents?wait=true", files={"file": ("invoice.png", picture, "image/png")}
    )
    assert added.status_code == 201, added.text
    reply = ragline.client.post("/api/v1/knowledge-search", json={"query": "invoice 48213", "knowledge_base_ids": [kb]})
    [hit] = [h for h in reply.json()["data"] if h["chunk_type"] == "image_ocr"]
    [info] = json.loads(hit["image_info"])
    assert ragline.client.get("/api/v1/images", params={"url": info["url"]}).content == picture
