"""OPTIMIZE, Z-order, auto compaction, optimized writes and log cleanup on real Delta tables.

Through dbt (SQL ``OPTIMIZE`` from a macro's ``run_query``, ``dbt run-operation optimize``, the
``zorder`` / ``optimize_after_run`` / ``auto_optimize`` model config) and through the engine on the
test session (conflicts, deletion vectors, column mapping, a table delta-rs wrote). Every table is
read back by delta-rs; rows never change, the layout does.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import TableNotFoundError

from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
from dbt.adapters.deltamerge.delta.commands import OptimizeOptions, optimize
from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
from dbt.adapters.deltamerge.delta.txn import ConcurrentDeleteRead
from dbt.adapters.deltamerge.statements.run.dml import delete_rows
from tests.functional.helpers import live_rows, log_actions, rows, table_path
from tests.validator import problems

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "delta-rs"

# Six INSERTs of small files into both partitions; then OPTIMIZE from SQL (one partition, then all).
SQL_MACRO = """
{% macro small_files_then_optimize(table) %}
  {% for i in range(6) %}
    {% set offset = (i + 1) * 1000 %}
    {% do run_query("insert into " ~ table ~ " select id + " ~ offset ~ ", a, b, p from " ~ table
                    ~ " where id < 1000") %}
  {% endfor %}
  {% set one = run_query("OPTIMIZE " ~ table ~ " WHERE p = 'x'") %}
  {% set all = run_query("optimize " ~ table) %}
  {% set found = {"one": one.rows[0] | list, "all": all.rows[0] | list, "names": one.column_names | list} %}
  {% do log("RESULT " ~ tojson(found), info=True) %}
{% endmacro %}
"""

BASE = (
    "{{ config(materialized='table', partition_by=['p'], "
    "tblproperties={'delta.targetFileSize': '30000'}) }}\n"
    "select /*+ REPARTITION(4) */ id, cast(id * 7919 % 1000 as int) as a, "
    "cast(id * 104729 % 997 as int) as b, "
    "case when id % 2 = 0 then 'x' else 'y' end as p from range(1000) as t(id)"
)


def _rows(path: str) -> list[tuple]:
    return sorted(tuple(r.values()) for r in live_rows(path))


def _files(path: str) -> list[dict]:
    return pa.table(DeltaTable(path).get_add_actions(flatten=True)).to_pylist()


@pytest.mark.stores
class TestOptimizeThroughDbt:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "small.sql": BASE,
            "zordered.sql": BASE.replace("partition_by=['p'], ", "")
            .replace("materialized='table'", "materialized='table', zorder=['a', 'b']")
            .replace("range(1000)", "range(20000)")
            .replace("'30000'", "'8000'"),
            "badzorder.sql": "{{ config(materialized='table', zorder=['nope']) }}\nselect 1 as id",
            "compacted.sql": (
                "{{ config(materialized='incremental', incremental_strategy='append', partition_by=['p'], "
                "auto_optimize=true, tblproperties={'delta.autoOptimize.optimizeWrite': 'false'}) }}\n"
                "select /*+ REPARTITION(60) */ id, 'x' as p "
                "from range({{ 600 if is_incremental() else 10 }}) as t(id)"
            ),
        }

    @pytest.fixture(scope="class")
    def macros(self):
        return {"optimize_steps.sql": SQL_MACRO}

    def test_sql_optimize_bin_packs_each_partition_rows_unchanged(self, project):
        run_dbt(["run", "--select", "small"])
        path = table_path(project, "small")
        relation = f"{project.test_schema}.small"
        _, out = run_dbt_and_capture(
            ["run-operation", "small_files_then_optimize", "--args", f"{{table: {relation}}}"]
        )
        result = json.loads(out.split("RESULT ", 1)[1].splitlines()[0])
        names = result["names"]
        one = dict(zip(names, result["one"], strict=True))
        everything = dict(zip(names, result["all"], strict=True))
        assert names[0] == "path" and one["path"] == path
        history = DeltaTable(path).history()
        assert [h["operation"] for h in history[:2]] == ["OPTIMIZE", "OPTIMIZE"]
        first = history[1]
        before = sorted(tuple(r.values()) for r in rows(path, first["version"] - 1))
        assert first["operationParameters"]["predicate"] == "[\"p = 'x'\"]"
        assert (
            first["operationParameters"]["zOrderBy"] == "[]"
            and first["operationParameters"]["auto"] == "false"
        )
        assert first["isolationLevel"] == "SnapshotIsolation"
        # Partition x: 4 files of the table write + 6 inserts, each small (30 kB target) -> bins.
        assert one["numRemovedFiles"] == int(first["operationMetrics"]["numRemovedFiles"]) >= 8
        assert 2 <= one["numAddedFiles"] < one["numRemovedFiles"]  # bins of 30 kB, each its own file
        actions = log_actions(path, first["version"])
        removed = [a["remove"] for a in actions if "remove" in a]
        added = [a["add"] for a in actions if "add" in a]
        assert {r["partitionValues"]["p"] for r in removed} == {"x"} and not any(
            r["dataChange"] for r in removed
        )
        assert all(not a["dataChange"] and json.loads(a["stats"])["numRecords"] > 0 for a in added)
        assert sum(json.loads(a["stats"])["numRecords"] for a in added) == 3500
        assert everything["numRemovedFiles"] >= 8  # partition y now
        assert _rows(path) == before and len(before) == 7000
        assert sorted(r["id"] for r in live_rows(path)) == list(range(7000))
        # Running it again finds nothing worth rewriting: no new version.
        version = DeltaTable(path).version()
        run_dbt(["run-operation", "optimize", "--args", f"{{relation: {relation}}}"])
        assert DeltaTable(path).version() == version
        assert problems(path) == []

    def test_zorder_operation_dry_run_and_delta_refusals(self, project):
        path = table_path(project, "small")
        relation = f"{project.test_schema}.small"
        version = DeltaTable(path).version()
        _, out = run_dbt_and_capture(
            [
                "run-operation",
                "optimize",
                "--args",
                f"{{relation: {relation}, zorder_by: [a, b], dry_run: true}}",
            ]
        )
        assert "would rewrite" in out and DeltaTable(path).version() == version
        for args, message in [
            ("zorder_by: [p]", "p is a partition column. Z-Ordering can only be performed on data columns"),
            ("zorder_by: [nope]", "Z-Ordering column nope does not exist in data schema."),
            ('where: "a > 1"', "Predicate references non-partition column 'a'. Only the partition columns"),
        ]:
            _, out = run_dbt_and_capture(
                ["run-operation", "optimize", "--args", f"{{relation: {relation}, {args}}}"],
                expect_pass=False,
            )
            assert message in out and DeltaTable(path).version() == version
        before = _rows(path)
        run_dbt(["run-operation", "optimize", "--args", f"{{relation: {relation}, zorder_by: [a, b]}}"])
        latest = DeltaTable(path).history(1)[0]
        assert latest["operation"] == "OPTIMIZE" and latest["operationParameters"]["zOrderBy"] == '["a", "b"]'
        assert _rows(path) == before and problems(path) == []

    def test_zorder_config_clusters_both_columns_for_data_skipping(self, project):
        run_dbt(["run", "--select", "zordered"])
        path = table_path(project, "zordered")
        assert [h["operation"] for h in DeltaTable(path).history()[:2]] == [
            "OPTIMIZE",
            "CREATE TABLE AS SELECT",
        ]
        files = _files(path)
        assert len(files) >= 4
        # Files whose range of a (and of b) meets a tenth of its values: far fewer than all.
        for column in ("a", "b"):
            met = [f for f in files if f[f"min.{column}"] < 100]
            assert len(met) <= len(files) // 2, (column, len(met), len(files))
        assert sorted(r["id"] for r in live_rows(path)) == list(range(20000))

    def test_a_wrong_zorder_column_fails_the_model_before_its_write(self, project):
        _, out = run_dbt_and_capture(["run", "--select", "badzorder"], expect_pass=False)
        assert "Z-Ordering column nope does not exist in data schema." in out
        assert not os.path.exists(os.path.join(table_path(project, "badzorder"), "_delta_log"))

    def test_auto_compaction_follows_a_write_that_leaves_many_small_files(self, project):
        run_dbt(["run", "--select", "compacted"])
        path = table_path(project, "compacted")
        result = run_dbt(["run", "--select", "compacted"])
        history = DeltaTable(path).history()
        assert [h["operation"] for h in history[:2]] == ["OPTIMIZE", "WRITE"]
        assert history[0]["operationParameters"]["auto"] == "true"
        assert result.results[0].adapter_response["delta_version"] == history[1]["version"]
        assert len(_files(path)) == 1  # 10 + 60 small files in partition x: one file of 128 MiB at most
        assert sorted(r["id"] for r in live_rows(path)) == sorted([*range(10), *range(600)])


def _table(
    spark, path: str, rows: int, files: int, properties: dict | None = None, partition: bool = False
) -> None:
    frame = spark.range(rows).selectExpr("id", "cast(id % 97 as int) as a", "concat('v', id) as s")
    if partition:
        frame = frame.selectExpr("*", "cast(id % 2 as string) as p")
    write_dataframe(
        spark,
        frame.repartition(files),
        WriteRequest(
            TableLocation.of(path),
            "create_or_replace",
            partition_by=("p",) if partition else (),
            properties=properties or {},
        ),
    )


def test_optimize_conflicts_as_delta_a_removed_file_fails_a_blind_append_does_not(spark, tmp_path):
    path = str(tmp_path / "t")
    _table(spark, path, 400, 8)
    stale = load_snapshot(TableLocation.of(path))
    assert stale is not None
    appended = write_dataframe(
        spark,
        spark.range(400, 410, numPartitions=1).selectExpr("id", "1 as a", "'n' as s"),
        WriteRequest(TableLocation.of(path), "append"),
    )
    result = optimize(spark, stale, stale.files, OptimizeOptions.for_table({}))
    assert result.version == 2 and sorted(r["id"] for r in live_rows(path)) == list(range(410))
    assert (
        appended.metrics["numFiles"] == 1 and len(_files(path)) == 2
    )  # the compacted file, the appended one
    stale = load_snapshot(TableLocation.of(path))
    assert stale is not None
    write_dataframe(
        spark,
        spark.range(410, 420).selectExpr("id", "1 as a", "'n' as s"),
        WriteRequest(TableLocation.of(path), "append"),
    )
    fresh = load_snapshot(TableLocation.of(path))
    assert fresh is not None
    delete_rows(spark, fresh, "id < 5")  # removes the compacted file the stale OPTIMIZE reads
    with pytest.raises(ConcurrentDeleteRead):
        optimize(spark, stale, stale.files, OptimizeOptions.for_table({}))
    assert DeltaTable(path).history(1)[0]["operation"] == "DELETE"
    assert sorted(r["id"] for r in live_rows(path)) == list(range(5, 420))


@pytest.mark.parametrize("mapped", [False, True])
def test_optimize_drops_deleted_rows_and_keeps_row_ids(spark, tmp_path, mapped):
    path = str(tmp_path / "t")
    properties = {"delta.enableDeletionVectors": "true", "delta.enableRowTracking": "true"}
    if mapped:
        properties["delta.columnMapping.mode"] = "name"
    _table(spark, path, 600, 6, properties, partition=True)
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    delete_rows(spark, snapshot, "id % 10 = 0")  # merge-on-read: vectors mark the rows
    ids_before = _row_ids(spark, path)
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None and snapshot.deleted_files > 0
    result = optimize(spark, snapshot, snapshot.files, OptimizeOptions.for_table({}))
    assert result.metrics["numDeletionVectorsRemoved"] > 0 and result.metrics["numAddedFiles"] == 2
    after = load_snapshot(TableLocation.of(path))
    assert after is not None and after.deleted_files == 0
    assert sorted(r["id"] for r in live_rows(path)) == [i for i in range(600) if i % 10]
    assert _row_ids(spark, path) == ids_before  # stable row ids survive the rewrite
    assert problems(path) == []


def _row_ids(spark, path: str) -> dict[int, int]:
    from dbt.adapters.deltamerge.delta.data import read_files
    from dbt.adapters.deltamerge.delta.log import STABLE_ROW_ID

    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    rows = read_files(spark, snapshot, snapshot.files, row_ids=True)
    if STABLE_ROW_ID not in rows.columns:
        return {}
    return {r["id"]: r[STABLE_ROW_ID] for r in rows.select("id", STABLE_ROW_ID).collect()}


def test_optimize_a_table_delta_rs_wrote_and_cluster_one_databricks_wrote(spark, tmp_path):
    path = str(tmp_path / "ours")
    for i in range(5):
        write_deltalake(
            path, pa.table({"id": list(range(i * 10, i * 10 + 10)), "v": [str(i)] * 10}), mode="append"
        )
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    result = optimize(spark, snapshot, snapshot.files, OptimizeOptions.for_table({}, zorder_by=["v", "id"]))
    assert result.version == 5 and sorted(r["id"] for r in live_rows(path)) == list(range(50))
    clustered = str(tmp_path / "clustered")
    shutil.copytree(FIXTURES / "table_with_liquid_clustering", clustered)
    before = _rows(clustered)
    snapshot = load_snapshot(TableLocation.of(clustered))
    assert snapshot is not None and snapshot.clustering == ("id",)  # Databricks' delta.liquid domain
    result = optimize(spark, snapshot, snapshot.files, OptimizeOptions.for_table({}))
    assert result.version == snapshot.version + 1 and _rows(clustered) == before
    latest = DeltaTable(clustered).history(1)[0]
    assert latest["operationParameters"]["clusterBy"] == '["id"]'
    assert all(
        a["add"]["clusteringProvider"] == "liquid"
        for a in log_actions(clustered, result.version)
        if "add" in a
    )
    assert problems(clustered) == []


# Tables other writers made (Databricks, Delta on Spark, delta-rs): every feature our reads implement.
OTHER_WRITERS = (
    "table-with-dv-small",
    "table_with_deletion_logs",
    "cdf-table-with-cdc-and-dvs",
    "table_with_column_mapping",
    "table_with_partitioning_mapping",
    "checkpoint-v2-table",
    "cdc_ict_table",
)


def test_full_rewrite_of_tables_other_writers_made_keeps_every_row(spark, tmp_path):
    """Z-order by the first column rewrites every file (compaction would skip lone files)."""
    for name in OTHER_WRITERS:
        path = str(tmp_path / name)
        shutil.copytree(FIXTURES / name, path)
        before = _rows(path)
        snapshot = load_snapshot(TableLocation.of(path))
        assert snapshot is not None
        column = next(f.name for f in snapshot.schema.fields if f.name not in snapshot.partition_columns)
        options = OptimizeOptions.for_table(dict(snapshot.metadata.configuration), zorder_by=[column])
        result = optimize(spark, snapshot, snapshot.files, options)
        assert result.version == snapshot.version + 1, name
        after = load_snapshot(TableLocation.of(path))
        assert after is not None and after.deleted_files == 0, name
        assert _rows(path) == before, name
        assert problems(path) == problems(str(FIXTURES / name)), (
            name
        )  # nothing new (cdc_ict_table's v1 stamp)


def test_optimize_refuses_a_table_with_a_feature_it_does_not_read(spark, tmp_path):
    path = str(tmp_path / "unknown")
    shutil.copytree(FIXTURES / "simple_table_features", path)
    log = os.path.join(path, "_delta_log")
    before = sorted(os.listdir(log))
    with pytest.raises(Exception, match="blahabl"):
        snapshot = load_snapshot(TableLocation.of(path))
        assert snapshot is not None
        optimize(spark, snapshot, snapshot.files, OptimizeOptions.for_table({}, zorder_by=["id"]))
    assert sorted(os.listdir(log)) == before  # nothing committed


def test_log_cleanup_after_a_checkpoint_keeps_every_version_inside_the_retention(spark, tmp_path):
    path = str(tmp_path / "t")
    properties = {"delta.checkpointInterval": "5", "delta.logRetentionDuration": "interval 2 days"}
    _table(spark, path, 10, 1, properties)
    for i in range(9):  # versions 1..9; a checkpoint at 5
        write_dataframe(
            spark,
            spark.range(i, i + 1).selectExpr("id", "1 as a", "'x' as s"),
            WriteRequest(TableLocation.of(path), "append"),
        )
    log = Path(path) / "_delta_log"
    old = time.time() - 10 * 86400
    for entry in log.iterdir():
        if entry.name[:20].isdigit() and int(entry.name[:20]) <= 6:
            os.utime(entry, (old, old))
    write_dataframe(
        spark,
        spark.range(1).selectExpr("id", "1 as a", "'y' as s"),
        WriteRequest(TableLocation.of(path), "append"),
    )
    assert (log / f"{10:020d}.checkpoint.parquet").exists()
    left = sorted(int(e.name[:20]) for e in log.iterdir() if e.name.endswith(".json"))
    # Versions 7.. are inside the retention; 7 needs checkpoint 5 and commit 6: both kept.
    assert left == list(range(5, 11))
    assert DeltaTable(path, version=7).to_pyarrow_table().num_rows == 17
    assert DeltaTable(path).to_pyarrow_table().num_rows == 20
    with pytest.raises(TableNotFoundError):
        DeltaTable(path, version=4)


CLUSTER_MACRO = """
{% macro clustered_sql(schema) %}
  {% do run_query("create table " ~ schema ~ ".lc using delta cluster by (a) as "
                  ~ "select /*+ REPARTITION(3) */ id, cast(id % 13 as int) as a, cast(id % 7 as int) as b "
                  ~ "from range(300) as t(id)") %}
  {% do run_query("optimize " ~ schema ~ ".lc") %}
  {% do run_query("insert into " ~ schema ~ ".lc select id, 1, 2 from range(300, 310) as t(id)") %}
  {% do run_query("optimize " ~ schema ~ ".lc") %}
  {% do run_query("alter table " ~ schema ~ ".lc cluster by (b, a)") %}
  {% do run_query("optimize " ~ schema ~ ".lc full") %}
  {% do run_query("alter table " ~ schema ~ ".lc cluster by none") %}
{% endmacro %}
"""


class TestLiquidClustering:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "clustered.sql": (
                "{{ config(materialized='incremental', incremental_strategy='append', "
                "liquid_clustered_by=['a', 'b']) }}\n"
                "select /*+ REPARTITION(4) */ id, cast(id % 11 as int) as a, cast(id % 5 as int) as b "
                "from range({{ 1000 if is_incremental() else 0 }}, "
                "{{ 1010 if is_incremental() else 400 }}) as t(id)"
            ),
        }

    @pytest.fixture(scope="class")
    def macros(self):
        return {"clustered_sql.sql": CLUSTER_MACRO}

    def test_cluster_by_config_creates_a_clustered_table_and_clusters_new_files_only(self, project):
        run_dbt(["run", "--select", "clustered"])
        path = table_path(project, "clustered")
        table = DeltaTable(path)
        assert {"clustering", "domainMetadata"} <= set(table.protocol().writer_features or ())
        domain = next(a["domainMetadata"] for a in log_actions(path, 0) if "domainMetadata" in a)
        assert json.loads(domain["configuration"]) == {
            "clusteringColumns": [["a"], ["b"]],
            "domainName": "delta.clustering",
        }
        first = table.history(1)[0]
        assert first["operation"] == "OPTIMIZE" and first["operationParameters"]["clusterBy"] == '["a", "b"]'
        clustered = {a["add"]["path"] for a in log_actions(path, first["version"]) if "add" in a}
        assert all(
            a["add"]["clusteringProvider"] == "liquid"
            for a in log_actions(path, first["version"])
            if "add" in a
        )
        run_dbt(["run", "--select", "clustered"])
        latest = DeltaTable(path).history(1)[0]
        assert latest["operation"] == "OPTIMIZE"
        removed = [a["remove"]["path"] for a in log_actions(path, latest["version"]) if "remove" in a]
        assert removed and not set(removed) & clustered  # only the appended, unclustered files
        assert sorted(r["id"] for r in live_rows(path)) == [*range(400), *range(1000, 1010)]
        assert problems(path) == []

    def test_sql_create_alter_and_optimize_full_of_a_clustered_table(self, project):
        run_dbt(["run-operation", "clustered_sql", "--args", f"{{schema: {project.test_schema}}}"])
        path = table_path(project, "lc")
        history = list(reversed(DeltaTable(path).history()))
        assert [h["operation"] for h in history] == [
            "CREATE TABLE AS SELECT",
            "OPTIMIZE",
            "WRITE",
            "OPTIMIZE",
            "CLUSTER BY",
            "OPTIMIZE",
            "CLUSTER BY",
        ]
        # The second OPTIMIZE clusters the inserted files only.
        assert history[3]["operationMetrics"]["numRemovedFiles"] == history[2]["operationMetrics"]["numFiles"]
        assert history[5]["operationParameters"]["clusterBy"] == '["b", "a"]'
        assert history[5]["operationParameters"]["isFull"] == "true"
        full = log_actions(path, history[5]["version"])
        before_full = DeltaTable(path, version=history[5]["version"] - 1).file_uris()
        assert len([a for a in full if "remove" in a]) == len(before_full) == 2  # clustered ones too
        last = next(
            a["domainMetadata"] for a in log_actions(path, history[6]["version"]) if "domainMetadata" in a
        )
        assert json.loads(last["configuration"])["clusteringColumns"] == []
        assert sorted(r["id"] for r in live_rows(path)) == list(range(310))
        schema = project.test_schema
        refused = [
            (f"optimize {schema}.lc zorder by (a)", "Delta table with clustering cannot specify ZORDER BY"),
            (
                f"create table {schema}.bad using delta partitioned by (p) cluster by (a) "
                "as select 1 as a, 'x' as p",
                "Clustering and partitioning cannot both be specified",
            ),
            (
                f"optimize {schema}.clustered full where a = 1",
                "Predicate references non-partition column 'a'",
            ),
        ]
        version = DeltaTable(path).version()
        for sql, message in refused:
            with pytest.raises(Exception, match=message):
                project.run_sql(sql)
        assert DeltaTable(path).version() == version
        assert problems(path) == []
