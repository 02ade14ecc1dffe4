"""The store ports' contract, run against every adapter: SQLite (embedded) and DynamoDB (AWS, in moto).

One body of assertions for both proves the adapters behave the same.
"""

from __future__ import annotations

import pytest

from ragline.reranking.config import MemoryAffinityConfig
from ragline.runtime.conversations import TurnRunning, UnknownMessage, fork_session, rewind_session, search_sessions
from ragline.store.models import Chunk, Document, DocumentStatus, DuplicateName, Message, Session
from tests.unit.ragline.store.adapters import Stores, dynamo_stores, sqlite_stores

BACKENDS = ["sqlite", "dynamodb"]


@pytest.fixture(params=BACKENDS)
def stores(request, tmp_path, clock):
    if request.param == "dynamodb":
        yield dynamo_stores(request.getfixturevalue("aws"))
        return
    opened, db = sqlite_stores(tmp_path / "ragline.db")
    yield opened
    db.close()


@pytest.fixture
def two_tenants(stores: Stores) -> tuple[str, str]:
    a, _ = stores.tenants.create("a")
    b, _ = stores.tenants.create("b")
    return a.id, b.id


def make_document(
    tenant: str,
    kb_id: str,
    title: str = "Doc",
    n_chunks: int = 2,
    n_parents: int = 0,
    created_at: str = "2024-01-01T00:00:00.000+00:00",
    content_hash: str = "",
) -> tuple[Document, list[Chunk]]:
    """A document with ``n_parents`` parent chunks (not searchable) and ``n_chunks`` children under them."""
    document = Document(
        id=f"{title}-{tenant}",
        tenant_id=tenant,
        knowledge_base_id=kb_id,
        title=title,
        filename=f"{title}.md",
        file_type="markdown",
        description=f"about {title}",
        source="upload",
        content_hash=content_hash or f"hash-{title}-{tenant}",
        created_at=created_at,
    )
    parents = [
        Chunk(
            id=f"{document.id}-p{i}",
            tenant_id=tenant,
            knowledge_base_id=kb_id,
            knowledge_id=document.id,
            chunk_index=i,
            chunk_type="parent_text",
            content=f"parent {i} of {title}",
            header=f"## Part {i}",
            start_at=i * 100,
            end_at=i * 100 + 99,
            searchable=False,
        )
        for i in range(n_parents)
    ]
    children = [
        Chunk(
            id=f"{document.id}-c{i}",
            tenant_id=tenant,
            knowledge_base_id=kb_id,
            knowledge_id=document.id,
            chunk_index=i,
            content=f"chunk {i} of {title} — ünïcode 中文",
            header=f"## Part {i % n_parents}" if n_parents else "",
            parent_chunk_id=parents[i % n_parents].id if n_parents else "",
            pre_chunk_id=f"{document.id}-c{i - 1}" if i else "",
            next_chunk_id=f"{document.id}-c{i + 1}" if i + 1 < n_chunks else "",
            start_at=i * 10,
            end_at=i * 10 + 9,
            metadata={"i": i, "nested": {"tags": ["x", "y"]}, "flag": True},
        )
        for i in range(n_chunks)
    ]
    return document, [*parents, *children]


def add_document(stores: Stores, *args: object, **kwargs: object) -> tuple[Document, list[Chunk]]:
    document, chunks = make_document(*args, **kwargs)  # type: ignore[arg-type]
    stores.knowledge.insert_document(document, chunks)
    return document, chunks


# Tenants -----------------------------------------------------------------------------------------------------
def test_create_returns_a_key_that_resolves_to_the_tenant(stores):
    tenant, key = stores.tenants.create("acme")
    assert key.startswith("rl-")
    assert stores.tenants.for_key(key) == tenant
    assert tenant.name == "acme"


def test_wrong_or_empty_key_resolves_to_none(stores):
    _, key = stores.tenants.create("acme")
    assert stores.tenants.for_key(key + "x") is None
    assert stores.tenants.for_key(key.upper()) is None
    assert stores.tenants.for_key(key[:-1]) is None
    assert stores.tenants.for_key("") is None
    assert stores.tenants.for_key("rl-unknown") is None


def test_keys_are_distinct_per_tenant(stores):
    a, key_a = stores.tenants.create("a")
    b, key_b = stores.tenants.create("b")
    assert key_a != key_b
    assert stores.tenants.for_key(key_a) == a
    assert stores.tenants.for_key(key_b) == b


def test_explicit_key_and_extra_keys(stores):
    tenant, key = stores.tenants.create("acme", api_key="my-fixed-key")
    assert key == "my-fixed-key"
    assert stores.tenants.for_key("my-fixed-key") == tenant
    stores.tenants.add_key(tenant.id, "second-key")
    stores.tenants.add_key(tenant.id, "second-key")  # idempotent
    assert stores.tenants.for_key("second-key") == tenant
    assert stores.tenants.for_key("my-fixed-key") == tenant


def test_by_name(stores):
    stores.tenants.create("alpha")
    beta, _ = stores.tenants.create("beta")
    assert stores.tenants.by_name("beta") == beta
    assert stores.tenants.by_name("gamma") is None
    assert stores.tenants.by_name("") is None


def test_creating_with_a_key_in_use_fails_and_creates_nothing(stores):
    owner, _ = stores.tenants.create("owner", api_key="shared-key")
    with pytest.raises(Exception):  # noqa: B017, PT011 - IntegrityError in SQLite, a cancelled transaction in DynamoDB
        stores.tenants.create("intruder", api_key="shared-key")
    assert stores.tenants.by_name("intruder") is None
    assert stores.tenants.for_key("shared-key") == owner


@pytest.mark.parametrize(
    "stores",
    BACKENDS,
    indirect=True,
)
def test_add_key_never_moves_another_tenants_key(stores):
    owner, key = stores.tenants.create("owner")
    other, _ = stores.tenants.create("other")
    stores.tenants.add_key(other.id, key)
    assert stores.tenants.for_key(key) == owner


@pytest.mark.parametrize(
    "stores",
    BACKENDS,
    indirect=True,
)
def test_by_name_keeps_the_first_tenant_of_a_name(stores):
    first, _ = stores.tenants.create("default")
    stores.tenants.create("default")
    assert stores.tenants.by_name("default") == first


# Knowledge bases ---------------------------------------------------------------------------------------------
def test_create_and_read_knowledge_base(stores, two_tenants):
    a, _ = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "handbook", "minilm", description="desc")
    assert (kb.tenant_id, kb.name, kb.embedding_model, kb.description) == (a, "handbook", "minilm", "desc")
    assert stores.knowledge.knowledge_base(a, kb.id) == kb
    assert stores.knowledge.knowledge_base_by_name(a, "handbook") == kb
    assert stores.knowledge.knowledge_bases(a, [kb.id]) == [kb]
    assert stores.knowledge.list_knowledge_bases(a) == [kb]
    assert stores.knowledge.knowledge_base(a, "no-such-kb") is None
    assert stores.knowledge.knowledge_base_by_name(a, "no-such-name") is None


