"""A knowledge search never waits for a write: its reads run on threads of their own (``ragline.reads``).

Under the mixed load every thread of the event loop's default pool waited for SQLite's writer lock (chat turns'
writes behind an upload's store), and a search queued behind them answered after 4-8 s.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from ragline.config import Settings
from ragline.container import Container
from ragline.ingest.service import DocumentInput
from ragline.runtime.search import SearchBody


def test_a_search_answers_while_every_default_pool_thread_waits_for_the_writer(tmp_path: Path) -> None:
    container = Container.embedded(Settings(data_dir=tmp_path))
    try:
        tenant, _ = container.tenants.create("t")
        kb = container.knowledge.create_knowledge_base(tenant.id, "kb", "local:all-MiniLM-L6-v2-int8")
        text = "Zebras live in herds on the savanna. Their stripes confuse biting flies."
        accepted = container.ingest.accept_many(kb, [DocumentInput(content=text, title="Zebras")])
        container.ingest.index_documents([r.document for r in accepted])

        async def scenario() -> list[str]:
            held, release = threading.Event(), threading.Event()

            def hold_the_writer() -> None:
                with container.db.transaction():
                    held.set()
                    release.wait(120)

            holder = threading.Thread(target=hold_the_writer)
            holder.start()
            assert held.wait(30)
            # More writers than the default pool has threads (at most 32): every one of them waits for the lock.
            writers = [asyncio.ensure_future(asyncio.to_thread(container.tenants.create, f"w{i}")) for i in range(40)]
            try:
                results = await asyncio.wait_for(
                    container.search.search(tenant.id, SearchBody(query="zebra stripes", knowledge_base_ids=[kb.id])),
                    timeout=60,
                )
                assert holder.is_alive()  # answered while the writer's lock was still held
                return [r.knowledge_id for r in results]
            finally:
                release.set()
                await asyncio.gather(*writers)
                holder.join()

        assert asyncio.run(scenario()) == [accepted[0].document.id]
    finally:
        container.close()
