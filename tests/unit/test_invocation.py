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


def test_each_invocation_reaches_object_stores_with_its_own_options_and_clients():
    """Two invocations one after another in one process, with two profiles' credentials: each
    keeps its own stores (the options and the clients made from them), and the tables its catalog
    reads finds are reached through them."""
    reset_invocation_id()
    first = current()
    first.stores.configure(
        {"AWS_ACCESS_KEY_ID": "k1", "AWS_SECRET_ACCESS_KEY": "s1", "AWS_REGION": "eu-west-1"}
    )
    reset_invocation_id()
    second = current()
    second.stores.configure(
        {"AWS_ACCESS_KEY_ID": "k2", "AWS_SECRET_ACCESS_KEY": "s2", "AWS_REGION": "eu-west-1"}
    )
    assert first.stores is not second.stores and first.catalog.stores is first.stores
    ours, theirs = (TableLocation.of("s3://lake/t", i.stores) for i in (first, second))
    assert ours.deltalake_options()["AWS_ACCESS_KEY_ID"] == "k1"  # type: ignore[index]
    assert theirs.deltalake_options()["AWS_ACCESS_KEY_ID"] == "k2"  # type: ignore[index]
    assert ours.store.clients.client("s3://lake/t")[0] is not theirs.store.clients.client("s3://lake/t")[0]  # type: ignore[union-attr]
