"""FAQ knowledge, tags and wiki pages through the HTTP API."""

from __future__ import annotations

import json

from tests.support.scripted_model import Script

FAQ = [
    {
        "standard_question": "How do I reset my password?",
        "similar_questions": ["I forgot my password", "password reset"],
        "negative_questions": ["How do I reset my router?"],
        "answer": "Open Settings > Account and choose Reset password; a link arrives by e-mail.",
    },
    {
        "question": "What are the support hours?",
        "answers": ["Monday to Friday, 9:00 to 17:00 CET."],
    },
]


def test_faq_json_import_and_faq_priority_in_the_prompt(ragline, scripted):
    kb = ragline.create_kb("help", {"Accounts": "# Accounts\n\nAccounts are created by an administrator."})
    reply = ragline.client.post(f"/api/v1/knowledge-bases/{kb}/faq", json={"entries": FAQ, "title": "Help FAQ"})
    assert reply.status_code == 201, reply.text
    assert reply.json()["data"]["chunk_count"] == 2
    again = ragline.client.post(f"/api/v1/knowledge-bases/{kb}/faq", json={"entries": FAQ, "title": "Help FAQ"})
    assert again.status_code == 200
    assert again.json()["data"]["duplicate"] is True

    scripted.queue(Script.answer("Use Settings.", ' <ref id="c1"/>'))
    frames = ragline.chat(ragline.session([kb]), "How do I reset my password?")
    assert frames[-1].type == "complete"
    system = scripted.answers[-1].system
    assert '<retrieval type="faq" priority="high">' in system
    assert 'match="exact"' in system
    faq_section = system.index('type="faq"')
    assert faq_section < system.find('type="knowledge"') or 'type="knowledge"' not in system
    references = next(f for f in frames if f.type == "references").data["knowledge_references"]
    assert references[0]["chunk_type"] == "faq"


def test_negative_questions_exclude_the_faq(ragline):
    kb = ragline.create_kb("help")
    ragline.client.post(f"/api/v1/knowledge-bases/{kb}/faq", json={"entries": FAQ}).raise_for_status()
    hits = ragline.client.post(
        "/api/v1/knowledge-search", json={"query": "How do I reset my router?", "knowledge_base_ids": [kb]}
    ).json()["data"]
    assert all("reset my password" not in h["content"] for h in hits)
    hits = ragline.client.post(
        "/api/v1/knowledge-search", json={"query": "how do i reset my password", "knowledge_base_ids": [kb]}
    ).json()["data"]
    assert "reset my password" in hits[0]["content"].lower()


def test_faq_csv_upload_and_bad_rows(ragline):
    kb = ragline.create_kb("help")
    url = f"/api/v1/knowledge-bases/{kb}/faq"
    csv = (
        "question,similar_questions,answer\n"
        '"Where is the office?","office address|where are you","Main Street 1, Springfield"\n'
    )
    reply = ragline.client.post(url, files={"file": ("faq.csv", csv.encode(), "text/csv")})
    assert reply.status_code == 201, reply.text
    bad = ragline.client.post(url, files={"file": ("faq.csv", b"question,answer\n,missing question\n", "text/csv")})
    assert bad.status_code == 422
    assert "row 1" in bad.json()["error"]["message"]
    broken = ragline.client.post(url, files={"file": ("faq.json", b"{not json", "application/json")})
    assert broken.status_code == 422
    wrong = ragline.client.post(url, files={"file": ("faq.xml", b"<faq/>", "text/xml")})
    assert wrong.status_code == 415
    empty = ragline.client.post(url, json={"entries": []})
    assert empty.status_code == 422
    assert empty.json()["error"]["field"] == "entries"
    missing = ragline.client.post(url, json={"title": "FAQ"})
    assert missing.status_code == 422
    assert missing.json()["error"] == {
        "code": 1010,
        "type": "missing_field",
        "message": "entries is required",
        "field": "entries",
    }
    unknown = ragline.client.post(url, json={"entries": [{"question": "q", "answer": "a"}], "extra": 1})
    assert unknown.json()["error"]["type"] == "unknown_field"
    invalid = ragline.client.post(url, content=b"{bad", headers={"Content-Type": "application/json"})
    assert invalid.status_code == 400
    assert invalid.json()["error"]["type"] == "invalid_json"
    chunks = ragline.client.get(f"/api/v1/knowledge-bases/{kb}/documents/{reply.json()['data']['id']}/chunks").json()[
        "data"
    ]
    assert chunks[0]["metadata"]["similar_questions"] == ["office address", "where are you"]
    assert json.dumps(chunks[0]["metadata"]["answers"]) == json.dumps(["Main Street 1, Springfield"])


