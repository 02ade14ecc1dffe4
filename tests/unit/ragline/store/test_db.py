"""The embedded database: reads answer from the last committed state while a writer holds its transaction."""

import threading

from ragline.store.db import Database

NOW = "2026-12-06T00:00:00.000"


def _tenant(conn, tenant_id: str) -> None:
    conn.execute("INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?)", (tenant_id, tenant_id, NOW))


def _ids(rows) -> list[str]:
    return sorted(row["id"] for row in rows)


def test_reads_do_not_wait_for_another_threads_write_transaction(tmp_path):
    db = Database(tmp_path / "ragline.db")
    with db.transaction() as conn:
        _tenant(conn, "a")
    writing, release = threading.Event(), threading.Event()

    def writer() -> None:
        with db.transaction() as conn:  # a large upload's chunks, say: seconds of inserts
            _tenant(conn, "b")
            writing.set()
            release.wait(30)  # only a server that made reads wait would let this run out

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert writing.wait(30)
        rows = db.query("SELECT id FROM tenants")
        one = db.query_one("SELECT count(*) AS n FROM tenants")
        with db.snapshot() as snap:
            assert snap is not None
            in_snapshot = _ids(snap.execute("SELECT id FROM tenants").fetchall())
        still_writing = thread.is_alive() and not release.is_set()
    finally:
        release.set()
        thread.join()
    assert still_writing  # every read above answered while the transaction was open
    assert _ids(rows) == ["a"]
    assert one is not None
    assert one["n"] == 1
    assert in_snapshot == ["a"]
    assert _ids(db.query("SELECT id FROM tenants")) == ["a", "b"]  # committed: seen at once
    db.close()


def test_a_thread_inside_its_transaction_reads_what_it_wrote(tmp_path):
    db = Database(tmp_path / "ragline.db")
    with db.transaction() as conn:
        _tenant(conn, "a")
        assert _ids(db.query("SELECT id FROM tenants")) == ["a"]
        row = db.query_one("SELECT id FROM tenants WHERE id = 'a'")
        assert row is not None
        with db.snapshot() as snap:
            assert snap is None  # what it would read may yet be rolled back
    db.close()


def test_a_rolled_back_write_is_never_read(tmp_path):
    db = Database(tmp_path / "ragline.db")
    try:
        with db.transaction() as conn:
            _tenant(conn, "a")
            raise RuntimeError("the upload failed")
    except RuntimeError:
        pass
    assert db.query("SELECT id FROM tenants") == []
    db.close()
