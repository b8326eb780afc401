"""Idempotent dbt runs: every model commit carries a txn action; a repeated commit is not applied twice."""

from __future__ import annotations

import pytest
from dbt.tests.util import run_dbt
from deltalake import DeltaTable

from dbt.adapters.deltamerge.delta.commit import CommitInfo, commit, latest_version
from dbt.adapters.deltamerge.delta.conflicts import ConcurrentTransaction, check_winner
from dbt.adapters.deltamerge.delta.write import WriteRequest, write_dataframe
from tests.functional.helpers import log_actions, table_path


def test_a_repeated_commit_of_the_same_run_is_not_applied_twice(spark, tmp_path):
    path = str(tmp_path / "t")
    write_dataframe(spark, spark.createDataFrame([(1,)], "id int"), WriteRequest(path, "create_or_replace"))
    rows = spark.createDataFrame([(2,)], "id int")
    first = write_dataframe(spark, rows, WriteRequest(path, "append", txn=("app", 5)))
    again = write_dataframe(spark, rows, WriteRequest(path, "append", txn=("app", 5)))
    assert first.version == again.version == 1 == latest_version(path)
    assert DeltaTable(path).transaction_version("app") == 5
    assert sorted(r["id"] for r in DeltaTable(path).to_pyarrow_table().to_pylist()) == [1, 2]
    later = commit(path, read_version=1, actions=[], info=CommitInfo("WRITE", txn=("app", 6)))
    assert later == 2 and DeltaTable(path).transaction_version("app") == 6


def test_a_concurrent_commit_of_the_same_model_conflicts():
    winner = [{"commitInfo": {"operation": "MERGE"}}, {"txn": {"appId": "dbt-deltamerge:s.m", "version": 3}}]
    from dbt.adapters.deltamerge.delta.conflicts import ReadSet

    with pytest.raises(ConcurrentTransaction, match="same dbt model"):
        check_winner(
            table="t",
            read_version=0,
            version=1,
            winner=winner,
            read=ReadSet(app_ids=frozenset({"dbt-deltamerge:s.m"})),
            blind_append=True,
            operation="WRITE",
        )


class TestModelTransactions:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "tx.sql": "{{ config(materialized='incremental', incremental_strategy='delta_merge', "
            "unique_key='id') }}\nselect 1 as id, 'a' as v"
        }

    def test_each_run_records_its_model_and_a_growing_version(self, project):
        run_dbt(["run"])
        run_dbt(["run"])
        path = table_path(project, "tx")
        txns = [a["txn"] for v in (0, 1) for a in log_actions(path, v) if "txn" in a]
        assert [t["appId"] for t in txns] == [f"dbt-deltamerge:{project.test_schema}.tx"] * 2
        assert txns[0]["version"] < txns[1]["version"]