def test_duplicate_name_per_tenant(stores, two_tenants):
    a, b = two_tenants
    first = stores.knowledge.create_knowledge_base(a, "handbook", "minilm")
    with pytest.raises(DuplicateName):
        stores.knowledge.create_knowledge_base(a, "handbook", "other-model")
    assert stores.knowledge.list_knowledge_bases(a) == [first]
    assert stores.knowledge.knowledge_base_by_name(a, "handbook") == first
    theirs = stores.knowledge.create_knowledge_base(b, "handbook", "minilm")  # another tenant may use the name
    assert theirs.id != first.id
    assert stores.knowledge.knowledge_base_by_name(b, "handbook") == theirs


def test_knowledge_bases_listed_per_tenant_in_creation_order(stores, two_tenants):
    a, b = two_tenants
    made = [stores.knowledge.create_knowledge_base(a, name, "m") for name in ("zeta", "alpha", "mid")]
    theirs = stores.knowledge.create_knowledge_base(b, "theirs", "m")
    assert stores.knowledge.list_knowledge_bases(a) == made
    assert stores.knowledge.list_knowledge_bases(b) == [theirs]


def test_knowledge_bases_keeps_requested_order_and_dedups(stores, two_tenants):
    a, _ = two_tenants
    one = stores.knowledge.create_knowledge_base(a, "one", "m")
    two = stores.knowledge.create_knowledge_base(a, "two", "m")
    found = stores.knowledge.knowledge_bases(a, [two.id, one.id, two.id, "nope"])
    assert [kb.id for kb in found] == [two.id, one.id]
    assert stores.knowledge.knowledge_bases(a, []) == []


def test_another_tenants_ids_read_as_absent(stores, two_tenants):
    a, b = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "handbook", "minilm")
    document, chunks = add_document(stores, a, kb.id, n_chunks=3, n_parents=1)
    knowledge = stores.knowledge
    assert knowledge.knowledge_base(b, kb.id) is None
    assert knowledge.knowledge_bases(b, [kb.id]) == []
    assert knowledge.knowledge_base_by_name(b, "handbook") is None
    assert knowledge.list_knowledge_bases(b) == []
    assert knowledge.document(b, document.id) is None
    assert knowledge.documents(b, kb.id) == []
    assert knowledge.documents_by_hash(b, kb.id, document.content_hash) is None
    assert knowledge.chunks_of_document(b, document.id) == []
    assert knowledge.chunks(b, [c.id for c in chunks]) == []
    # still there for its owner
    assert knowledge.document(a, document.id) is not None
    assert len(knowledge.chunks(a, [c.id for c in chunks])) == len(chunks)


# Documents ---------------------------------------------------------------------------------------------------
def test_document_round_trip_counts_only_searchable_chunks(stores, two_tenants):
    a, _ = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "kb", "minilm")
    document, _ = add_document(stores, a, kb.id, n_chunks=3, n_parents=2)
    stored = stores.knowledge.document(a, document.id)
    # chunk_count is what search can match: the children, not the parents that carry their context.
    assert stored == document.model_copy(update={"chunk_count": 3})
    assert stores.knowledge.document(a, "no-such-doc") is None


def test_chunks_round_trip_with_parents_and_children(stores, two_tenants):
    a, _ = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "kb", "minilm")
    document, chunks = add_document(stores, a, kb.id, n_chunks=4, n_parents=2)
    found = stores.knowledge.chunks_of_document(a, document.id)
    assert sorted(found, key=lambda c: c.id) == sorted(chunks, key=lambda c: c.id)
    for chunk_type in ("text", "parent_text"):
        # Within a chunk type, a document's chunks come in reading order.
        of_type = [c for c in found if c.chunk_type == chunk_type]
        assert [c.chunk_index for c in of_type] == sorted(c.chunk_index for c in of_type)
    by_id = {c.id: c for c in found}
    child = by_id[f"{document.id}-c1"]
    assert child.parent_chunk_id == f"{document.id}-p1"
    assert by_id[child.parent_chunk_id].searchable is False
    assert child.metadata == {"i": 1, "nested": {"tags": ["x", "y"]}, "flag": True}
    assert (child.pre_chunk_id, child.next_chunk_id) == (f"{document.id}-c0", f"{document.id}-c2")


def test_chunks_of_document_in_index_order(stores, two_tenants):
    a, _ = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "kb", "minilm")
    document, chunks = make_document(a, kb.id, n_chunks=12)
    stores.knowledge.insert_document(document, list(reversed(chunks)))  # written in any order
    assert stores.knowledge.chunks_of_document(a, document.id) == chunks
    assert stores.knowledge.chunks_of_document(a, "no-such-doc") == []


def test_chunks_by_id_keep_the_requested_order(stores, two_tenants):
    a, _ = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "kb", "minilm")
    _, chunks = add_document(stores, a, kb.id, n_chunks=3)
    wanted = [chunks[2].id, "missing", chunks[0].id]
    assert [c.id for c in stores.knowledge.chunks(a, wanted)] == [chunks[2].id, chunks[0].id]
    assert stores.knowledge.chunks(a, [chunks[1].id]) == [chunks[1]]
    assert stores.knowledge.chunks(a, []) == []


def test_chunks_by_id_beyond_one_batch(stores, two_tenants):
    # DynamoDB's BatchGetItem takes at most 100 keys: 150 ids take two requests.
    a, _ = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "kb", "minilm")
    _, chunks = add_document(stores, a, kb.id, n_chunks=150)
    wanted = [c.id for c in reversed(chunks)]
    found = stores.knowledge.chunks(a, wanted)
    assert [c.id for c in found] == wanted
    assert found == list(reversed(chunks))


def test_document_counts(stores, two_tenants):
    a, b = two_tenants
    one = stores.knowledge.create_knowledge_base(a, "one", "m")
    two = stores.knowledge.create_knowledge_base(a, "two", "m")
    empty = stores.knowledge.create_knowledge_base(b, "empty", "m")
    add_document(stores, a, one.id, title="x")
    add_document(stores, a, one.id, title="y")
    add_document(stores, a, two.id, title="z")
    assert stores.knowledge.document_counts([one.id, two.id, empty.id]) == {one.id: 2, two.id: 1}
    assert stores.knowledge.document_counts([two.id]) == {two.id: 1}
    assert stores.knowledge.document_counts([]) == {}


def test_totals_count_every_document_past_one_page(stores, two_tenants):
    # A knowledge base of 1,043 documents said chunk_count 1000: the view summed one page of documents().
    a, b = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "big", "m")
    for n in range(1043):
        document, chunks = make_document(a, kb.id, title=f"d{n:04}", n_chunks=1)
        stores.knowledge.insert_document(document, chunks)
    stores.knowledge.set_document_status(a, "d0007-" + a, DocumentStatus.PENDING)
    stores.knowledge.set_document_status(a, "d1042-" + a, DocumentStatus.PENDING)
    assert len(stores.knowledge.documents(a, kb.id)) == 1000  # one page
    totals = stores.knowledge.document_totals(a, kb.id)
    assert (totals.documents, totals.chunks, totals.processing) == (1043, 1043, 2)
    assert stores.knowledge.document_totals(b, kb.id).documents == 0


