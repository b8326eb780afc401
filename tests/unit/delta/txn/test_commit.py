"""The commit writer: put-if-absent version files and lost races."""

from __future__ import annotations

import json
import os

import pytest

from dbt.adapters.deltamerge.delta import Stores, storage
from dbt.adapters.deltamerge.delta.errors import ConcurrentModification
from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.txn.commit import CommitInfo, commit, read_commit


def test_put_if_absent_never_overwrites(tmp_path):
    target = str(tmp_path / "00.json")
    assert storage.put_if_absent(Stores({}), target, b"first\n") is True
    assert storage.put_if_absent(Stores({}), target, b"second\n") is False
    with open(target, "rb") as handle:
        assert handle.read() == b"first\n"
    assert os.listdir(tmp_path) == ["00.json"]  # no temp file left behind


def test_commit_info_records_strings_like_delta(tmp_path):
    info = CommitInfo(
        "WRITE", {"mode": "Append", "partitionBy": ["p"]}, {"numFiles": 2}, is_blind_append=True
    )
    version = commit(
        TableLocation.of(str(tmp_path)),
        read_version=-1,
        actions=[{"add": {"path": "a", "stats": "{}"}}],
        info=info,
    )
    head, add = read_commit(TableLocation.of(str(tmp_path)), version)
    assert version == 0 and "readVersion" not in head["commitInfo"]
    assert head["commitInfo"]["operationParameters"] == {"mode": "Append", "partitionBy": '["p"]'}
    assert head["commitInfo"]["operationMetrics"] == {"numFiles": "2"}
    assert add == {"add": {"path": "a", "stats": "{}"}}


def test_lost_race_retries_blind_appends_and_refuses_others(tmp_path):
    path = str(tmp_path)
    commit(TableLocation.of(path), read_version=-1, actions=[], info=CommitInfo("CREATE TABLE AS SELECT"))
    commit(TableLocation.of(path), read_version=0, actions=[], info=CommitInfo("WRITE", is_blind_append=True))
    # both read version 0: the blind append moves on to version 2
    assert (
        commit(
            TableLocation.of(path), read_version=0, actions=[], info=CommitInfo("WRITE", is_blind_append=True)
        )
        == 2
    )
    with open(os.path.join(path, "_delta_log", f"{2:020d}.json")) as handle:
        assert json.loads(handle.readline())["commitInfo"]["readVersion"] == 0
    with pytest.raises(ConcurrentModification, match="version 1 was committed by another writer"):
        commit(
            TableLocation.of(path),
            read_version=0,
            actions=[],
            info=CommitInfo("WRITE", {"mode": "Overwrite"}),
        )


def test_a_failed_checkpoint_does_not_fail_the_committed_write(tmp_path, caplog):
    import pyarrow as pa
    from deltalake import write_deltalake

    from dbt.adapters.deltamerge.delta.txn.commit import maybe_checkpoint

    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"a": [1]}))
    # Version 10 does not exist: delta-rs fails to load it, the caller's commit must stand.
    assert maybe_checkpoint(TableLocation.of(path), 10, 10) is False
    assert "checkpoint of version 10 failed" in caplog.text
    assert maybe_checkpoint(TableLocation.of(path), 3, 10) is False  # not a checkpoint version: nothing tried
