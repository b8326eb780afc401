"""Idempotent writes: a txn per dbt invocation and model; a retried commit is applied once, never skipped.

Two invocations of one model are two writers (Delta's conflict rules decide between
them); only a retry of the same write of the same invocation is recognised, by its exact
(appId, version). Entries expire by ``delta.setTransactionRetentionDuration``, so
checkpoints stay bounded however many runs a table sees.
"""

from __future__ import annotations

import glob
import importlib
import time

import pyarrow.parquet as pq
import pytest
from dbt.tests.util import run_dbt
from deltalake import DeltaTable

from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
from dbt.adapters.deltamerge.delta.log import DEFAULT_TXN_RETENTION, TXN_RETENTION_PROPERTY
from dbt.adapters.deltamerge.delta.txn import (
    CommitActions,
    CommitInfo,
    CommitOptions,
    ConcurrentTransaction,
    ReadSet,
    check_winner,
    commit,
    commit_files,
    latest_version,
)
from tests.functional.helpers import log_actions, table_path

# The module (the txn face's ``commit`` is the function of that name): patched for its clock.
commit_module = importlib.import_module("dbt.adapters.deltamerge.delta.txn.commit")


def _ids(path: str) -> list[int]:
    return sorted(r["id"] for r in DeltaTable(path).to_pyarrow_table().to_pylist())


def test_a_retried_commit_of_the_same_write_is_applied_once(spark, tmp_path):
    path = str(tmp_path / "t")
    write_dataframe(
        spark,
        spark.createDataFrame([(1,)], "id int"),
        WriteRequest(TableLocation.of(path), "create_or_replace"),
    )
    rows = spark.createDataFrame([(2,)], "id int")
    first = write_dataframe(spark, rows, WriteRequest(TableLocation.of(path), "append", txn=("inv1:s.m", 0)))
    again = write_dataframe(spark, rows, WriteRequest(TableLocation.of(path), "append", txn=("inv1:s.m", 0)))
    assert first.version == again.version == 1 == latest_version(TableLocation.of(path))
    assert DeltaTable(path).transaction_version("inv1:s.m") == 0 and _ids(path) == [1, 2]
    # Another writer commits; a retry of the first write still answers the version it wrote.
    assert (
        commit(
            TableLocation.of(path), read_version=1, actions=[], info=CommitInfo("WRITE", is_blind_append=True)
        )
        == 2
    )
    retried = commit(
        TableLocation.of(path), read_version=0, actions=[], info=CommitInfo("WRITE", txn=("inv1:s.m", 0))
    )
    assert retried == 1 and latest_version(TableLocation.of(path)) == 2
    # The invocation's next write of the model is a new version of its appId.
    later = commit(
        TableLocation.of(path), read_version=2, actions=[], info=CommitInfo("WRITE", txn=("inv1:s.m", 1))
    )
    assert later == 3 and DeltaTable(path).transaction_version("inv1:s.m") == 1


def test_two_invocations_of_one_model_both_commit_in_either_order(spark, tmp_path):
    """The lost merge of issue 14: the later-started invocation committed first, the other was skipped."""
    path = str(tmp_path / "t")
    write_dataframe(
        spark,
        spark.createDataFrame([(1,)], "id int"),
        WriteRequest(TableLocation.of(path), "create_or_replace"),
    )
    late, early = ("dbt-deltamerge:late-inv:s.m", 0), ("dbt-deltamerge:early-inv:s.m", 0)
    for txn, new_id in ((late, 3), (early, 2)):  # both read version 0
        add = {
            "add": {
                "path": f"f{new_id}.parquet",
                "partitionValues": {},
                "size": 1,
                "modificationTime": 0,
                "dataChange": True,
            }
        }
        info = CommitInfo("MERGE", txn=txn)
        commit(
            TableLocation.of(path),
            read_version=0,
            actions=[add],
            info=info,
            read=ReadSet(reads=lambda added: False),
        )
    assert latest_version(TableLocation.of(path)) == 2
    table = DeltaTable(path)
    assert table.transaction_version(late[0]) == 0 and table.transaction_version(early[0]) == 0
    assert {a["add"]["path"] for v in (1, 2) for a in log_actions(path, v) if "add" in a} == {
        "f2.parquet",
        "f3.parquet",
    }


def test_an_earlier_write_after_a_later_one_of_the_same_invocation_is_refused(spark, tmp_path):
    path = str(tmp_path / "t")
    write_dataframe(
        spark,
        spark.createDataFrame([(1,)], "id int"),
        WriteRequest(TableLocation.of(path), "create_or_replace"),
    )
    commit(TableLocation.of(path), read_version=0, actions=[], info=CommitInfo("WRITE", txn=("inv:s.m", 1)))
    refused = r"version 1 of transaction inv:s\.m.*Nothing was committed"
    with pytest.raises(ConcurrentTransaction, match=refused):
        commit(
            TableLocation.of(path), read_version=0, actions=[], info=CommitInfo("WRITE", txn=("inv:s.m", 0))
        )
    assert latest_version(TableLocation.of(path)) == 1