def test_documents_in_creation_order_with_limit_and_offset(stores, two_tenants):
    a, b = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "kb", "m")
    other = stores.knowledge.create_knowledge_base(a, "other", "m")
    # Inserted out of order: listing follows created_at, not insertion.
    stamps = {"d3": "03", "d1": "01", "d4": "04", "d0": "00", "d2": "02"}
    for title, second in stamps.items():
        add_document(stores, a, kb.id, title=title, created_at=f"2024-01-01T00:00:{second}.000+00:00")
    add_document(stores, a, other.id, title="elsewhere")
    titles = [d.title for d in stores.knowledge.documents(a, kb.id)]
    assert titles == ["d0", "d1", "d2", "d3", "d4"]
    assert [d.title for d in stores.knowledge.documents(a, kb.id, limit=2)] == ["d0", "d1"]
    assert [d.title for d in stores.knowledge.documents(a, kb.id, limit=2, offset=2)] == ["d2", "d3"]
    assert [d.title for d in stores.knowledge.documents(a, kb.id, limit=10, offset=4)] == ["d4"]
    assert stores.knowledge.documents(a, kb.id, offset=5) == []
    assert stores.knowledge.documents(b, kb.id) == []


def test_documents_by_hash(stores, two_tenants):
    a, _ = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "kb", "m")
    other = stores.knowledge.create_knowledge_base(a, "other", "m")
    document, _ = add_document(stores, a, kb.id, content_hash="sha-1")
    assert stores.knowledge.documents_by_hash(a, kb.id, "sha-1") == document.model_copy(update={"chunk_count": 2})
    assert stores.knowledge.documents_by_hash(a, other.id, "sha-1") is None  # per knowledge base
    assert stores.knowledge.documents_by_hash(a, kb.id, "sha-2") is None


# Sessions ----------------------------------------------------------------------------------------------------
def test_create_and_read_session(stores):
    session = stores.sessions.create_session("t1", ["kb1", "kb2"], title="Hello", options={"web": True, "n": 3})
    assert stores.sessions.session("t1", session.id) == session
    assert stores.sessions.session("t2", session.id) is None
    assert stores.sessions.session("t1", "no-such-session") is None
    assert session.knowledge_base_ids == ["kb1", "kb2"]
    assert session.options == {"web": True, "n": 3}
    bare = stores.sessions.create_session("t1", [])
    assert stores.sessions.session("t1", bare.id) == bare
    assert (bare.knowledge_base_ids, bare.options, bare.title) == ([], {}, "")


def test_sessions_listed_per_tenant_most_recent_first(stores):
    first = stores.sessions.create_session("t1", [])
    second = stores.sessions.create_session("t1", [])
    third = stores.sessions.create_session("t1", [])
    theirs = stores.sessions.create_session("t2", [])
    assert [s.id for s in stores.sessions.sessions("t1")] == [third.id, second.id, first.id]
    assert [s.id for s in stores.sessions.sessions("t1", limit=2)] == [third.id, second.id]
    assert [s.id for s in stores.sessions.sessions("t2")] == [theirs.id]
    assert stores.sessions.sessions("t3") == []
    # A turn is activity: its session moves to the top.
    stores.sessions.create_turn(first, "req-1", "q")
    assert [s.id for s in stores.sessions.sessions("t1")] == [first.id, third.id, second.id]


def test_set_title(stores):
    a = stores.sessions.create_session("t1", [])
    b = stores.sessions.create_session("t1", [])
    stores.sessions.set_title("t1", a.id, "New title")
    renamed = stores.sessions.session("t1", a.id)
    assert renamed.title == "New title"
    assert renamed.updated_at > a.updated_at
    assert stores.sessions.session("t1", b.id).title == ""
    assert [s.id for s in stores.sessions.sessions("t1")] == [a.id, b.id]


@pytest.mark.parametrize(
    "stores",
    BACKENDS,
    indirect=True,
)
def test_set_title_of_another_tenant_or_unknown_session_changes_nothing(stores):
    session = stores.sessions.create_session("t1", [], title="mine")
    stores.sessions.set_title("t2", session.id, "hijacked")
    stores.sessions.set_title("t1", "no-such-session", "ghost")
    assert stores.sessions.session("t1", session.id).title == "mine"
    assert stores.sessions.session("t2", session.id) is None
    assert stores.sessions.sessions("t2") == []
    assert [s.id for s in stores.sessions.sessions("t1")] == [session.id]


def test_update_session_changes_what_is_given(stores):
    session = stores.sessions.create_session("t1", [], title="Old", description="About it")
    assert stores.sessions.session("t1", session.id).description == "About it"
    renamed = stores.sessions.update_session("t1", session.id, title="New")
    assert (renamed.title, renamed.description) == ("New", "About it")
    assert renamed.updated_at > session.updated_at
    assert stores.sessions.session("t1", session.id) == renamed
    described = stores.sessions.update_session("t1", session.id, description="")
    assert (described.title, described.description) == ("New", "")
    # Pinning is not activity: updated_at stays, pinned_at says when.
    pinned = stores.sessions.update_session("t1", session.id, pinned=True)
    assert pinned.pinned_at is not None
    assert pinned.updated_at == described.updated_at
    assert stores.sessions.update_session("t1", session.id, pinned=False).pinned_at is None
    assert stores.sessions.update_session("t1", session.id) == stores.sessions.session("t1", session.id)


def test_update_session_of_another_tenant_or_unknown_session_changes_nothing(stores):
    session = stores.sessions.create_session("t1", [], title="mine")
    assert stores.sessions.update_session("t2", session.id, title="hijacked", pinned=True) is None
    assert stores.sessions.update_session("t1", "no-such-session", title="ghost") is None
    assert stores.sessions.session("t1", session.id) == session
    assert stores.sessions.session("t1", "no-such-session") is None
    assert stores.sessions.sessions("t2") == []


def test_delete_session_removes_it_and_its_messages(stores):
    session = stores.sessions.create_session("t1", [])
    other = stores.sessions.create_session("t1", [])
    user, _assistant = stores.sessions.create_turn(session, "req-1", "q")
    kept, _ = stores.sessions.create_turn(other, "req-2", "q")
    assert stores.sessions.delete_session("t2", session.id) is False
    assert stores.sessions.message("t1", session.id, user.id) == user
    assert stores.sessions.delete_session("t1", session.id) is True
    assert stores.sessions.session("t1", session.id) is None
    assert stores.sessions.messages("t1", session.id) == []
    assert stores.sessions.recent_messages(session.id, 10) == []
    assert stores.sessions.delete_session("t1", session.id) is False
    assert [s.id for s in stores.sessions.sessions("t1")] == [other.id]
    assert stores.sessions.message("t1", other.id, kept.id) == kept


