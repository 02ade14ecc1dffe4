"""Questions with images on the deployed AWS stack (ChatVision=true): ingest_turn checks the images and keeps
them in the state bucket under its role, pipeline_step reads them back under its own and shows them to the
(scripted) vision model, and the model's description is kept on the user message in DynamoDB."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ragline.models.base import data_url
from tests.support.images import blank_image
from tests.support.polling import wait_until
from tests.support.scripted_model import Script
from tests.support.serverless import DeployedStack, StackClient, checked_client, scripted_stack


@pytest.fixture(scope="module")
def vision_stack(request, tmp_path_factory, scripted) -> Iterator[DeployedStack]:
    with scripted_stack(request, tmp_path_factory.mktemp("aws-vision"), scripted, ChatVision="true") as stack:
        yield stack


@pytest.fixture
def vision(vision_stack: DeployedStack) -> Iterator[StackClient]:
    with checked_client(vision_stack) as client:
        yield client


def test_a_question_image_is_kept_by_ingest_turn_and_shown_to_the_vision_model_by_pipeline_step(
    vision: StackClient, scripted: Any
) -> None:
    since = len(vision.stack.calls())
    image = blank_image(64, 64)
    described = "A plain white square."
    scripted.understanding.append(
        Script.answer(
            json.dumps({"rewrite_query": "What is this?", "intent": "kb_search", "image_description": described})
        )
    )
    session = vision.session([vision.kb()])
    ids = vision.ask(session, "What is this?", images=[{"data": data_url(image, "image/png"), "caption": "mine"}])
    frames = vision.frames(ids)
    assert frames[-1].type == "complete", [f.type for f in frames]

    [part_text, part_image] = scripted.understandings[-1].messages[-1]["content"]
    assert part_text["type"] == "text"
    assert part_image["image_url"]["url"] == data_url(image, "image/png")  # the same bytes, read back from S3
    calls = vision.stack.calls()[since:]
    assert {c.function for c in calls if c.action == "s3:PutObject"} >= {"IngestTurnFunction"}
    assert "PipelineStepFunction" in {c.function for c in calls if c.action == "s3:GetObject"}

    def caption() -> str:
        [question] = [m for m in vision.messages(session) if m["role"] == "user"]
        return str(question["images"][0]["caption"])

    assert wait_until(lambda: caption() == described, timeout=60)


def test_a_bad_image_is_refused_by_api_gateway_naming_the_field(vision: StackClient) -> None:
    session = vision.session()
    reply = vision.api.post(
        f"/api/v1/sessions/{session}/questions",
        json={"query": "What is this?", "images": [{"data": data_url(b"%PDF-1.7", "image/png")}]},
    )
    assert reply.status_code == 422, reply.text
    assert reply.json()["error"]["field"] == "images[0].data"
    assert vision.messages(session) == []


def noisy_png(width: int = 96, height: int = 64) -> bytes:
    """A PNG of random pixels: every byte value occurs, so a body read as text would come back changed."""
    import io
    import random

    from PIL import Image

    picture = Image.frombytes("RGB", (width, height), random.Random(14).randbytes(width * height * 3))
    out = io.BytesIO()
    picture.save(out, "PNG")
    return out.getvalue()


def test_a_question_image_comes_back_through_api_gateway_byte_for_byte(vision: StackClient, scripted: Any) -> None:
    image = noisy_png()
    scripted.understanding.append(
        Script.answer(json.dumps({"rewrite_query": "What is this?", "intent": "kb_search", "image_description": ""}))
    )
    session = vision.session()
    ids = vision.ask(session, "What is this?", images=[{"data": data_url(image, "image/png")}])
    [question] = [m for m in vision.messages(session) if m["role"] == "user"]
    url = question["images"][0]["url"]
    calls = len(vision.stack.calls())

    reply = vision.api.get("/api/v1/images", params={"url": url})
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"] == "image/png"
    assert reply.content == image  # Mangum base64-encodes image/png; API Gateway decodes it
    assert "IngestTurnFunction" in {c.function for c in vision.stack.calls()[calls:] if c.action == "s3:GetObject"}
    # Another tenant's key gets a 404 naming url, as for a handle nothing is kept under.
    _, other_key = vision.stack.create_tenant(f"image-reader-{ids['assistant_message_id'][:8]}")
    other = vision.api.get("/api/v1/images", params={"url": url}, headers={"X-API-Key": other_key})
    assert other.status_code == 404, other.text
    assert other.json()["error"]["field"] == "url"
    assert vision.frames(ids)[-1].type == "complete"


def test_an_image_too_large_for_a_lambda_reply_answers_a_presigned_link_to_the_same_bytes(
    vision: StackClient, scripted: Any
) -> None:
    # About 4 MB of random pixels: the question (base64 in JSON) fits a 6 MB invocation, but the image's
    # base64 reply would pass limits.original_inline_max_bytes (5 MB).
    image = noisy_png(1200, 1120)
    assert 4 * ((len(image) + 2) // 3) > 5 * 1024 * 1024, len(image)
    scripted.understanding.append(
        Script.answer(json.dumps({"rewrite_query": "What is this?", "intent": "kb_search", "image_description": ""}))
    )
    session = vision.session()
    ids = vision.ask(session, "What is this?", images=[{"data": data_url(image, "image/png")}])
    [question] = [m for m in vision.messages(session) if m["role"] == "user"]

    reply = vision.api.get("/api/v1/images", params={"url": question["images"][0]["url"]})
    assert reply.status_code == 307, reply.text
    fetched = httpx.get(reply.headers["location"], timeout=60)
    assert fetched.status_code == 200
    assert fetched.content == image
    assert vision.frames(ids)[-1].type == "complete"
