"""Real dbt runs on the embedded Spark session, every table checked with deltalake."""

from __future__ import annotations

import json
import os
import re

import pyarrow as pa
import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file
from deltalake import DeltaTable, write_deltalake

from tests.functional.helpers import add_stats, catalog_rows, log_actions, operations, rows, table_path

SEED = """id,name,amount,day
1,a,1.5,2026-01-01
2,b,2.5,2026-01-01
3,c,3.5,2026-01-02
"""

EVENTS_V1 = "select 1 as id, 'x' as tag, date'2026-01-01' as day union all select 2, 'y', date'2026-01-02'"
EVENTS_V2 = "select 3 as id, 'z' as tag, date'2026-01-02' as day union all select 4, 'w', date'2026-01-03'"


TOTALS_TESTS = """
version: 2
models:
  - name: totals
    columns:
      - name: day
        data_tests: [unique, not_null]
"""


def model(sql: str, **config: object) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in config.items())
    return "{{ config(" + args + ") }}\n" + sql


@pytest.mark.connect
class TestTableSeedAndTest:
    @pytest.fixture(scope="class")
    def seeds(self):
        return {"base.csv": SEED}

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "totals.sql": model(
                "select day, sum(amount) as amount, count(*) as n from {{ ref('base') }} group by day",
                materialized="table",
            ),
            "downstream.sql": model("select * from {{ ref('totals') }} where n > 1", materialized="table"),
            "schema.yml": TOTALS_TESTS,
        }

    def test_seed_run_test_full_refresh_docs(self, project, spark):
        seed = run_dbt(["seed"])
        assert seed.results[0].adapter_response["delta_version"] == 0
        base = table_path(project, "base")
        assert rows(base, order_by="id") == [
            {"id": 1, "name": "a", "amount": 1.5, "day": __import__("datetime").date(2026, 1, 1)},
            {"id": 2, "name": "b", "amount": 2.5, "day": __import__("datetime").date(2026, 1, 1)},
            {"id": 3, "name": "c", "amount": 3.5, "day": __import__("datetime").date(2026, 1, 2)},
        ]
        results = run_dbt(["run"])
        assert len(results) == 2
        totals = table_path(project, "totals")
        assert [r["n"] for r in rows(totals, order_by="day")] == [2, 1]
        # downstream read totals through the catalog in the same run
        assert [r["n"] for r in rows(table_path(project, "downstream"))] == [2]
        stats = add_stats(totals, 0)
        assert stats and all({"numRecords", "minValues", "maxValues", "nullCount"} <= set(s) for s in stats)
        assert sum(s["numRecords"] for s in stats) == 2

        run_dbt(["test"])
        run_dbt(["run", "--full-refresh", "--select", "totals"])
        assert operations(totals) == ["CREATE TABLE AS SELECT", "CREATE OR REPLACE TABLE AS SELECT"]
        assert len(rows(totals, version=0)) == len(rows(totals, version=1)) == 2

        run_dbt(["docs", "generate"])
        with open(os.path.join(project.project_root, "target", "catalog.json")) as handle:
            nodes = json.load(handle)["nodes"]
        columns = nodes["model.test.totals"]["columns"]
        assert set(columns) == {"day", "amount", "n"}


@pytest.mark.connect
class TestIncrementalStrategies:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "appended.sql": model(EVENTS_V1, materialized="incremental", incremental_strategy="append"),
            "replaced.sql": model(
                EVENTS_V1, materialized="incremental", incremental_strategy="insert_overwrite"
            ),
            "overwritten.sql": model(
                EVENTS_V1,
                materialized="incremental",
                incremental_strategy="insert_overwrite",
                partition_by=["day"],
            ),
        }

    def test_append_and_insert_overwrite(self, project, spark):
        run_dbt(["run"])
        write_file(
            model(EVENTS_V2, materialized="incremental", incremental_strategy="append"),
            project.project_root,
            "models",
            "appended.sql",
        )
        write_file(
            model(
                EVENTS_V2,
                materialized="incremental",
                incremental_strategy="insert_overwrite",
                partition_by=["day"],
            ),
            project.project_root,
            "models",
            "overwritten.sql",
        )
        write_file(
            model(EVENTS_V2, materialized="incremental", incremental_strategy="insert_overwrite"),
            project.project_root,
            "models",
            "replaced.sql",
        )
        results = run_dbt(["run"])
        # without partition_by, insert_overwrite replaces the whole table (history kept)
        replaced = table_path(project, "replaced")
        assert [r["id"] for r in rows(replaced)] == [3, 4]
        assert [r["id"] for r in rows(replaced, version=0)] == [1, 2]
        appended, overwritten = table_path(project, "appended"), table_path(project, "overwritten")
        assert [r["id"] for r in rows(appended)] == [1, 2, 3, 4]
        assert operations(appended) == ["CREATE TABLE AS SELECT", "WRITE"]
        assert log_actions(appended, 1)[0]["commitInfo"]["isBlindAppend"] is True
        # day 2026-01-02 replaced (2 -> 3), day 2026-01-01 kept, 2026-01-03 added
        assert [r["id"] for r in rows(overwritten)] == [1, 3, 4]
        commit = log_actions(overwritten, 1)
        assert sum("remove" in a for a in commit) == 1
        assert commit[0]["commitInfo"]["operationParameters"]["partitionOverwriteMode"] == "DYNAMIC"
        assert [r["id"] for r in catalog_rows(spark, project, "overwritten", "id")] == [1, 3, 4]
        # partition pruning through the catalog binding: one partition's files only
        pruned = spark.sql(f"select * from {project.test_schema}.overwritten where day = date'2026-01-01'")
        assert len(pruned.inputFiles()) == 1
        response = {r.node.name: r.adapter_response for r in results}
        assert response["appended"]["numOutputRows"] == 2
        assert response["overwritten"]["numRemovedFiles"] == 1


