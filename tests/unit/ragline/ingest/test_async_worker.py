"""The background worker's loop (enrichment, graph): work runs there, and stopping it ends every piece of work.

A stop used to halt the loop at once: work just submitted was never started ("coroutine … was never awaited"),
work under way was destroyed pending rather than cancelled (its ``finally`` never ran), and the loop was never closed.
"""

import asyncio
import concurrent.futures
import gc
import logging
import threading
import warnings

import pytest

from ragline.ingest.background import AsyncWorker


def test_work_runs_on_the_workers_loop_at_most_concurrency_at_once():
    worker = AsyncWorker("test-worker", concurrency=2)
    running, most = 0, 0
    lock = threading.Lock()
    two_running = asyncio.Event()  # binds to the worker's loop on first use

    async def work(n: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
            if running == 2:
                two_running.set()
        await two_running.wait()  # the first holds its turn until a second runs beside it
        with lock:
            running -= 1
        return n * n

    futures = [worker.submit(lambda n=n: work(n)) for n in range(8)]
    try:
        assert [future.result(30) for future in futures] == [n * n for n in range(8)]
        assert most == 2
        assert worker.idle
    finally:
        assert worker.stop()


def test_stop_cancels_work_under_way_and_work_waiting_its_turn():
    worker = AsyncWorker("test-worker", concurrency=1)
    started, cleaned_up, second_started = threading.Event(), threading.Event(), threading.Event()

    async def forever() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cleaned_up.set()  # runs only if the task is cancelled, not destroyed

    async def second() -> None:
        second_started.set()

    running = worker.submit(forever)
    waiting = [worker.submit(second) for _ in range(5)]
    assert started.wait(30)
    assert worker.stop()
    assert cleaned_up.is_set()
    assert running.cancelled()
    # Cancelled together: none takes the slot the first one's cancellation frees (one at a time, from outside the
    # loop, the next in line could start and finish before its own cancellation arrived).
    assert [future.cancelled() for future in waiting] == [True] * 5
    assert not second_started.is_set()
    assert worker.idle


def test_stop_gives_up_after_its_timeout_on_work_that_ignores_cancellation_and_cancels_its_future():
    worker = AsyncWorker("test-worker")
    started, release = threading.Event(), threading.Event()

    async def stubborn() -> None:
        # A future of the loop's pool, not a task: the stop's wind-down does not cancel it.
        released = asyncio.get_running_loop().run_in_executor(None, release.wait)
        started.set()
        while True:
            try:
                await asyncio.shield(released)
                return
            except asyncio.CancelledError:
                continue  # ignores its cancellation until released

    future = worker.submit(stubborn)
    assert started.wait(30)
    try:
        assert not worker.stop(timeout=0.2)
        assert future.cancelled()
    finally:
        release.set()  # the work then ends, and the loop's thread closes the loop


def test_work_submitted_while_the_worker_stops_ends_without_a_coroutine_left_unawaited(caplog):
    caplog.set_level(logging.ERROR, logger="asyncio")
    futures: list[concurrent.futures.Future] = []

    async def work() -> None:
        pass

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(60):
            worker = AsyncWorker("test-worker")
            worker.submit(work).result(30)  # the loop runs
            go = threading.Event()

            def submit_many(worker: AsyncWorker = worker, go: threading.Event = go) -> None:
                go.wait()
                futures.extend(worker.submit(work) for _ in range(10))

            thread = threading.Thread(target=submit_many)
            thread.start()
            go.set()
            assert worker.stop()
            thread.join(30)
            assert worker.stop()  # a submit after the first stop started the loop again
            assert worker.idle
        gc.collect()
    assert all(future.done() for future in futures)
    unawaited = [str(w.message) for w in caught if "never awaited" in str(w.message)]
    unclosed = [str(w.message) for w in caught if "unclosed event loop" in str(w.message)]
    assert unawaited == []
    assert unclosed == []
    assert [r.getMessage() for r in caplog.records if "destroyed but it is pending" in r.getMessage()] == []


def test_on_stop_runs_on_the_loop_once_the_work_has_ended():
    order: list[str] = []
    loops: list[asyncio.AbstractEventLoop] = []

    async def on_stop() -> None:  # the models' connection pools bound to this loop are closed here
        loops.append(asyncio.get_running_loop())
        order.append("on_stop")

    worker = AsyncWorker("test-worker", on_stop=on_stop)
    started = threading.Event()

    async def work() -> None:
        loops.append(asyncio.get_running_loop())
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            order.append("work ended")

    worker.submit(work)
    assert started.wait(30)
    assert worker.stop()
    assert order == ["work ended", "on_stop"]
    assert loops[0] is loops[1]
    assert loops[0].is_closed()


@pytest.mark.parametrize("stops", [1, 2])
def test_stop_of_a_worker_never_started_or_stopped_again_is_immediate(stops):
    worker = AsyncWorker("test-worker")
    assert all(worker.stop() for _ in range(stops))
