"""Questions with images on the deployed AWS stack (ChatVision=true): ingest_turn checks the images and keeps
them in the state bucket under its role, pipeline_step reads them back under its own and shows them to the
(scripted) vision model, and the model's description is kept on the user message in DynamoDB."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

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
