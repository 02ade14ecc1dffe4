"""Web search (a local server speaking SearXNG's JSON) with web_fetch, and graph search, over HTTP."""

from __future__ import annotations

import time

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse

from tests.conftest import start_ragline
from tests.support.scripted_model import Script
from tests.support.servers import ServerThread

PAGE = """<html><head><title>Volcano report</title></head><body><article><h1>Volcano report</h1>
<p>Mount Example erupted on 3 March 2026 and sent ash twelve kilometres into the sky, according to the
national geological survey, which raised its alert level to orange the same afternoon.</p></article></body></html>"""


@pytest.fixture
def web_server():
    app = FastAPI()
    state = {"port": 0}

    @app.get("/search")
    async def search(request: Request):
        assert request.query_params["format"] == "json"
        base = f"http://127.0.0.1:{state['port']}"
        return {
            "query": request.query_params["q"],
            "results": [
                {"url": f"{base}/page#top", "title": "Volcano report", "content": "Mount Example erupted."},
                {"url": "http://127.0.0.1:9/elsewhere", "title": "Other", "content": "Unrelated snippet."},
            ],
        }

    @app.get("/page")
    async def page():
        return HTMLResponse(PAGE)

    server = ServerThread(app).start()
    state["port"] = server.port
    yield server
    server.stop()


@pytest.fixture
def web_ragline(tmp_path, shared_models, web_server):
    server, handle = start_ragline(
        tmp_path / "data", shared_models, web_search_provider="searxng", web_search_base_url=web_server.url
    )
    # Only the test's own page server is exempt from the SSRF rules (127.0.0.1 is refused otherwise).
    handle.container.config.web_fetch.allowed_endpoints = [("127.0.0.1", web_server.port)]
    yield handle
    handle.client.close()
    server.stop()
    handle.container.close()


def test_web_search_results_are_fetched_cited_and_referenced(web_ragline, scripted):
    kb = web_ragline.create_kb("empty")
    session = web_ragline.session([kb])
    scripted.queue(Script.answer("It erupted on 3 March 2026", ' <ref id="w1"/>.'))
    frames = web_ragline.chat(session, "When did Mount Example erupt?", web_search_enabled=True)
    assert frames[-1].type == "complete", [f.type for f in frames]
    search = next(f for f in frames if f.type == "tool_result" and f.extra["tool_name"] == "knowledge_search")
    assert search.extra["search_source"] == "mixed"
    assert search.extra["web_count"] >= 1
    references = next(f for f in frames if f.type == "references").data["knowledge_references"]
    fetched = next(r for r in references if r["url"].endswith("/page#top"))
    assert fetched["knowledge_source"] == "web_search"
    assert fetched["metadata"]["web_fetched"] == "true"
    assert "twelve kilometres" in fetched["content"]  # the page's text replaced the snippet
    blocked = next((r for r in references if r["url"].endswith(":9/elsewhere")), None)
    if blocked is not None:  # not exempt: refused before any connection, the snippet stays
        assert blocked["metadata"]["web_fetched"] == "false"
        assert blocked["content"] == "Unrelated snippet."
    answer = "".join(f.content for f in frames if f.type == "answer")
    assert '<web url="' in answer
    assert "/page" in answer
    assert "twelve kilometres" in scripted.answers[-1].system


def test_without_web_search_no_web_results(web_ragline, scripted):
    kb = web_ragline.create_kb("facts", {"Facts": "# Facts\n\nMount Example is a volcano in the test country."})
    frames = web_ragline.chat(web_ragline.session([kb]), "When did Mount Example erupt?")
    search = next(f for f in frames if f.type == "tool_result" and f.extra["tool_name"] == "knowledge_search")
    assert search.extra["search_source"] == "knowledge"
    assert search.extra["web_count"] == 0


@pytest.fixture
def graph_ragline(tmp_path, shared_models):
    server, handle = start_ragline(tmp_path / "data", shared_models, graph_enabled=True)
    yield handle
    handle.client.close()
    server.stop()
    handle.container.close()


def test_graph_extraction_at_ingestion_and_entity_search(graph_ragline, scripted):
    scripted.graph_extraction = Script.answer(
        '{"entities": [{"name": "Ada Lovelace", "type": "person", "description": "mathematician"},'
        ' {"name": "Analytical Engine", "type": "machine", "description": "a computer design"}],'
        ' "relations": [{"source": "Ada Lovelace", "target": "Analytical Engine", "relation": "wrote notes on"}]}'
    )
    scripted.entity_extraction = Script.answer('["Ada Lovelace"]')
    reply = graph_ragline.client.post(
        "/api/v1/knowledge-bases", json={"name": "history", "graph_extraction_enabled": True}
    )
    kb = reply.json()["data"]["id"]
    assert reply.json()["data"]["graph_extraction_enabled"] is True
    graph_ragline.client.post(
        f"/api/v1/knowledge-bases/{kb}/documents",
        json={"title": "Notes", "content": "# Notes\n\nShe published the first algorithm meant for a machine in 1843."},
    ).raise_for_status()
    graph = graph_ragline.container.graph
    deadline = time.monotonic() + 10
    while not graph.search_nodes([kb], ["Ada Lovelace"], 5):
        assert time.monotonic() < deadline, "the graph was not indexed"
        time.sleep(0.05)
    [hit] = graph.search_nodes([kb], ["Ada Lovelace"], 5)
    assert [(r.relation, r.name) for r in hit.related] == [("wrote notes on", "Analytical Engine")]

    # The passage never names her, and a vector threshold this high keeps chunk search from finding it:
    # only the graph (her entity, extracted from that chunk) can bring it.
    frames = graph_ragline.chat(graph_ragline.session([kb]), "Who was Ada Lovelace?", vector_threshold=0.95)
    assert frames[-1].type == "complete", [f.type for f in frames]
    references = next(f for f in frames if f.type == "references").data["knowledge_references"]
    # match_type 6: WeKnora's "graph".
    assert [(r["match_type"], r["content"]) for r in references] == [
        (6, "She published the first algorithm meant for a machine in 1843.")
    ]
