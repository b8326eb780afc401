"""Each dbt invocation has its own knowledge; one invocation's is one object across its threads."""

from __future__ import annotations

import threading

from dbt_common.invocation import get_invocation_id, reset_invocation_id

from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.invocation import KEPT, current
from dbt.adapters.deltamerge.spark.process import PROCESS


def test_an_invocation_is_one_object_and_the_next_starts_knowing_nothing():
    reset_invocation_id()
    first = current()
    first.catalog.bound("s", "t", TableLocation.of("/w/s.db/t"), 3)
    seen: list[object] = []
    worker = threading.Thread(target=lambda: seen.append(current()))  # dbt's model threads
    worker.start()
    worker.join()
    assert seen == [first] and seen[0] is first and first.id == get_invocation_id()
    assert first.next_txn("s", "t") == (f"dbt-deltamerge:{first.id}:s.t", 0)
    assert first.next_txn("s", "t")[1] == 1

    reset_invocation_id()  # dbt's Python API: the next invocation in the same process
    second = current()
    assert second is not first and second.id != first.id
    assert second.next_txn("s", "t") == (f"dbt-deltamerge:{second.id}:s.t", 0)
    assert first.catalog._known and not second.catalog._known


def test_only_the_last_invocations_are_kept():
    for _ in range(KEPT + 3):
        reset_invocation_id()
        current()
    assert len(PROCESS.invocations) == KEPT
    assert get_invocation_id() in PROCESS.invocations
