"""The long-operation lines: when they come, what they say, and which thread's subject they name."""

from __future__ import annotations

from types import SimpleNamespace

from dbt.adapters.deltamerge.spark.progress import EVERY_SECONDS, FIRST_SECONDS, LongOperations, working_on


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_line_after_the_first_interval_then_one_per_interval_and_none_after_done():
    said: list[str] = []
    clock = Clock()
    handler = LongOperations(said.append, clock)
    stage = SimpleNamespace(num_tasks=8, num_completed_tasks=3, num_bytes_read=2**30)
    with working_on("Model 'orders'"):
        handler([stage], 2, "op-1", False)  # starts
        clock.now += FIRST_SECONDS - 1
        handler([stage], 2, "op-1", False)
        assert said == []
        clock.now += 1
        handler([stage], 2, "op-1", False)
        assert said == ["Model 'orders': Spark is still working (30 s): 3 of 8 tasks done, 1.0 GiB read"]
        clock.now += EVERY_SECONDS / 2
        handler([stage], 2, "op-1", False)
        assert len(said) == 1
        clock.now += EVERY_SECONDS / 2
        handler([], 0, "op-1", False)
        assert said[-1] == "Model 'orders': Spark is still working (90 s)"
        handler([], 0, "op-1", True)  # done: forgotten
        clock.now += EVERY_SECONDS * 3
        handler([], 0, "op-1", False)  # (a reused id starts again)
    assert len(said) == 2


def test_operations_are_timed_apart_and_an_unnamed_thread_says_no_subject():
    said: list[str] = []
    clock = Clock()
    handler = LongOperations(said.append, clock)
    handler([], 0, "a", False)
    clock.now += FIRST_SECONDS
    handler([], 0, "b", False)  # b just started
    handler([], 0, "a", False)
    handler(None, 0, None, False)  # no operation id: ignored
    assert said == ["Spark is still working (30 s)"]
