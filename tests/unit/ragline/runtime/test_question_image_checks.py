"""A question's images: checked by their bytes before anything is stored, kept under handles of their own."""

from __future__ import annotations

import base64
import io

import pytest

from ragline.ingest.images import load_image
from ragline.models.base import data_url
from ragline.runtime.question_images import (
    MAX_QUESTION_IMAGES,
    BadQuestionImage,
    keep_question_images,
    read_question_images,
)
from ragline.runtime.turns import ImageAttachment
from ragline.store.originals import FileOriginalStore


def png(width: int = 64, height: int = 48) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), "white").save(out, "PNG")
    return out.getvalue()


@pytest.fixture
def originals(tmp_path):
    return FileOriginalStore(tmp_path / "originals")


def test_data_uris_and_bare_base64_are_kept_and_read_back(originals):
    raw = png()
    attachments = [
        ImageAttachment(data=data_url(raw, "image/png"), caption="a chart"),
        ImageAttachment(data=base64.b64encode(raw).decode()),
    ]
    images = read_question_images(attachments, "t1", originals)
    kept = keep_question_images(images, "t1", originals)
    assert [k["caption"] for k in kept] == ["a chart", ""]
    assert kept[0]["url"].startswith("resource://images/q")
    assert kept[0]["url"].endswith("/1")
    assert [load_image(originals, "t1", k["url"]) for k in kept] == [raw, raw]
    assert load_image(originals, "t2", kept[0]["url"]) is None  # another tenant's handle reads nothing

    # A kept image is named again by its url, never copied.
    again = read_question_images([ImageAttachment(url=kept[0]["url"])], "t1", originals)
    assert keep_question_images(again, "t1", originals)[0]["url"] == kept[0]["url"]


@pytest.mark.parametrize(
    ("attachments", "field", "words"),
    [
        ([ImageAttachment(data="data:image/png;base64,@@@")], "images[0].data", "not base64"),
        ([ImageAttachment(data=base64.b64encode(b"%PDF-1.7 not an image").decode())], "images[0].data", "PNG, JPEG"),
        ([ImageAttachment(data=data_url(png(8, 8), "image/png"))], "images[0].data", "at least 32"),
        (
            [ImageAttachment(data=data_url(png(), "image/png")), ImageAttachment(url="https://x/y.png")],
            "images[1].url",
            "stored",
        ),
        ([ImageAttachment(caption="nothing else")], "images[0]", "needs data"),
        ([ImageAttachment(data=data_url(png(), "image/png"))] * (MAX_QUESTION_IMAGES + 1), "images", "at most 4"),
    ],
)
def test_a_bad_image_is_refused_naming_its_field(originals, attachments, field, words):
    with pytest.raises(BadQuestionImage) as refused:
        read_question_images(attachments, "t1", originals)
    assert refused.value.field == field
    assert words in str(refused.value)


def test_an_image_over_5_mb_is_refused_before_it_is_decoded(originals):
    big = b"\x89PNG\r\n\x1a\n" + b"\0" * (5 * 1024 * 1024)
    with pytest.raises(BadQuestionImage) as refused:
        read_question_images([ImageAttachment(data=base64.b64encode(big).decode())], "t1", originals)
    assert (refused.value.field, "limit" in str(refused.value)) == ("images[0].data", True)