def test_clear_messages_keeps_the_session(stores):
    session = stores.sessions.create_session("t1", [], title="Kept")
    stores.sessions.create_turn(session, "req-1", "q")
    stores.sessions.create_turn(session, "req-2", "q")
    assert stores.sessions.clear_messages("t2", session.id) == 0
    assert len(stores.sessions.messages("t1", session.id)) == 4
    assert stores.sessions.clear_messages("t1", session.id) == 4
    assert stores.sessions.messages("t1", session.id) == []
    assert stores.sessions.session("t1", session.id).title == "Kept"
    assert stores.sessions.clear_messages("t1", session.id) == 0


# Messages ----------------------------------------------------------------------------------------------------
def test_create_turn_makes_user_and_pending_assistant(stores):
    session = stores.sessions.create_session("t1", [])
    user, assistant = stores.sessions.create_turn(session, "req-1", "What is it?")
    assert (user.role, user.is_completed, user.content) == ("user", True, "What is it?")
    assert (assistant.role, assistant.is_completed, assistant.content) == ("assistant", False, "")
    assert user.request_id == assistant.request_id == "req-1"
    assert user.session_id == assistant.session_id == session.id
    assert user.tenant_id == assistant.tenant_id == "t1"
    assert user.id != assistant.id
    assert stores.sessions.message("t1", session.id, user.id) == user
    assert stores.sessions.message("t1", session.id, assistant.id) == assistant
    assert stores.sessions.message("t2", session.id, assistant.id) is None
    assert stores.sessions.message("t1", "other-session", assistant.id) is None
    assert stores.sessions.message("t1", session.id, "no-such-message") is None


def test_create_turn_is_atomic(stores, monkeypatch):
    session = stores.sessions.create_session("t1", [])
    user, assistant = stores.sessions.create_turn(session, "req-1", "q1")
    before = stores.sessions.session("t1", session.id)
    # The next turn's assistant message collides with an existing id: neither message may be stored.
    ids = iter(["fresh-user-id", assistant.id])
    monkeypatch.setattr("ragline.store.models.new_id", lambda: next(ids))
    with pytest.raises(Exception):  # noqa: B017, PT011 - IntegrityError in SQLite, a cancelled transaction in DynamoDB
        stores.sessions.create_turn(session, "req-2", "q2")
    assert stores.sessions.message("t1", session.id, "fresh-user-id") is None
    assert stores.sessions.messages("t1", session.id) == [user, assistant]
    assert stores.sessions.message_by_request("t1", session.id, "req-2") is None
    assert stores.sessions.session("t1", session.id) == before


def test_complete_assistant_message_only_once(stores):
    session = stores.sessions.create_session("t1", [])
    _user, assistant = stores.sessions.create_turn(session, "req-1", "q")
    refs = [{"id": "c1", "title": "中文", "score": 0.5}]
    assert stores.sessions.complete_assistant_message(session.id, assistant.id, "first", refs, "stopped") is True
    assert stores.sessions.complete_assistant_message(session.id, assistant.id, "second", [], "") is False
    stored = stores.sessions.message("t1", session.id, assistant.id)
    assert stored.is_completed is True
    assert stored.content == "first"
    assert stored.knowledge_references == refs
    assert stored.stop_reason == "stopped"
    assert stored.updated_at > assistant.updated_at


def test_complete_does_not_touch_user_messages_or_unknown_ids(stores):
    session = stores.sessions.create_session("t1", [])
    other = stores.sessions.create_session("t1", [])
    user, assistant = stores.sessions.create_turn(session, "req-1", "q")
    assert stores.sessions.complete_assistant_message(session.id, user.id, "overwrite", []) is False
    assert stores.sessions.message("t1", session.id, user.id) == user
    assert stores.sessions.complete_assistant_message(session.id, "no-such-id", "x", []) is False
    assert stores.sessions.message("t1", session.id, "no-such-id") is None
    # The message belongs to another session: not completed through this one.
    assert stores.sessions.complete_assistant_message(other.id, assistant.id, "x", []) is False
    assert stores.sessions.message("t1", session.id, assistant.id).is_completed is False


def test_incomplete_assistant_messages_of_every_tenant_oldest_first(stores):
    mine = stores.sessions.create_session("t1", [])
    theirs = stores.sessions.create_session("t2", [])
    _, first = stores.sessions.create_turn(mine, "req-1", "q1")
    _, done = stores.sessions.create_turn(mine, "req-2", "q2")
    _, other = stores.sessions.create_turn(theirs, "req-3", "q3")
    stores.sessions.complete_assistant_message(mine.id, done.id, "answer", [])
    found = stores.sessions.incomplete_assistant_messages()
    assert [m.id for m in found] == [first.id, other.id]
    assert all(m.role == "assistant" and not m.is_completed for m in found)
    assert [m.id for m in stores.sessions.incomplete_assistant_messages(limit=1)] == [first.id]


def _three_turns(stores: Stores) -> Session:
    session = stores.sessions.create_session("t1", [])
    other = stores.sessions.create_session("t1", [])
    for i in range(3):
        stores.sessions.create_turn(session, f"req-{i}", f"q{i}")
    stores.sessions.create_turn(other, "other-req", "elsewhere")
    return session


def test_messages_chronological_user_before_assistant(stores):
    session = _three_turns(stores)
    assert [(m.request_id, m.role) for m in stores.sessions.messages("t1", session.id)] == [
        ("req-0", "user"),
        ("req-0", "assistant"),
        ("req-1", "user"),
        ("req-1", "assistant"),
        ("req-2", "user"),
        ("req-2", "assistant"),
    ]
    assert [(m.request_id, m.role) for m in stores.sessions.messages("t1", session.id, limit=3)] == [
        ("req-0", "user"),
        ("req-0", "assistant"),
        ("req-1", "user"),
    ]
    assert stores.sessions.messages("t2", session.id) == []
    assert stores.sessions.messages("t1", "no-such-session") == []


@pytest.mark.parametrize(
    "stores",
    BACKENDS,
    indirect=True,
)
def test_recent_messages_newest_first_and_limited(stores):
    session = _three_turns(stores)
    recent = stores.sessions.recent_messages(session.id, 10)
    assert [(m.request_id, m.role) for m in recent] == [
        ("req-2", "assistant"),
        ("req-2", "user"),
        ("req-1", "assistant"),
        ("req-1", "user"),
        ("req-0", "assistant"),
        ("req-0", "user"),
    ]
    limited = stores.sessions.recent_messages(session.id, 3)
    assert [(m.request_id, m.role) for m in limited] == [
        ("req-2", "assistant"),
        ("req-2", "user"),
        ("req-1", "assistant"),
    ]


