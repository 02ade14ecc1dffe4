"""What a chat model that sees images is shown: the question's images, then the images the passages were
found by (at most three, each once, readable, PNG/JPEG/WebP/GIF, ≤ 5 MB); and the image-output paragraph of
the system prompt when the context carries Markdown images."""

from __future__ import annotations

import json

from ragline.config import load_config
from ragline.models.base import data_url
from ragline.pipeline.generation import IMAGE_OUTPUT_PROMPT, build_messages, vision_images
from ragline.types import ChatManage, ChunkType, SearchResult

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32
GIF = b"GIF89a" + b"\0" * 32
_, TEMPLATES = load_config()


def image_hit(id: str, *urls: str, **fields) -> SearchResult:
    info = json.dumps([{"url": url} for url in urls])
    return SearchResult(id=id, content=f"text of {id}", chunk_type=ChunkType.IMAGE_OCR, image_info=info, **fields)


def chat_with(make_request, results: list[SearchResult], **request) -> ChatManage:
    cm = ChatManage.start(make_request(knowledge_base_ids=("kb",), **request))
    cm.state.merge_result = results
    return cm


def test_the_question_images_then_at_most_three_passage_images_each_once(make_request):
    store = {f"resource://images/d/{n}": PNG for n in range(1, 6)} | {"resource://images/q/1": GIF}
    store["resource://images/d/9"] = b"%PDF not an image"
    text = SearchResult(id="t", content="plain text", image_info=json.dumps([{"url": "resource://images/d/5"}]))
    results = [
        image_hit("a", "resource://images/d/1", "resource://images/d/9"),  # the PDF is left out
        image_hit("b", "resource://images/d/1", "resource://images/d/2"),
        text,  # a text passage's images are not shown unless it stands for a dropped image
        image_hit("c", "resource://images/d/3", "resource://images/d/4"),
    ]
    cm = chat_with(make_request, results, images=("resource://images/q/1",), chat_model_supports_vision=True)
    shown = vision_images(cm, lambda tenant, url: store.get(url) if tenant == "t-1" else None)
    assert shown == [data_url(GIF, "image/gif"), data_url(PNG, "image/png"), data_url(PNG, "image/png")]
    messages, _ = build_messages(cm, TEMPLATES, "default_kb", shown)
    assert messages[-1].images == tuple(shown)

    # A model that does not see images is shown none.
    blind = chat_with(make_request, results, images=("resource://images/q/1",))
    assert vision_images(blind, lambda tenant, url: store.get(url)) == []


def test_markdown_images_in_the_context_ask_for_them_in_the_answer(make_request):
    with_image = SearchResult(id="m", content="The wiring: ![diagram](https://files.example/wiring.png) as shown.")
    plain = SearchResult(id="p", content="No pictures here.")
    system = build_messages(chat_with(make_request, [with_image]), TEMPLATES, "default_kb")[0][0].content
    assert IMAGE_OUTPUT_PROMPT in system
    system = build_messages(chat_with(make_request, [plain]), TEMPLATES, "default_kb")[0][0].content
    assert IMAGE_OUTPUT_PROMPT not in system
