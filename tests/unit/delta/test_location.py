"""A table's location is its handle: its store chosen once, on first use, refusing an unsafe scheme."""

from __future__ import annotations

import pytest

from dbt.adapters.deltamerge.delta.errors import StorageError
from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.stores import LocalStore, ObjectStore, Stores


def test_the_store_is_chosen_once_and_the_log_paths_are_the_locations():
    local, remote = TableLocation.of("file:/w/s.db/t"), TableLocation.of("s3a://lake/wh/t/")
    assert isinstance(local.store, LocalStore) and local.store is local.store
    assert isinstance(remote.store, ObjectStore) and remote.deltalake_options() is not None
    assert local.commit_file(12) == "/w/s.db/t/_delta_log/00000000000000000012.json"
    assert (remote.path, remote.name, remote.log_folder) == (
        "s3a://lake/wh/t",
        "t",
        "s3a://lake/wh/t/_delta_log",
    )
    assert local.inner("_cdc_state").path == "/w/s.db/t/_cdc_state"


def test_a_scheme_where_no_commit_is_safe_is_refused_by_name_before_anything():
    for uri, store in (("wasbs://c@account.blob.core.windows.net/t", "WASB"), ("hdfs://nn/w/t", "HDFS")):
        with pytest.raises(StorageError, match=f"{store}.*no conditional create"):
            TableLocation.of(uri)


def _stores(key: str, secret: str) -> Stores:
    return Stores({"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret, "AWS_REGION": "eu-west-1"})


def test_stores_never_print_and_do_not_make_two_locations_differ():
    a, b = TableLocation.of("s3://lake/t", _stores("k1", "s3cr3t")), TableLocation.of("s3://lake/t")
    assert a == b and "s3cr3t" not in repr(a) + str(a)
    assert TableLocation.of("/w/t", _stores("k1", "s3cr3t")).deltalake_options() is None


def test_a_location_reaches_its_table_with_the_stores_that_placed_it_all_the_way_down():
    """Two invocations' stores (two profiles' credentials) on one bucket: each location, and every
    location made from it (a CDC state table), uses its own stores' options and
    clients (one per bucket), never the other's."""
    mine, theirs = _stores("k1", "s1"), _stores("k2", "s2")
    a, b = TableLocation.of("s3://lake/t", mine), TableLocation.of("s3://lake/t", theirs)
    assert a.deltalake_options()["AWS_ACCESS_KEY_ID"] == "k1"  # type: ignore[index]
    assert b.deltalake_options()["AWS_ACCESS_KEY_ID"] == "k2"  # type: ignore[index]
    state = a.inner("_cdc_state")
    assert state.stores is mine and state.store is a.store
    client, key = a.store.clients.client("s3://lake/t/_delta_log/0.json")  # type: ignore[union-attr]
    assert key == "t/_delta_log/0.json" and state.store.clients.client("s3://lake/x")[0] is client  # type: ignore[union-attr]
    assert b.store.clients.client("s3://lake/t")[0] is not client  # type: ignore[union-attr]
    assert mine.store_for("/w/t") is theirs.store_for("/w/t")  # the local disk: one stateless store


def test_a_location_pickles_for_a_spark_task_its_clients_made_again_there():
    """CONVERT reads many footers in Spark tasks: what a task holds pickles (a lock and the
    clients do not travel; the options do, and the clients are made again from them)."""
    import pickle

    location = TableLocation.of("s3://lake/t", _stores("k1", "s1"))
    location.store.clients.client("s3://lake/t")  # type: ignore[union-attr]  # a client made here
    copied = pickle.loads(pickle.dumps(location))
    assert copied == location and copied.store.clients.clients == {}  # type: ignore[union-attr]
    assert copied.deltalake_options()["AWS_ACCESS_KEY_ID"] == "k1"  # type: ignore[index]
    assert pickle.loads(pickle.dumps(LocalStore())).object_store is False