def test_recent_messages_newest_turns_first(stores):
    # The part of the ordering both adapters agree on: turns newest first, the limit keeps the newest.
    session = _three_turns(stores)
    recent = stores.sessions.recent_messages(session.id, 10)
    assert [m.request_id for m in recent] == ["req-2", "req-2", "req-1", "req-1", "req-0", "req-0"]
    assert {m.role for m in recent[:2]} == {"user", "assistant"}
    assert [m.request_id for m in stores.sessions.recent_messages(session.id, 4)] == ["req-2"] * 2 + ["req-1"] * 2
    assert stores.sessions.recent_messages("no-such-session", 10) == []


def test_message_by_request_finds_the_pair_of_one_tenant(stores):
    session = stores.sessions.create_session("t1", [])
    user, assistant = stores.sessions.create_turn(session, "req-1", "q")
    stores.sessions.create_turn(session, "req-2", "q2")
    assert stores.sessions.message_by_request("t1", session.id, "req-1") == (user, assistant)
    assert stores.sessions.message_by_request("t2", session.id, "req-1") is None
    assert stores.sessions.message_by_request("t1", session.id, "req-3") is None
    assert stores.sessions.message_by_request("t1", "other-session", "req-1") is None
    stores.sessions.complete_assistant_message(session.id, assistant.id, "done", [])
    _, completed = stores.sessions.message_by_request("t1", session.id, "req-1")
    assert (completed.is_completed, completed.content) == (True, "done")


# Updates and deletions (WeKnora's PUT/DELETE routes) ---------------------------------------------------------
def test_a_knowledge_base_is_renamed_and_its_old_name_freed(stores: Stores, two_tenants: tuple[str, str]) -> None:
    a, b = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "old", "minilm", "first")
    other = stores.knowledge.create_knowledge_base(a, "taken", "minilm")
    renamed = stores.knowledge.update_knowledge_base(a, kb.id, name="new", description="second")
    assert (renamed.name, renamed.description) == ("new", "second")
    assert stores.knowledge.knowledge_base(a, kb.id).name == "new"
    assert stores.knowledge.knowledge_base_by_name(a, "new").id == kb.id
    assert stores.knowledge.knowledge_base_by_name(a, "old") is None
    assert stores.knowledge.create_knowledge_base(a, "old", "minilm").id != kb.id  # the old name is free
    with pytest.raises(DuplicateName):
        stores.knowledge.update_knowledge_base(a, kb.id, name="taken")
    assert stores.knowledge.knowledge_base_by_name(a, "taken").id == other.id
    # Another tenant's id reads as absent and changes nothing.
    assert stores.knowledge.update_knowledge_base(b, kb.id, name="hijacked") is None
    assert stores.knowledge.knowledge_base(a, kb.id).name == "new"
    description_only = stores.knowledge.update_knowledge_base(a, kb.id, description="third")
    assert (description_only.name, description_only.description) == ("new", "third")


def test_deleting_a_document_removes_its_chunks_and_hash(stores: Stores, two_tenants: tuple[str, str]) -> None:
    a, b = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "kb", "minilm")
    doomed, doomed_chunks = make_document(a, kb.id, "Doomed", n_chunks=3, n_parents=1)
    kept, kept_chunks = make_document(a, kb.id, "Kept", n_chunks=2)
    stores.knowledge.insert_document(doomed, doomed_chunks)
    stores.knowledge.insert_document(kept, kept_chunks)
    assert stores.knowledge.delete_document(b, doomed.id) is False  # not B's
    assert stores.knowledge.document(a, doomed.id) is not None
    assert stores.knowledge.delete_document(a, doomed.id) is True
    assert stores.knowledge.document(a, doomed.id) is None
    assert stores.knowledge.chunks_of_document(a, doomed.id) == []
    assert stores.knowledge.chunks(a, [c.id for c in doomed_chunks]) == []
    assert stores.knowledge.documents_by_hash(a, kb.id, doomed.content_hash) is None
    assert [d.id for d in stores.knowledge.documents(a, kb.id)] == [kept.id]
    assert len(stores.knowledge.chunks_of_document(a, kept.id)) == 2
    assert stores.knowledge.document_counts([kb.id]) == {kb.id: 1}
    assert stores.knowledge.delete_document(a, doomed.id) is False


def test_deleting_a_knowledge_base_removes_everything_in_it(stores: Stores, two_tenants: tuple[str, str]) -> None:
    a, b = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "kb", "minilm")
    neighbour = stores.knowledge.create_knowledge_base(a, "neighbour", "minilm")
    document, chunks = make_document(a, kb.id, "Inside", n_chunks=2)
    outside, outside_chunks = make_document(a, neighbour.id, "Outside", n_chunks=1)
    stores.knowledge.insert_document(document, chunks)
    stores.knowledge.insert_document(outside, outside_chunks)
    assert stores.knowledge.delete_knowledge_base(b, kb.id) is False
    assert stores.knowledge.delete_knowledge_base(a, kb.id) is True
    assert stores.knowledge.knowledge_base(a, kb.id) is None
    assert stores.knowledge.knowledge_base_by_name(a, "kb") is None
    assert stores.knowledge.knowledge_base_any_tenant(kb.id) is None
    assert [k.id for k in stores.knowledge.list_knowledge_bases(a)] == [neighbour.id]
    assert stores.knowledge.document(a, document.id) is None
    assert stores.knowledge.chunks(a, [c.id for c in chunks]) == []
    assert stores.knowledge.document(a, outside.id) is not None
    assert stores.knowledge.create_knowledge_base(a, "kb", "minilm").id != kb.id


def test_deleting_one_message(stores: Stores, two_tenants: tuple[str, str]) -> None:
    a, b = two_tenants
    session = stores.sessions.create_session(a, [])
    user, assistant = stores.sessions.create_turn(session, "req-1", "hello?")
    assert stores.sessions.delete_message(b, session.id, user.id) is False
    assert stores.sessions.delete_message(a, "another-session", user.id) is False
    assert stores.sessions.delete_message(a, session.id, user.id) is True
    assert [m.id for m in stores.sessions.messages(a, session.id)] == [assistant.id]
    assert stores.sessions.delete_message(a, session.id, user.id) is False