def test_tags_narrow_the_search(ragline):
    kb = ragline.create_kb("handbook")
    url = f"/api/v1/knowledge-bases/{kb}/documents"
    ragline.client.post(
        url, json={"title": "Leave EU", "content": "Employees in the EU get 25 days of paid leave.", "tags": ["eu"]}
    ).raise_for_status()
    ragline.client.post(
        url, json={"title": "Leave US", "content": "Employees in the US get 15 days of paid leave.", "tags": ["us"]}
    ).raise_for_status()
    search = "/api/v1/knowledge-search"
    both = ragline.client.post(search, json={"query": "days of paid leave", "knowledge_base_ids": [kb]}).json()
    assert {h["knowledge_title"] for h in both["data"]} == {"Leave EU", "Leave US"}
    eu = ragline.client.post(search, json={"query": "days of paid leave", "knowledge_base_ids": [kb], "tags": ["eu"]})
    assert {h["knowledge_title"] for h in eu.json()["data"]} == {"Leave EU"}
    none = ragline.client.post(
        search, json={"query": "days of paid leave", "knowledge_base_ids": [kb], "tags": ["apac"]}
    )
    assert none.json()["data"] == []
    docs = ragline.client.get(url).json()["data"]
    assert {d["title"]: d["tags"] for d in docs} == {"Leave EU": ["eu"], "Leave US": ["us"]}


def test_wiki_pages_are_chunks_of_type_wiki_page(ragline):
    reply = ragline.client.post("/api/v1/knowledge-bases", json={"name": "wiki", "wiki_enabled": True})
    assert reply.json()["data"]["wiki_enabled"] is True
    kb = reply.json()["data"]["id"]
    page = ragline.client.post(
        f"/api/v1/knowledge-bases/{kb}/documents",
        json={
            "title": "Onboarding",
            "content": "# Onboarding\n\nNew staff meet their buddy on day one.",
            "kind": "wiki",
        },
    )
    assert page.status_code == 202, page.text
    chunks = ragline.client.get(f"/api/v1/knowledge-bases/{kb}/documents/{page.json()['data']['id']}/chunks").json()[
        "data"
    ]
    assert {c["chunk_type"] for c in chunks} == {"wiki_page"}


def test_faq_entries_ruled_out_by_negative_questions_make_room_for_deeper_ones(ragline):
    """More entries rule the question out than one search returns (30 by default): the search goes deeper,
    as the reference's FAQ iteration does, and finds the entries that may answer it."""
    kb = ragline.create_kb("devices")
    asked = "How do I reset my router?"
    ruled_out = [
        {
            "standard_question": f"How do I reset my router model R{i} to factory settings?",
            "similar_questions": [f"reset router R{i}", f"router R{i} factory reset"],
            "negative_questions": [asked],
            "answer": f"Hold the reset button of the R{i} for ten seconds.",
        }
        for i in range(40)
    ]
    answers = [{"standard_question": "Restarting network equipment at home", "answer": "Unplug it for a minute."}]
    reply = ragline.client.post(f"/api/v1/knowledge-bases/{kb}/faq", json={"entries": ruled_out + answers})
    reply.raise_for_status()
    hits = ragline.client.post(
        "/api/v1/knowledge-search", json={"query": asked, "knowledge_base_ids": [kb], "top_k": 5}
    ).json()["data"]
    assert hits, "every entry the search returned was ruled out, and it did not look further"
    assert all("Hold the reset button" not in h["content"] for h in hits)
    assert any("Unplug it for a minute" in h["content"] for h in hits)