def test_a_concurrent_write_of_the_same_invocation_and_model_conflicts():
    winner = [
        {"commitInfo": {"operation": "MERGE"}},
        {"txn": {"appId": "dbt-deltamerge:inv:s.m", "version": 3}},
    ]
    with pytest.raises(ConcurrentTransaction, match="same dbt invocation wrote this model concurrently"):
        check_winner(
            table="t",
            read_version=0,
            version=1,
            winner=winner,
            read=ReadSet(app_ids=frozenset({"dbt-deltamerge:inv:s.m"})),
            blind_append=True,
            operation="WRITE",
        )


def test_txn_entries_expire_so_checkpoints_stay_bounded(spark, tmp_path, monkeypatch):
    """240 runs an hour apart (a simulated clock): the checkpoint keeps the last 7 days' entries only."""
    path = str(tmp_path / "t")
    hour = 3600 * 1000
    start = int(time.time() * 1000) - 240 * hour
    write_dataframe(
        spark,
        spark.createDataFrame([(1,)], "id int"),
        WriteRequest(TableLocation.of(path), "create_or_replace", txn=("inv-c:s.m", 0)),
    )
    assert DeltaTable(path).metadata().configuration[TXN_RETENTION_PROPERTY] == DEFAULT_TXN_RETENTION
    for run in range(240):
        monkeypatch.setattr(commit_module, "now_ms", lambda run=run: start + run * hour)
        current = load_snapshot(TableLocation.of(path))
        assert current is not None
        info = CommitInfo("WRITE", is_blind_append=True, txn=(f"inv-{run}:s.m", 0))
        commit_files(current, CommitActions(), CommitOptions(info))
    monkeypatch.undo()
    assert latest_version(TableLocation.of(path)) == 240
    checkpoint = glob.glob(f"{path}/_delta_log/{240:020d}.checkpoint.parquet")
    assert checkpoint, "a checkpoint every 10 versions"
    kept = [r["txn"]["appId"] for r in pq.read_table(checkpoint[0]).to_pylist() if r.get("txn")]
    # Runs 72..239 are within 7 days of now (the boundary run may fall either side while the test runs).
    assert 167 <= len(kept) <= 169 and "inv-239:s.m" in kept and "inv-0:s.m" not in kept
    table = DeltaTable(path)
    assert table.transaction_version("inv-0:s.m") is None and table.transaction_version("inv-239:s.m") == 0


class TestModelTransactions:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "tx.sql": "{{ config(materialized='incremental', incremental_strategy='delta_merge', "
            "unique_key='id') }}\nselect 1 as id, 'a' as v"
        }

    def test_each_invocation_records_its_own_app_id_and_the_table_a_retention(self, project):
        run_dbt(["run"])
        run_dbt(["run"])
        path = table_path(project, "tx")
        txns = [a["txn"] for v in (0, 1) for a in log_actions(path, v) if "txn" in a]
        app_ids = [t["appId"] for t in txns]
        assert len(set(app_ids)) == 2 and all(a.endswith(f":{project.test_schema}.tx") for a in app_ids)
        assert [t["version"] for t in txns] == [0, 0]  # each invocation's first write of the model
        assert DeltaTable(path).metadata().configuration[TXN_RETENTION_PROPERTY] == DEFAULT_TXN_RETENTION


def test_an_older_table_gets_the_retention_with_its_next_committing_merge_only(spark, tmp_path):
    from dbt.adapters.deltamerge.merge import MergeSpec, merge_into

    path = str(tmp_path / "t")
    # Written without a txn, as tables of earlier versions were: no retention property.
    write_dataframe(
        spark,
        spark.createDataFrame([(1, "a")], "id int, v string"),
        WriteRequest(TableLocation.of(path), "create_or_replace"),
    )
    assert TXN_RETENTION_PROPERTY not in DeltaTable(path).metadata().configuration
    spec = MergeSpec.from_config("m", {"unique_key": "id", "when_not_matched": []})
    same = spark.createDataFrame([(9, "x")], "id int, v string")  # matches nothing: a no-op
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    assert merge_into(spark, same, snapshot, spec, txn=("inv-a:s.m", 0)).version is None
    assert (
        latest_version(TableLocation.of(path)) == 0
        and TXN_RETENTION_PROPERTY not in DeltaTable(path).metadata().configuration
    )
    changed = spark.createDataFrame([(1, "b")], "id int, v string")
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    assert merge_into(spark, changed, snapshot, spec, txn=("inv-b:s.m", 0)).version == 1
    assert DeltaTable(path).metadata().configuration[TXN_RETENTION_PROPERTY] == DEFAULT_TXN_RETENTION
    kinds = [next(iter(a)) for a in log_actions(path, 1)]
    assert "metaData" in kinds and "txn" in kinds  # the property rides in the merge's own commit