# Tags (WeKnora's tag objects) --------------------------------------------------------------------------------
def test_tags_are_registered_renamed_and_deleted(stores: Stores, two_tenants: tuple[str, str]) -> None:
    a, b = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "kb", "minilm")
    other_kb = stores.knowledge.create_knowledge_base(a, "other", "minilm")
    docs = stores.tags.create_tag(a, kb.id, "Docs", color="#1890ff", sort_order=2)
    faq = stores.tags.create_tag(a, kb.id, "FAQ", sort_order=1)
    implicit = stores.tags.create_tag(a, kb.id, "Renamed", tag_id="legacy")
    assert implicit.id == "legacy"
    assert [t.name for t in stores.tags.tags(a, kb.id)] == ["Renamed", "FAQ", "Docs"]  # sort_order, then name
    with pytest.raises(DuplicateName):
        stores.tags.create_tag(a, kb.id, "Docs")
    assert stores.tags.create_tag(a, other_kb.id, "Docs").id != docs.id  # names are per knowledge base
    assert stores.tags.tag(a, kb.id, docs.id).color == "#1890ff"
    assert stores.tags.tag(b, kb.id, docs.id) is None
    assert stores.tags.tags(b, kb.id) == []
    renamed = stores.tags.update_tag(a, kb.id, docs.id, name="Manuals", sort_order=0)
    assert (renamed.name, renamed.sort_order, renamed.color) == ("Manuals", 0, "#1890ff")
    assert stores.tags.tag(a, kb.id, docs.id).name == "Manuals"
    assert stores.tags.create_tag(a, kb.id, "Docs").name == "Docs"  # the old name is free again
    with pytest.raises(DuplicateName):
        stores.tags.update_tag(a, kb.id, faq.id, name="Manuals")
    assert stores.tags.update_tag(b, kb.id, faq.id, name="x") is None
    assert stores.tags.delete_tag(b, kb.id, faq.id) is False
    assert stores.tags.delete_tag(a, kb.id, faq.id) is True
    assert faq.id not in {t.id for t in stores.tags.tags(a, kb.id)}
    assert stores.tags.create_tag(a, kb.id, "FAQ").id != faq.id


def test_a_tag_is_replaced_on_every_document_carrying_it(stores: Stores, two_tenants: tuple[str, str]) -> None:
    a, b = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "kb", "minilm")
    for title, tags in (("One", ["x", "y"]), ("Two", ["x"]), ("Three", ["y"])):
        document, chunks = make_document(a, kb.id, title)
        stores.knowledge.insert_document(document.model_copy(update={"tags": tags}), chunks)
    assert stores.knowledge.replace_document_tag(b, kb.id, "x", "z") == 0
    assert stores.knowledge.replace_document_tag(a, kb.id, "x", "y") == 2
    by_title = {d.title: d.tags for d in stores.knowledge.documents(a, kb.id)}
    assert by_title == {"One": ["y"], "Two": ["y"], "Three": ["y"]}
    assert stores.knowledge.document(a, "Two-" + a).tags == ["y"]
    assert stores.knowledge.replace_document_tag(a, kb.id, "y", None) == 3
    assert all(d.tags == [] for d in stores.knowledge.documents(a, kb.id))
    assert stores.knowledge.document_ids_with_tags(a, kb.id, ["y"]) == []


def test_a_chunk_is_edited_and_deleted_in_place(stores: Stores, two_tenants: tuple[str, str]) -> None:
    a, b = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "kb", "minilm")
    document, chunks = make_document(a, kb.id, "Doc", n_chunks=3, n_parents=1)
    first, middle, last = (c for c in chunks if c.searchable)
    stores.knowledge.insert_document(document, chunks)
    assert stores.knowledge.update_chunk(b, middle.id, content="hijacked") is None
    edited = stores.knowledge.update_chunk(a, middle.id, content="new text", enabled=False)
    assert (edited.content, edited.enabled) == ("new text", False)
    [stored] = stores.knowledge.chunks(a, [middle.id])
    assert (stored.content, stored.enabled) == ("new text", False)
    by_document = {c.id: c for c in stores.knowledge.chunks_of_document(a, document.id)}
    assert by_document[middle.id].content == "new text"
    assert stores.knowledge.delete_chunk(b, middle.id) is False
    assert stores.knowledge.delete_chunk(a, middle.id) is True
    assert stores.knowledge.chunks(a, [middle.id]) == []
    remaining = {c.id: c for c in stores.knowledge.chunks_of_document(a, document.id)}
    assert middle.id not in remaining
    # Its neighbours now link to each other, and the document counts one searchable chunk less.
    assert remaining[first.id].next_chunk_id == last.id
    assert remaining[last.id].pre_chunk_id == first.id
    assert stores.knowledge.document(a, document.id).chunk_count == 2
    parent = next(c for c in chunks if not c.searchable)
    assert stores.knowledge.delete_chunk(a, parent.id) is True
    assert all(c.parent_chunk_id == "" for c in stores.knowledge.chunks_of_document(a, document.id))
    assert stores.knowledge.document(a, document.id).chunk_count == 2  # a parent is not counted


def test_a_document_is_retitled_redescribed_and_retagged(stores: Stores, two_tenants: tuple[str, str]) -> None:
    a, b = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "kb", "minilm")
    document, chunks = make_document(a, kb.id, "Draft")
    stores.knowledge.insert_document(document.model_copy(update={"tags": ["x"]}), chunks)
    assert stores.knowledge.update_document(b, document.id, title="Stolen") is None
    unchanged = stores.knowledge.update_document(a, document.id, title="Draft")
    assert unchanged is not None
    assert unchanged.updated_at == document.updated_at  # nothing changed, nothing written
    updated = stores.knowledge.update_document(a, document.id, title="Final", description="Read me", tags=[" y ", "y"])
    assert updated is not None
    assert (updated.title, updated.description, updated.tags) == ("Final", "Read me", ["y"])
    assert updated.updated_at > document.updated_at
    for read in (stores.knowledge.document(a, document.id), stores.knowledge.documents(a, kb.id)[0]):
        assert (read.title, read.description, read.tags) == ("Final", "Read me", ["y"])
    assert stores.knowledge.document_ids_with_tags(a, kb.id, ["y"]) == [document.id]
    cleared = stores.knowledge.update_document(a, document.id, description="", tags=[])
    assert cleared is not None
    assert (cleared.title, cleared.description, cleared.tags) == ("Final", "", [])
    assert stores.knowledge.update_document(a, "no-such-document", title="x") is None


def test_a_knowledge_base_is_pinned_and_unpinned(stores: Stores, two_tenants: tuple[str, str]) -> None:
    a, b = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "kb", "minilm", description="notes")
    assert kb.pinned_at is None
    assert stores.knowledge.update_knowledge_base(b, kb.id, pinned=True) is None
    pinned = stores.knowledge.update_knowledge_base(a, kb.id, pinned=True)
    assert pinned is not None
    assert pinned.pinned_at
    again = stores.knowledge.update_knowledge_base(a, kb.id, pinned=True)
    assert again is not None
    assert again.pinned_at == pinned.pinned_at  # already pinned: the time it was pinned stays
    read = stores.knowledge.knowledge_base(a, kb.id)
    assert read is not None
    assert (read.pinned_at, read.name, read.description) == (pinned.pinned_at, "kb", "notes")
    assert stores.knowledge.list_knowledge_bases(a)[0].pinned_at == pinned.pinned_at
    unpinned = stores.knowledge.update_knowledge_base(a, kb.id, pinned=False)
    assert unpinned is not None
    assert unpinned.pinned_at is None
    read = stores.knowledge.knowledge_base(a, kb.id)
    assert read is not None
    assert read.pinned_at is None