class TestOutsideWriterAndCheckpoints:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "events.sql": model(
                "select cast(coalesce(max(id), 0) + 1 as bigint) as id from "
                "{% if is_incremental() %}{{ this }}{% else %}(select 0 as id){% endif %}",
                materialized="incremental",
                incremental_strategy="append",
            )
        }

    def test_outside_writes_are_honoured_and_checkpoints_written(self, project, spark):
        run_dbt(["run"])
        path = table_path(project, "events")
        # delta-rs appends a row with a new column; our next run must see both.
        write_deltalake(
            path,
            pa.table({"id": pa.array([10], pa.int64()), "note": ["outside"]}),
            mode="append",
            schema_mode="merge",
        )
        run_dbt(["run"])
        assert [r["id"] for r in rows(path)] == [1, 10, 11]
        seen = catalog_rows(spark, project, "events", "id")
        assert seen == [{"id": 1, "note": None}, {"id": 10, "note": "outside"}, {"id": 11, "note": None}]
        for _ in range(9):
            run_dbt(["run"])
        assert DeltaTable(path).version() == 11
        assert os.path.exists(os.path.join(path, "_delta_log", "00000000000000000010.checkpoint.parquet"))
        assert [r["id"] for r in rows(path)] == [1, 10, *range(11, 21)]


class TestRefusals:
    @pytest.fixture(scope="class")
    def models(self):
        return {"dv.sql": "select 1 as id", "occupied.sql": "select 1 as id", "voids.sql": "select 1 as id"}

    def test_a_check_constraint_another_writer_added_is_enforced(self, project, tmp_path):
        # delta-rs adds the constraint; our append of a violating row fails with Delta's text.
        path = str(tmp_path / "dv")
        write_deltalake(path, pa.table({"id": [1]}))
        DeltaTable(path).alter.add_constraint({"positive": "id > 0"})
        project.run_sql(f"create table {project.test_schema}.dv using delta location '{path}'")
        before = sorted(os.listdir(path))
        write_file(
            model("select {{ var('id') }} as id", materialized="incremental", location_root=str(tmp_path)),
            project.project_root,
            "models",
            "dv.sql",
        )
        _, out = run_dbt_and_capture(["run", "--select", "dv", "--vars", "id: -2"], expect_pass=False)
        assert re.search(
            r"CHECK constraint positive \(id > 0\) violated by row with values:\s+- id : -2", out
        )
        assert "Model 'dv'" in out
        assert sorted(os.listdir(path)) == before and DeltaTable(path).version() == 1
        run_dbt(["run", "--select", "dv", "--vars", "id: 2"])
        assert sorted(r["id"] for r in DeltaTable(path).to_pyarrow_table().to_pylist()) == [1, 2]
        # delta-rs, the other writer, refuses the same row by the same rule.
        with pytest.raises(Exception, match="1 rows failed validation check"):
            write_deltalake(path, pa.table({"id": [-3]}), mode="append")

    def test_files_without_log_are_not_overwritten(self, project, tmp_path):
        folder = tmp_path / "occupied"
        folder.mkdir()
        (folder / "data.csv").write_text("id\n1\n")
        write_file(
            model("select 2 as id", materialized="table", location_root=str(tmp_path)),
            project.project_root,
            "models",
            "occupied.sql",
        )
        _, out = run_dbt_and_capture(["run", "--select", "occupied"], expect_pass=False)
        assert "holds files but no _delta_log" in out and "data.csv" in out
        assert sorted(os.listdir(folder)) == ["data.csv"]

    def test_void_column_gets_a_clear_error(self, project):
        write_file(
            model("select 1 as id, null as nothing", materialized="table"),
            project.project_root,
            "models",
            "voids.sql",
        )
        _, out = run_dbt_and_capture(["run", "--select", "voids"], expect_pass=False)
        assert "Model 'voids'" in out and "`nothing`" in out and "cast(null as" in out


def test_catalog_column_definitions_round_trip_through_spark(spark, tmp_path):
    """The catalog binding's DDL (built in Python, no JVM call) gives Spark back the same schema."""
    from pyspark.sql import types as T

    from dbt.adapters.deltamerge.common.sql import column_definitions

    inner = T.StructType(
        [
            T.StructField("x`y", T.DecimalType(10, 2)),
            T.StructField("n", T.ArrayType(T.StructType([T.StructField("q", T.TimestampNTZType())]))),
        ]
    )
    schema = T.StructType(
        [
            T.StructField("id", T.LongType()),
            T.StructField("a b", inner),
            T.StructField(
                "tags",
                T.MapType(T.StringType(), T.ArrayType(T.DateType())),
                metadata={"comment": "it's \\ x"},
            ),
            *[
                T.StructField(n, t)
                for n, t in [("ts", T.TimestampType()), ("b", T.BinaryType()), ("s", T.ShortType())]
            ],
        ]
    )
    spark.sql(
        f"CREATE TABLE ddl_round_trip ({column_definitions(schema)}) USING parquet LOCATION '{tmp_path}/t'"
    )
    assert spark.table("ddl_round_trip").schema == schema
    spark.sql("DROP TABLE ddl_round_trip")
