"""The extractive answerer and a question whose images were read by OCR: it searches with their text and
says it read the image's text, not the image."""

from __future__ import annotations

from ragline.models.base import ChatMessage
from ragline.models.extractive import IMAGE_TEXT_READ, NOTHING_FOUND_PREFIXES, ExtractiveChatModel
from ragline.types.images import IMAGE_TEXT_NOTE, split_image_text

SYSTEM = (
    '<document title="Invoices"><chunk id="c1"><content>Invoice 48213 was paid on 3 March by bank transfer.'
    "</content></chunk></document>\n"
    '<document title="Refunds"><chunk id="c2"><content>Receipt 77120 was refunded to the customer in April.'
    "</content></chunk></document>"
)


def question(asked: str, image_text: str) -> str:
    return f"Question: {asked}\n\n{IMAGE_TEXT_NOTE.format(text=image_text)}"


def test_the_note_splits_back_into_the_question_and_the_image_text():
    asked = question("When was this paid?", "[Image 1] Invoice 48213").removeprefix("Question: ")
    assert split_image_text(asked) == (
        "When was this paid?",
        "[Image 1] Invoice 48213",
    )
    assert split_image_text("Plain question?") == ("Plain question?", "")


def test_the_answer_quotes_what_the_image_text_names_and_says_it_read_the_text():
    from ragline.models.onnx_minilm import OnnxMiniLMEmbedder

    model = ExtractiveChatModel(embedder=OnnxMiniLMEmbedder)
    answer = model.answer(
        [ChatMessage("system", SYSTEM), ChatMessage("user", question("When was this paid?", "[Image 1] Invoice 48213"))]
    )
    assert answer.startswith(IMAGE_TEXT_READ)
    assert "3 March" in answer

    nothing = model.answer(
        [ChatMessage("system", SYSTEM), ChatMessage("user", question("Who won the cup?", "[Image 1] football"))]
    )
    assert nothing.startswith(NOTHING_FOUND_PREFIXES)  # "not found" stays recognisable
