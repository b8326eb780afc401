"""Data skipping by target-only predicates: parsed by sqlglot, decided from file statistics."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from dbt.tests.util import run_dbt, write_file
from deltalake import DeltaTable

from dbt.adapters.deltamerge.delta import AddFile
from dbt.adapters.deltamerge.skipping.predicates import may_satisfy, target_predicate
from tests.functional.helpers import rows, table_path

COLUMNS = ["id", "day", "name", "p"]
LOW = AddFile(
    "low",
    1,
    {"p": "1"},
    10,
    {"id": 1, "day": dt.date(2026, 1, 1), "name": "a"},
    {"id": 10, "day": dt.date(2026, 1, 5), "name": "f"},
    {"id": 0, "day": 0, "name": 2},
)
HIGH = AddFile(
    "high",
    1,
    {"p": "2"},
    10,
    {"id": 50, "day": dt.date(2026, 3, 1), "name": "m"},
    {"id": 90, "day": dt.date(2026, 3, 9), "name": "z"},
    {"id": 0, "day": 1, "name": 0},
)
NO_STATS = AddFile("bare", 1, {"p": None}, None)


@pytest.mark.parametrize(
    ("condition", "kept"),
    [
        ("t.id > 20", ["high", "bare"]),
        ("20 >= t.id", ["low", "bare"]),
        ("t.id = s.id AND t.id BETWEEN 11 AND 49", ["bare"]),
        ("t.day >= '2026-02-01'", ["high", "bare"]),
        ("t.day < date'2026-01-01'", ["bare"]),
        ("t.day >= date_add(date'2026-03-09', 1)", ["bare"]),
        ("t.name IN ('b', 'zz')", ["low", "bare"]),
        ("t.name IS NULL", ["low", "bare"]),
        ("t.id IS NULL", ["bare"]),
        ("t.p = 2 OR t.p = 1", ["low", "high"]),
        ("t.p IS NULL", ["bare"]),
        ("t.id > 20 OR s.id > 20", ["low", "high", "bare"]),
        ("NOT (t.id < 20)", ["low", "high", "bare"]),
        ("T.ID > 20", ["high", "bare"]),
    ],
)
def test_target_predicates_skip_only_provably_empty_files(spark, condition, kept):
    node, constants = target_predicate(spark, [condition], target_alias="t", columns=COLUMNS)
    files = [f for f in (LOW, HIGH, NO_STATS) if may_satisfy(node, f, constants, {"p": int})]
    assert [f.path for f in files] == kept


WIDE = (
    "select /*+ REPARTITION_BY_RANGE(20, id) */ cast(id as int) as id, 'v' as v, "
    "date_add(date'2026-01-01', cast(id / 100 as int)) as day from range(2000)"
)
SPREAD = "select cast(id * 100 + 5 as int) as id, 'new' as v, date'2026-06-01' as day from range(20)"


def incremental(**config: object) -> str:
    base = {
        "materialized": "incremental",
        "incremental_strategy": "delta_merge",
        "unique_key": "id",
        **config,
    }
    return "{{ config(" + ", ".join(f"{k}={v!r}" for k, v in base.items()) + ") }}\n" + SPREAD


class TestSkippingInDbt:
    @pytest.fixture(scope="class")
    def models(self):
        return {"wide.sql": "{{ config(materialized='table') }}\n" + WIDE}

    def _merge(self, project, **config):
        run_dbt(["run", "--select", "wide", "--full-refresh"])
        write_file(incremental(**config), project.project_root, "models", "wide.sql")
        run_dbt(["run", "--select", "wide"])
        write_file("{{ config(materialized='table') }}\n" + WIDE, project.project_root, "models", "wide.sql")
        path = table_path(project, "wide")
        return path, {k: int(v) for k, v in DeltaTable(path).history()[0]["operationMetrics"].items()}

    def test_incremental_predicate_on_a_data_column_skips_files_by_statistics(self, project):
        # Source keys span the table, so only the predicate on `day` (days 15..19) can skip.
        path, m = self._merge(project, incremental_predicates=["DBT_INTERNAL_DEST.day >= date'2026-01-16'"])
        assert (m["numTargetFilesBeforeSkipping"], m["numTargetFilesAfterSkipping"]) == (20, 5)
        assert m["numTargetRowsUpdated"] == 5 and m["numTargetRowsInserted"] == 15
        assert len(rows(path)) == 2015

    def test_matched_only_conditions_skip_files(self, project):
        path, m = self._merge(
            project,
            when_matched=[{"action": "delete", "condition": "DBT_INTERNAL_DEST.id < 200"}],
            when_not_matched=[],
        )
        assert (m["numTargetFilesBeforeSkipping"], m["numTargetFilesAfterSkipping"]) == (20, 2)
        assert m["numTargetRowsDeleted"] == 2 and m["numTargetFilesRemoved"] == 2
        assert len(rows(path)) == 1998

    def test_not_matched_by_source_condition_skips_files(self, project):
        # Only rows with id < 200 can be deleted, and nothing else can change: 2 of 20 files.
        path, m = self._merge(
            project,
            when_matched=[],
            when_not_matched=[],
            when_not_matched_by_source=[{"action": "delete", "condition": "DBT_INTERNAL_DEST.id < 200"}],
        )
        assert (m["numTargetFilesBeforeSkipping"], m["numTargetFilesAfterSkipping"]) == (20, 2)
        assert m["numTargetRowsDeleted"] == 198 and m["numTargetFilesRemoved"] == 2
        ids = sorted(r["id"] for r in rows(path))
        assert len(ids) == 1802 and ids[:3] == [5, 105, 200]


def test_not_matched_by_source_with_matches_reads_both_kinds_of_files(spark, tmp_path):
    from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
    from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
    from dbt.adapters.deltamerge.merge import MergeSpec, merge_into

    path = str(tmp_path / "t")
    table = spark.range(2000).selectExpr("cast(id as int) as id", "'v' as v")
    write_dataframe(
        spark, table.repartitionByRange(20, "id"), WriteRequest(TableLocation.of(path), "create_or_replace")
    )
    source = spark.range(1500, 1505).selectExpr("cast(id as int) as id", "'new' as v")
    config = {
        "unique_key": "id",
        "when_matched": [{"action": "update", "set": "*"}],
        "when_not_matched_by_source": [{"action": "delete", "condition": "DBT_INTERNAL_DEST.id < 150"}],
    }
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    m = merge_into(spark, source, snapshot, MergeSpec.from_config("m", config)).metrics
    # Files 0 and 1 may hold rows to delete, file 15 holds the matches: the other 17 are skipped.
    assert (m["numTargetFilesBeforeSkipping"], m["numTargetFilesAfterSkipping"]) == (20, 3)
    assert (m["numTargetRowsUpdated"], m["numTargetRowsDeleted"], m["numTargetFilesRemoved"]) == (5, 150, 3)
    assert len(DeltaTable(path).to_pyarrow_table()) == 1850


@pytest.mark.parametrize("kind", ["timestamp", "timestamp_ntz"])
def test_timestamp_keys_skip_files_by_range(spark, tmp_path, kind):
    from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
    from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
    from dbt.adapters.deltamerge.merge import MergeSpec, merge_into

    path = str(tmp_path / kind)
    rows = spark.range(1000).selectExpr(
        f"cast(timestamp_seconds(1767225600 + id * 3600) as {kind}) as ts", "'v' as v"
    )
    write_dataframe(
        spark, rows.repartitionByRange(10, "ts"), WriteRequest(TableLocation.of(path), "create_or_replace")
    )
    source = spark.range(5).selectExpr(
        f"cast(timestamp_seconds(1767225600 + (420 + id) * 3600) as {kind}) as ts", "'new' as v"
    )
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None and len(snapshot.files) == 10
    result = merge_into(spark, source, snapshot, MergeSpec.from_config("ts", {"unique_key": "ts"}))
    m = result.metrics
    assert (m["numTargetFilesBeforeSkipping"], m["numTargetFilesAfterSkipping"]) == (10, 1)
    assert (m["numTargetRowsUpdated"], m["numTargetRowsInserted"], m["numTargetFilesRemoved"]) == (5, 0, 1)


@pytest.mark.parametrize(("first", "inserted", "read"), [(1000, 5, 0), (995, 0, 1), (998, 3, 1)])
def test_insert_only_reads_no_target_file_when_none_can_match(spark, tmp_path, first, inserted, read):
    """Keys past the table's are appended with no target file read; no stray files either way."""
    import os

    from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
    from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
    from dbt.adapters.deltamerge.merge import MergeSpec, merge_into

    path = str(tmp_path / "t")
    table = spark.range(1000).selectExpr("cast(id as int) as id", "'v' as v")
    write_dataframe(
        spark, table.repartitionByRange(4, "id"), WriteRequest(TableLocation.of(path), "create_or_replace")
    )
    source = spark.range(first, first + 5).selectExpr("cast(id as int) as id", "'new' as v")
    config = {"unique_key": "id", "when_matched": [], "when_not_matched": [{"action": "insert"}]}
    spec = MergeSpec.from_config("m", config)
    assert spec.is_insert_only
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    result = merge_into(spark, source, snapshot, spec)
    m = result.metrics
    assert (m["numTargetFilesAfterSkipping"], m["numTargetRowsInserted"], m["numTargetFilesRemoved"]) == (
        read,
        inserted,
        0,
    )
    ids = sorted(r["id"] for r in DeltaTable(path).to_pyarrow_table().to_pylist())
    assert ids == sorted({*range(1000), *range(first, first + 5)})
    on_disk = [n for n in os.listdir(path) if n.endswith(".parquet")]
    assert sorted(on_disk) == sorted(os.path.basename(u) for u in DeltaTable(path).file_uris())


