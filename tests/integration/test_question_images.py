"""Questions with images through the embedded server: kept with the user message, read by OCR when no model
here can see them, shown to a vision model (scripted) when one can, its description the next turn's history,
and bad images refused before anything is stored."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from ragline.models.base import data_url
from tests.conftest import start_ragline
from tests.support.images import blank_image, latin_font, render_text
from tests.support.polling import wait_until
from tests.support.scripted_model import Script

DOCS = {
    "Invoices": "# Invoices\n\nInvoice 48213 was paid on 3 March by bank transfer.",
    "Refunds": "# Refunds\n\nReceipt 77120 was refunded to the customer in April.",
}


def invoice_image() -> str:
    font = latin_font()
    if font is None:
        pytest.fail("no Latin font on this machine (make test installs DejaVu)")
    return data_url(render_text(["Invoice 48213"], font=font, size=40), "image/png")


def user_messages(ragline: Any, session: str) -> list[dict[str, Any]]:
    return [m for m in ragline.messages(session) if m["role"] == "user"]


def test_without_a_vision_model_the_images_text_joins_the_question(ragline, scripted) -> None:
    kb = ragline.create_kb("billing", DOCS)
    session = ragline.session([kb])
    frames = ragline.chat(session, "When was this paid?", images=[{"data": invoice_image(), "caption": "scan"}])
    assert frames[-1].type == "complete", [f.type for f in frames]

    [question] = user_messages(ragline, session)
    [image] = question["images"]
    assert image["url"].startswith("resource://images/q")
    assert image["caption"] == "scan"
    # The answering model reads the OCR text after the question, and is told it is not the image itself.
    prompt = scripted.answers[-1].messages[-1]["content"]
    assert "48213" in prompt
    assert "read by OCR" in prompt
    # The search read it too: the invoice's passage comes first.
    references = next(f for f in frames if f.type == "references").data["knowledge_references"]
    assert "48213" in references[0]["content"]


@pytest.fixture
def vision_ragline(tmp_path, shared_models) -> Iterator[Any]:
    server, handle = start_ragline(tmp_path / "data", shared_models, chat_vision=True)
    yield handle
    handle.client.close()
    server.stop()
    handle.container.close()


def test_a_vision_model_sees_the_images_and_its_description_is_the_next_turns_history(vision_ragline, scripted) -> None:
    kb = vision_ragline.create_kb("billing", DOCS)
    session = vision_ragline.session([kb])
    described = "An invoice numbered 48213 stamped PAID."
    scripted.understanding.append(
        Script.answer(
            json.dumps(
                {"rewrite_query": "When was invoice 48213 paid?", "intent": "kb_search", "image_description": described}
            )
        )
    )
    frames = vision_ragline.chat(session, "When was this paid?", images=[{"data": invoice_image()}])
    assert frames[-1].type == "complete", [f.type for f in frames]
    understanding = scripted.understandings[-1]
    parts = understanding.messages[-1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url"]
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")
    # The answering model sees the image too, with what understanding saw in it after the question.
    answer_parts = scripted.answers[-1].messages[-1]["content"]
    assert "What they show:" in answer_parts[0]["text"]
    assert answer_parts[1]["image_url"]["url"] == parts[1]["image_url"]["url"]

    # The description is kept as the image's caption (written after the understanding call) …
    wait_until(lambda: user_messages(vision_ragline, session)[0]["images"][0]["caption"] == described)
    # … and the next question's history says what the image showed.
    frames = vision_ragline.chat(session, "And who paid it?")
    assert frames[-1].type == "complete"
    history = json.dumps(scripted.understandings[-1].messages)
    assert f"[Image 1: {described}]" in history


@pytest.mark.parametrize(
    ("images", "field"),
    [
        ([{"data": "not base64!"}], "images[0].data"),
        ([{"data": data_url(b"%PDF-1.7", "image/png")}], "images[0].data"),
        ([{"url": "https://example.com/cat.png"}], "images[0].url"),
        ([{"data": data_url(blank_image(64, 64), "image/png")}] * 5, "images"),
    ],
)
def test_bad_images_are_refused_naming_the_field_and_nothing_is_stored(ragline, images, field) -> None:
    session = ragline.session([])
    reply = ragline.client.post(
        f"/api/v1/sessions/{session}/questions", json={"query": "What is this?", "images": images}
    )
    assert reply.status_code == 422, reply.text
    assert reply.json()["error"]["field"] == field, reply.text
    assert ragline.messages(session) == []


def test_a_vision_model_is_shown_the_picture_a_passage_was_found_by(vision_ragline, scripted) -> None:
    font = latin_font()
    assert font is not None
    picture = render_text(["Pump pressure 4 bar"], font=font, size=40)
    kb = vision_ragline.create_kb("pictures")
    added = vision_ragline.client.post(
        f"/api/v1/knowledge-bases/{kb}/documents?wait=true", files={"file": ("pump.png", picture, "image/png")}
    )
    assert added.status_code == 201, added.text
    frames = vision_ragline.chat(vision_ragline.session([kb]), "What is the pump pressure?")
    assert frames[-1].type == "complete", [f.type for f in frames]
    references = next(f for f in frames if f.type == "references").data["knowledge_references"]
    assert [r["chunk_type"] for r in references] == ["image_ocr"]
    # The answering model reads the passage (the picture's OCR text) and sees the picture itself.
    parts = scripted.answers[-1].messages[-1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url"]
    assert parts[1]["image_url"]["url"] == data_url(picture, "image/png")


def test_a_question_may_be_its_images_alone(ragline, scripted) -> None:
    kb = ragline.create_kb("billing", DOCS)
    session = ragline.session([kb])
    reply = ragline.client.post(f"/api/v1/sessions/{session}/questions", json={"images": [{"data": invoice_image()}]})
    assert reply.status_code == 202, reply.text
    frames = ragline.events(session, reply.json()["data"]["assistant_message_id"])
    assert frames[-1].type == "complete", [f.type for f in frames]
    [question] = user_messages(ragline, session)
    assert question["content"] == ""
    assert len(question["images"]) == 1
    # The OCR text is the question the search and the answering model read.
    assert "48213" in scripted.answers[-1].messages[-1]["content"]
    # Without images a query is still required, and blank is refused.
    for body, code in (({}, "missing_field"), ({"query": "  "}, "invalid_field"), ({"images": []}, "missing_field")):
        refused = ragline.client.post(f"/api/v1/sessions/{session}/questions", json=body)
        assert refused.status_code == 422, refused.text
        assert (refused.json()["error"]["type"], refused.json()["error"]["field"]) == (code, "query")


def test_a_vision_model_captions_a_picture_without_text_and_search_then_finds_it(vision_ragline, scripted) -> None:
    import io

    from PIL import Image, ImageDraw

    canvas = Image.new("RGB", (160, 160), "white")
    ImageDraw.Draw(canvas).ellipse((30, 30, 130, 130), fill="red")
    out = io.BytesIO()
    canvas.save(out, "PNG")
    scripted.caption = Script.answer("A red circle on a white background.")
    try:
        kb = vision_ragline.create_kb("shapes")
        added = vision_ragline.client.post(
            f"/api/v1/knowledge-bases/{kb}/documents", files={"file": ("shape.png", out.getvalue(), "image/png")}
        )
        assert added.status_code in (201, 202), added.text
        doc_id = added.json()["data"]["id"]

        def enriched() -> bool:
            data = vision_ragline.client.get(f"/api/v1/knowledge/{doc_id}").json()["data"]
            return data["summary_status"] == "completed"

        wait_until(enriched, timeout=60)
    finally:
        scripted.caption = Script.answer("")
    [chunk] = vision_ragline.client.get(f"/api/v1/chunks/{doc_id}").json()["data"]
    assert chunk["content"] == "A red circle on a white background."
    assert json.loads(chunk["metadata"]["image_info"])[0]["caption"] == chunk["content"]
    found = vision_ragline.client.post(
        "/api/v1/knowledge-search", json={"query": "red circle", "knowledge_base_ids": [kb]}
    ).json()["data"]
    assert [r["content"] for r in found] == [chunk["content"]]


def test_a_rewrite_never_searches_for_the_images_marker(ragline, scripted) -> None:
    # The scripted model echoes the whole prompt line back as its rewrite, marker included.
    kb = ragline.create_kb("billing", DOCS)
    frames = ragline.chat(ragline.session([kb]), "When was this paid?", images=[{"data": invoice_image()}])
    understood = next(
        f for f in frames if f.type == "tool_result" and f.data["data"]["tool_name"] == "query_understand"
    )
    assert "images_attached" not in understood.data["data"]["rewrite_query"]
    assert "48213" in understood.data["data"]["rewrite_query"]