def test_a_document_parsed_again_keeps_its_id_and_has_only_its_new_chunks(
    stores: Stores, two_tenants: tuple[str, str]
) -> None:
    a, b = two_tenants
    kb = stores.knowledge.create_knowledge_base(a, "kb", "minilm")
    old, old_chunks = make_document(a, kb.id, "Report", n_chunks=3, n_parents=1, content_hash="old-hash")
    stores.knowledge.insert_document(old, old_chunks)
    # Parsed again: fewer chunks with new ids, a new hash, pending again.
    new, new_chunks = make_document(a, kb.id, "Report", n_chunks=2, content_hash="new-hash")
    new_chunks = [c.model_copy(update={"id": c.id + "-v2", "content": c.content + " (v2)"}) for c in new_chunks]
    new_chunks[0].next_chunk_id, new_chunks[1].pre_chunk_id = new_chunks[1].id, new_chunks[0].id
    new = new.model_copy(update={"status": DocumentStatus.PENDING, "pages": 4, "title": "Report v2"})
    foreign = new.model_copy(update={"tenant_id": b})
    assert stores.knowledge.replace_document(foreign, new_chunks) is False
    assert stores.knowledge.replace_document(new, new_chunks) is True
    stored = stores.knowledge.document(a, old.id)
    assert stored is not None
    assert (stored.id, stored.created_at, stored.title, stored.pages) == (old.id, old.created_at, "Report v2", 4)
    assert (stored.chunk_count, stored.status, stored.content_hash) == (2, "pending", "new-hash")
    assert [c.id for c in stores.knowledge.chunks_of_document(a, old.id)] == [c.id for c in new_chunks]
    assert stores.knowledge.chunks(a, [c.id for c in old_chunks]) == []
    assert [c.content for c in stores.knowledge.chunks(a, [new_chunks[1].id])] == [new_chunks[1].content]
    assert [d.id for d in stores.knowledge.documents(a, kb.id)] == [old.id]
    assert stores.knowledge.documents_by_hash(a, kb.id, "old-hash") is None
    found = stores.knowledge.documents_by_hash(a, kb.id, "new-hash")
    assert found is not None
    assert found.id == old.id
    assert [d.id for d in stores.knowledge.pending_documents()] == [old.id]
    missing, missing_chunks = make_document(a, kb.id, "Missing")
    assert stores.knowledge.replace_document(missing, missing_chunks) is False
    assert stores.knowledge.document(a, missing.id) is None


# Provisional titles, feedback, alternatives, fork, rewind and search (issue 13) -------------------------------
def _turns(stores: Stores, session: Session, *questions: str) -> list[tuple[Message, Message]]:
    """Finished turns: each question answered with "answer to <question>"."""
    made = []
    for i, question in enumerate(questions):
        user, assistant = stores.sessions.create_turn(session, f"req-{i}-{question[:8]}", question)
        stores.sessions.complete_assistant_message(session.id, assistant.id, f"answer to {question}", [])
        made.append((user, stores.sessions.message(session.tenant_id, session.id, assistant.id)))
    return made


def test_a_provisional_title_is_set_once_and_replaced_by_any_real_title(stores):
    session = stores.sessions.create_session("t1", [])
    assert stores.sessions.set_provisional_title("t1", session.id, "What water temperature…") is True
    provisional = stores.sessions.session("t1", session.id)
    assert (provisional.title, provisional.title_provisional) == ("What water temperature…", True)
    # Not activity: the session does not move up the list for it.
    assert provisional.updated_at == session.updated_at
    # A session with a title (provisional or not) keeps it; another tenant's is untouched.
    assert stores.sessions.set_provisional_title("t1", session.id, "Another") is False
    assert stores.sessions.set_provisional_title("t2", session.id, "Hijack") is False
    assert stores.sessions.session("t1", session.id).title == "What water temperature…"
    stores.sessions.set_title("t1", session.id, "Coffee water temperature")
    generated = stores.sessions.session("t1", session.id)
    assert (generated.title, generated.title_provisional) == ("Coffee water temperature", False)
    assert stores.sessions.set_provisional_title("t1", session.id, "Late") is False
    renamed = stores.sessions.create_session("t1", [])
    stores.sessions.set_provisional_title("t1", renamed.id, "First words…")
    updated = stores.sessions.update_session("t1", renamed.id, title="My name")
    assert (updated.title, updated.title_provisional) == ("My name", False)
    titled = stores.sessions.create_session("t1", [], title="Given")
    assert stores.sessions.set_provisional_title("t1", titled.id, "Other") is False
    assert stores.sessions.session("t1", titled.id).title_provisional is False


def test_feedback_is_stored_on_the_message_and_taken_back(stores):
    session = stores.sessions.create_session("t1", [])
    [(_user, assistant)] = _turns(stores, session, "q")
    rated = stores.sessions.set_feedback("t1", session.id, assistant.id, "down", "It quoted the wrong part.")
    assert (rated.feedback, rated.feedback_comment) == ("down", "It quoted the wrong part.")
    assert rated.content == "answer to q"
    assert rated.updated_at == assistant.updated_at  # not activity
    stored = stores.sessions.message("t1", session.id, assistant.id)
    assert (stored.feedback, stored.feedback_comment) == ("down", "It quoted the wrong part.")
    assert [m.feedback for m in stores.sessions.messages("t1", session.id)] == ["", "down"]
    assert stores.sessions.set_feedback("t1", session.id, assistant.id, "up", "").feedback == "up"
    assert stores.sessions.set_feedback("t1", session.id, assistant.id, "", "").feedback == ""
    # Another tenant's, another session's or an unknown message: None, and nothing written anywhere.
    assert stores.sessions.set_feedback("t2", session.id, assistant.id, "up", "x") is None
    assert stores.sessions.set_feedback("t1", session.id, "no-such-message", "up", "x") is None
    other = stores.sessions.create_session("t1", [])
    assert stores.sessions.set_feedback("t1", other.id, assistant.id, "up", "x") is None
    assert stores.sessions.message("t1", session.id, assistant.id).feedback == ""
    assert stores.sessions.messages("t1", other.id) == []


def test_a_turn_records_the_turn_it_is_an_alternative_of(stores):
    session = stores.sessions.create_session("t1", [])
    [(_, first)] = _turns(stores, session, "q")
    user, again = stores.sessions.create_turn(session, "req-again", "q", alternative_of=first.id)
    assert (user.alternative_of, again.alternative_of) == (first.id, first.id)
    stored = {m.id: m.alternative_of for m in stores.sessions.messages("t1", session.id)}
    assert stored[again.id] == stored[user.id] == first.id
    assert stored[first.id] == ""


