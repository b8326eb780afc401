"""A table's location is its handle: its store chosen once, on first use, refusing an unsafe scheme."""

from __future__ import annotations

import pytest

from dbt.adapters.deltamerge.delta.errors import StorageError
from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.stores import LocalStore, ObjectStore


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


def test_options_never_print_and_do_not_make_two_locations_differ():
    a, b = TableLocation.of("/w/t", {"secret": "s3cr3t"}), TableLocation.of("/w/t")
    assert a == b and "s3cr3t" not in repr(a) + str(a)
    assert a.deltalake_options() == {"secret": "s3cr3t"} and b.deltalake_options() is None