def test_insert_only_into_a_table_without_files_counts_its_source(spark, tmp_path):
    """Into a table with no files the inserts are written in the pass that profiles the source."""
    from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
    from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
    from dbt.adapters.deltamerge.merge import MergeSpec, merge_into

    path = str(tmp_path / "t")
    write_dataframe(
        spark,
        spark.createDataFrame([], "id int, v string"),
        WriteRequest(TableLocation.of(path), "create_or_replace"),
    )
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None and not snapshot.files
    source = spark.createDataFrame([(1, "a"), (2, "b"), (2, "c")], "id int, v string")
    config = {"unique_key": "id", "when_matched": [], "when_not_matched": [{"action": "insert"}]}
    result = merge_into(spark, source, snapshot, MergeSpec.from_config("m", config))
    m = result.metrics
    assert (m["numSourceRows"], m["numTargetRowsInserted"], m["numTargetFilesAfterSkipping"]) == (3, 3, 0)
    assert sorted(r["v"] for r in DeltaTable(path).to_pyarrow_table().to_pylist()) == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("keys", "deleted"), [([1, 2, 3], 997), ([1, 2, 2], None), ([1, 2, 5000, 5000], 998)]
)
def test_not_matched_by_source_only_checks_multiple_matches_by_source_keys(spark, tmp_path, keys, deleted):
    """Without WHEN MATCHED clauses the key join counts each key's source rows (Delta's rule).

    A key several source rows have breaks the rule only where it matches a target row.
    """
    from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
    from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
    from dbt.adapters.deltamerge.merge import MULTIPLE_MATCHES, MergeSpec, MultipleMatchesError, merge_into

    path = str(tmp_path / "t")
    table = spark.range(1000).selectExpr("cast(id as int) as id", "'v' as v")
    write_dataframe(
        spark, table.repartitionByRange(4, "id"), WriteRequest(TableLocation.of(path), "create_or_replace")
    )
    source = spark.createDataFrame([(k,) for k in keys], "id int")
    config = {"unique_key": "id", "when_matched": [], "when_not_matched": []}
    config["when_not_matched_by_source"] = [{"action": "delete"}]
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    if deleted is None:
        with pytest.raises(MultipleMatchesError, match=re.escape(MULTIPLE_MATCHES)) as raised:
            merge_into(spark, source, snapshot, MergeSpec.from_config("m", config))
        assert "(by ['id']): id=2." in str(raised.value)
        assert DeltaTable(path).version() == 0
        return
    m = merge_into(spark, source, snapshot, MergeSpec.from_config("m", config)).metrics
    assert (m["numTargetRowsDeleted"], m["numTargetFilesRemoved"]) == (deleted, 4)
    remaining = sorted(r["id"] for r in DeltaTable(path).to_pyarrow_table().to_pylist())
    assert remaining == sorted({k for k in keys if k < 1000})