def test_add_and_delete_messages(stores):
    session = stores.sessions.create_session("t1", [])
    [(user, assistant)] = _turns(stores, session, "q")
    copy = stores.sessions.create_session("t1", [])
    copies = [m.model_copy(update={"id": f"copy-{m.id}", "session_id": copy.id}) for m in (user, assistant)]
    stores.sessions.add_messages(copies)
    assert stores.sessions.messages("t1", copy.id) == copies
    assert stores.sessions.delete_messages("t2", copy.id, [copies[0].id]) == 0
    assert stores.sessions.delete_messages("t1", copy.id, [copies[1].id, "no-such-id"]) == 1
    assert stores.sessions.messages("t1", copy.id) == copies[:1]
    assert len(stores.sessions.messages("t1", session.id)) == 2


def test_fork_copies_the_turns_up_to_a_message_into_a_new_session(stores):
    session = stores.sessions.create_session("t1", ["kb1"], title="Brewing", options={"language": "en"})
    turns = _turns(stores, session, "first", "second", "third")
    stores.sessions.set_feedback("t1", session.id, turns[1][1].id, "up", "")
    before = stores.sessions.messages("t1", session.id)
    fork, copies = fork_session(stores.sessions, session, turns[1][0].id)  # the second turn's question
    assert (fork.title, fork.knowledge_base_ids, fork.options) == ("Brewing (fork)", ["kb1"], {"language": "en"})
    assert fork.id != session.id
    stored = stores.sessions.messages("t1", fork.id)
    assert stored == copies
    assert [(m.role, m.content) for m in stored] == [
        ("user", "first"),
        ("assistant", "answer to first"),
        ("user", "second"),
        ("assistant", "answer to second"),
    ]
    assert {m.id for m in stored}.isdisjoint(m.id for m in before)
    assert stored[3].feedback == "up"
    assert [m.created_at for m in stored] == [m.created_at for m in before[:4]]
    assert stores.sessions.messages("t1", session.id) == before  # the original is unchanged
    # Forking at the last answer copies everything.
    whole, _ = fork_session(stores.sessions, session, turns[2][1].id)
    assert len(stores.sessions.messages("t1", whole.id)) == 6
    with pytest.raises(UnknownMessage):
        fork_session(stores.sessions, session, "no-such-message")


def test_fork_keeps_alternatives_linked_and_refuses_a_running_turn(stores):
    session = stores.sessions.create_session("t1", [])
    [(_, first)] = _turns(stores, session, "q")
    _, again = stores.sessions.create_turn(session, "req-again", "q", alternative_of=first.id)
    with pytest.raises(TurnRunning):
        fork_session(stores.sessions, session, again.id)
    stores.sessions.complete_assistant_message(session.id, again.id, "another answer", [])
    _fork, copies = fork_session(stores.sessions, session, again.id)
    first_copy, again_copy = copies[1], copies[3]
    assert (first_copy.content, again_copy.content) == ("answer to q", "another answer")
    assert again_copy.alternative_of == first_copy.id  # linked to the copy, not to the original
    # Forking before the running turn is fine: it is not copied.
    fork_before, _ = fork_session(stores.sessions, session, first.id)
    assert len(stores.sessions.messages("t1", fork_before.id)) == 2


def test_rewind_deletes_the_turns_after_a_message(stores):
    session = stores.sessions.create_session("t1", [])
    turns = _turns(stores, session, "first", "second", "third")
    deleted = rewind_session(stores.sessions, session, turns[0][1].id)
    assert [m.content for m in deleted] == ["second", "answer to second", "third", "answer to third"]
    assert [m.content for m in stores.sessions.messages("t1", session.id)] == ["first", "answer to first"]
    assert rewind_session(stores.sessions, session, turns[0][0].id) == []  # nothing after it any more
    with pytest.raises(UnknownMessage):
        rewind_session(stores.sessions, session, turns[2][0].id)  # deleted
    # A running answer after the point is not cut off.
    _, running = stores.sessions.create_turn(session, "req-running", "fourth")
    with pytest.raises(TurnRunning):
        rewind_session(stores.sessions, session, turns[0][0].id)
    assert len(stores.sessions.messages("t1", session.id)) == 4
    assert running.id in {m.id for m in stores.sessions.messages("t1", session.id)}


def test_sessions_are_found_by_title_and_by_what_their_messages_say(stores):
    titled = stores.sessions.create_session("t1", [], title="Espresso GRIND notes")
    talked = stores.sessions.create_session("t1", [])
    _turns(stores, talked, "How fine should the grind be for espresso?")
    quiet = stores.sessions.create_session("t1", [], title="Tea")
    _turns(stores, quiet, "Green tea temperature?")
    theirs = stores.sessions.create_session("t2", [], title="grind")
    mine = stores.sessions.sessions("t1")
    found = search_sessions(stores.sessions, "t1", "  grind ", mine)
    assert [(s.id, match) for s, match in found] == [
        (talked.id, "How fine should the grind be for espresso?"),
        (titled.id, ""),
    ]
    assert theirs.id not in {s.id for s, _ in found}
    assert [s.id for s, _ in search_sessions(stores.sessions, "t1", "ANSWER TO GREEN", mine)] == [quiet.id]
    assert search_sessions(stores.sessions, "t1", "nothing like this", mine) == []


# Citation history (the memory-affinity boost's signal) ----------------------------------------------------
LIMIT = MemoryAffinityConfig().max_doc_ids


def _citation_history(stores: Stores):
    if stores.backend == "dynamodb":
        from ragline.store.dynamodb import DynamoCitationHistory

        return DynamoCitationHistory(stores.sessions, max_sessions=MemoryAffinityConfig().max_sessions)
    from ragline.store.citations import SqliteCitationHistory

    return SqliteCitationHistory(stores.sessions._db, max_messages=MemoryAffinityConfig().max_messages)


def test_the_citation_history_counts_only_the_callers_answers(stores: Stores, two_tenants):
    a, b = two_tenants
    session = stores.sessions.create_session(a, [])
    elsewhere = stores.sessions.create_session(b, [])
    for request_id, user, documents, target in (
        ("r1", "ann", ["doc-a", "doc-a", "doc-b"], session),
        ("r2", "ann", ["doc-a"], session),
        ("r3", "bob", ["doc-c"], session),
        ("r4", "", ["doc-d"], session),
        ("r5", "ann", ["doc-e"], elsewhere),
    ):
        user_message, assistant = stores.sessions.create_turn(target, request_id, "question", user_id=user)
        assert user_message.user_id == user
        references = [{"id": f"{request_id}-{i}", "knowledge_id": d} for i, d in enumerate(documents)]
        stores.sessions.complete_assistant_message(target.id, assistant.id, "answer", references)
    history = _citation_history(stores)
    assert history.cited_documents(a, "ann", LIMIT) == {"doc-a": 2, "doc-b": 1}
    assert history.cited_documents(a, "bob", LIMIT) == {"doc-c": 1}
    assert history.cited_documents(a, "", LIMIT) == {"doc-d": 1}
    assert history.cited_documents(b, "ann", LIMIT) == {"doc-e": 1}
    stored = stores.sessions.messages(a, session.id)
    assert {m.user_id for m in stored if m.request_id == "r3"} == {"bob"}
