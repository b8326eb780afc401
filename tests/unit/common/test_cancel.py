"""The cancelled threads: no commit starts on one; other threads, and later ones, go on."""

from __future__ import annotations

import gc
import threading

from dbt.adapters.deltamerge.common import cancel as cancel_module
from dbt.adapters.deltamerge.common.cancel import Cancelled, cancel, cancelled, refuse_if_cancelled


def _in_thread(work, *, cancelled_first: bool) -> BaseException | None:
    """Run ``work`` in a new thread (cancelled before it starts, or not); what it raised."""
    raised: list[BaseException] = []
    go = threading.Event()

    def body() -> None:
        go.wait()
        try:
            work()
        except BaseException as error:  # handed to the test
            raised.append(error)

    thread = threading.Thread(target=body)
    thread.start()
    if cancelled_first:
        cancel(thread)
    go.set()
    thread.join()
    return raised[0] if raised else None


def test_a_cancelled_thread_starts_no_commit():
    error = _in_thread(lambda: refuse_if_cancelled("/w/t", 6), cancelled_first=True)
    assert isinstance(error, Cancelled)
    assert str(error) == "Cancelled (Ctrl-C or --fail-fast) before its commit: /w/t stays at version 6."
    error = _in_thread(lambda: refuse_if_cancelled("/w/new", -1), cancelled_first=True)
    assert str(error) == "Cancelled (Ctrl-C or --fail-fast) before its commit: /w/new was not created."


def test_other_threads_commit():
    assert _in_thread(lambda: refuse_if_cancelled("/w/t", 6), cancelled_first=False) is None
    refuse_if_cancelled("/w/t", 6)  # this thread was never cancelled
    assert not cancelled()


def test_an_ended_thread_is_forgotten():
    for _ in range(3):
        thread = threading.Thread(target=lambda: None)
        cancel(thread)
        assert cancelled(thread)
    del thread
    gc.collect()
    assert len(cancel_module._CANCELLED) == 0
