"""CONVERT TO DELTA as a dbt operation: real parquet folders and catalog tables, read back by deltalake."""

from __future__ import annotations

import datetime as dt
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file
from deltalake import DeltaTable

from tests.functional.helpers import catalog_rows, log_actions

POINT = pa.struct([("x", pa.float64()), ("y", pa.float64())])
ALREADY = "The table you are trying to convert is already a delta table"


def convert(**args: object) -> str:
    _, out = run_dbt_and_capture(["run-operation", "convert_to_delta", "--args", json.dumps(args)])
    return out


def convert_fails(**args: object) -> str:
    _, out = run_dbt_and_capture(
        ["run-operation", "convert_to_delta", "--args", json.dumps(args)], expect_pass=False
    )
    return out


def data_files(root: str) -> dict[str, int]:
    """Every data file under ``root`` with its inode: a copy or rewrite would change them."""
    return {
        os.path.relpath(os.path.join(d, n), root): os.stat(os.path.join(d, n)).st_ino
        for d, dirs, names in os.walk(root)
        if "_delta_log" not in d
        for n in names
        if n.endswith(".parquet")
    }


def by_id(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: r["id"])


def delta_rows(path: str, columns: list[str]) -> list[dict]:
    return by_id(DeltaTable(path).to_pyarrow_table().select(columns))


def commit_of(path: str) -> tuple[dict, list[dict]]:
    actions = log_actions(path, 0)
    head = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    return head, [a["add"] for a in actions if "add" in a]


@pytest.mark.connect
class TestConvertFolders:
    @pytest.fixture(scope="class")
    def data(self, project, spark) -> str:
        root = os.path.join(str(project.project_root), "data")
        events = spark.range(60).selectExpr(
            "id",
            "concat('e', id) as name",
            "cast(id * 1.5 as double) as amount",
            "date_add(date'2026-01-01', cast(id % 3 as int)) as day",
            "case when id % 2 = 0 then 'NL' else 'DE' end as country",
        )
        events.repartition(3).write.parquet(os.path.join(root, "flat"))
        events.repartition(2).write.partitionBy("day", "country").parquet(os.path.join(root, "parted"))
        return root

    def test_unpartitioned_spark_parquet_in_place_with_statistics(self, project, data, spark):
        path = os.path.join(data, "flat")
        before = data_files(path)
        out = convert(path=path)
        assert "Converted 3 parquet files" in out
        assert data_files(path) == before  # same files, same inodes: nothing copied or rewritten
        expected = by_id(pq.read_table(path))
        assert delta_rows(path, ["id", "name", "amount", "day", "country"]) == expected
        head, adds = commit_of(path)
        assert head["operation"] == "CONVERT"
        params = head["operationParameters"]
        assert json.loads(params["numFiles"]) == 3 and json.loads(params["collectStats"]) is True
        assert json.loads(params["partitionBy"]) == [] and params["sourceFormat"] == "parquet"
        assert len(adds) == 3 and all(json.loads(a["stats"])["numRecords"] > 0 for a in adds)
        assert sum(json.loads(a["stats"])["numRecords"] for a in adds) == 60

    def test_already_delta_changes_nothing(self, project, data):
        path = os.path.join(data, "flat")
        assert ALREADY in convert(path=path)
        assert DeltaTable(path).version() == 0

    def test_partitioned_with_partition_schema_and_a_relation_name(self, project, data, spark):
        path = os.path.join(data, "parted")
        name = f"{project.test_schema}.events"
        convert(path=path, partition_by="day DATE, country STRING", relation_name=name)
        table = DeltaTable(path)
        assert table.metadata().partition_columns == ["day", "country"]
        got = delta_rows(path, ["id", "name", "amount", "day", "country"])
        assert len(got) == 60 and got[4] == {
            "id": 4,
            "name": "e4",
            "amount": 6.0,
            "day": dt.date(2026, 1, 2),
            "country": "NL",
        }
        _, adds = commit_of(path)
        assert {a["partitionValues"]["country"] for a in adds} == {"NL", "DE"}
        assert all("stats" in a for a in adds)
        assert [r["id"] for r in catalog_rows(spark, project, "events", "id")] == list(range(60))

    def test_a_merge_into_the_converted_table_skips_by_partition(self, project, data):
        model = (
            "{{ config(materialized='incremental', incremental_strategy='delta_merge', "
            "unique_key=['id', 'day'], partition_by=['day', 'country']) }}\n"
            "select 3 as id, 'changed' as name, 4.5 as amount, date'2026-01-01' as day, 'DE' as country"
        )
        write_file(model, project.project_root, "models", "events.sql")
        run_dbt(["run", "--select", "events"])
        path = os.path.join(data, "parted")
        history = DeltaTable(path).history()[0]
        assert history["operation"] == "MERGE"
        metrics = {k: int(v) for k, v in history["operationMetrics"].items()}
        assert metrics["numTargetRowsUpdated"] == 1
        assert metrics["numTargetFilesAfterSkipping"] < metrics["numTargetFilesBeforeSkipping"]
        assert [r["name"] for r in delta_rows(path, ["id", "name"]) if r["id"] == 3] == ["changed"]
        os.remove(os.path.join(str(project.project_root), "models", "events.sql"))

    def test_pyarrow_written_nested_data_and_no_statistics(self, project):
        path = os.path.join(str(project.project_root), "arrow")
        os.makedirs(path)
        for i in range(2):
            table = pa.table(
                {
                    "id": pa.array([i * 10 + j for j in range(3)], pa.int64()),
                    "tags": pa.array([["a", "b"], [], None], pa.list_(pa.string())),
                    "point": pa.array(
                        [{"x": 1.0, "y": 2.0}] * 3, pa.struct([("x", pa.float64()), ("y", pa.float64())])
                    ),
                }
            )
            pq.write_table(table, os.path.join(path, f"part-{i}.parquet"))
        convert(path=path, statistics=False)
        assert delta_rows(path, ["id", "tags", "point"]) == by_id(pq.read_table(path))
        head, adds = commit_of(path)
        assert json.loads(head["operationParameters"]["collectStats"]) is False
        assert len(adds) == 2 and all("stats" not in a for a in adds)

    def test_two_thousand_small_files(self, project):
        path = os.path.join(str(project.project_root), "many")
        os.makedirs(path)
        for i in range(2000):
            pq.write_table(pa.table({"id": [i], "v": [f"v{i}"]}), os.path.join(path, f"f{i:04d}.parquet"))
        convert(path=path)
        table = DeltaTable(path)
        assert len(table.file_uris()) == 2000 and table.to_pyarrow_table().num_rows == 2000
        _, adds = commit_of(path)
        bounds = {a["path"]: json.loads(a["stats"])["minValues"]["id"] for a in adds}
        assert bounds["f1234.parquet"] == 1234


class TestConvertErrors:
    def test_every_refusal_leaves_the_folder_unchanged(self, project, spark):
        root = str(project.project_root)
        csv = os.path.join(root, "csv")
        spark.range(3).write.csv(csv)
        assert "only supports parquet tables, but you are trying to convert a csv source" in convert_fails(
            path=csv
        )
        empty = os.path.join(root, "empty")
        os.makedirs(empty)
        assert "no parquet files" in convert_fails(path=empty)
        parted = os.path.join(root, "parted")
        spark.range(4).selectExpr("id", "id % 2 as p").write.partitionBy("p").parquet(parted)
        out = convert_fails(path=parted)
        assert "Expecting 0 partition column(s): [], but found 1 partition column(s): [`p`]" in out
        out = convert_fails(path=parted, partition_by="p INT, q STRING")
        assert "Expecting 2 partition column(s): [`p`, `q`], but found 1 partition column(s): [`p`]" in out
        out = convert_fails(path=parted, partition_by="p DATE")
        assert "do not convert to the partition schema" in out and "fix partition_by" in out
        assert "does not exist" in convert_fails(relation=f"{project.test_schema}.nope")
        clash = os.path.join(root, "clash")
        os.makedirs(clash)
        pq.write_table(pa.table({"id": [1]}), os.path.join(clash, "a.parquet"))
        pq.write_table(pa.table({"id": ["x"]}), os.path.join(clash, "b.parquet"))
        out = convert_fails(path=clash)
        assert "the schemas of a.parquet and b.parquet cannot be merged" in out and "`id`" in out
        for folder in (csv, empty, parted, clash):
            assert not os.path.exists(os.path.join(folder, "_delta_log"))
            assert not [n for n in os.listdir(folder) if n.startswith(".deltamerge")]

    def test_a_catalog_table_of_another_format_is_refused(self, project):
        project.run_sql(f"create table {project.test_schema}.raw_csv (id int) using csv")
        out = convert_fails(relation=f"{project.test_schema}.raw_csv")
        assert "only supports parquet tables, but you are trying to convert a csv source" in out
        described = project.run_sql(f"describe extended {project.test_schema}.raw_csv", fetch="all")
        assert {str(r[0]).strip(): str(r[1]).strip() for r in described}["Provider"] == "csv"

    def test_a_crash_before_the_log_is_published_leaves_no_log(self, project, spark, monkeypatch):
        import dbt.adapters.deltamerge.delta.commands.convert as engine
        from dbt.adapters.deltamerge.delta import TableLocation

        path = os.path.join(str(project.project_root), "crash")
        spark.range(5).write.parquet(path)

        def crash(src: str, dst: str) -> None:
            raise KeyboardInterrupt("killed")

        monkeypatch.setattr(engine.os, "rename", crash)
        with pytest.raises(KeyboardInterrupt):
            engine.convert_to_delta(spark, TableLocation.of(path))
        monkeypatch.undo()
        assert not os.path.exists(os.path.join(path, "_delta_log"))
        engine.convert_to_delta(spark, TableLocation.of(path))  # the next attempt converts normally
        assert DeltaTable(path).to_pyarrow_table().num_rows == 5


@pytest.mark.connect
class TestConvertDbtSparkParquetModel:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "legacy.sql": "{{ config(materialized='table', file_format='parquet', partition_by=['p']) }}\n"
            "select id, concat('v', id) as v, cast(id % 2 as int) as p from range(10)"
        }

    def test_relation_conversion_rebinds_the_catalog_and_keeps_the_data(self, project, spark):
        run_dbt(["run"])
        name = f"{project.test_schema}.legacy"
        out = convert(relation=name)
        assert "Converted" in out
        bound = spark.sql(f"show tblproperties {name}").collect()
        path = {r[0]: r[1] for r in bound}["deltamerge.location"]
        assert sorted(r["id"] for r in DeltaTable(path).to_pyarrow_table().to_pylist()) == list(range(10))
        assert DeltaTable(path).metadata().partition_columns == ["p"]
        assert [r["id"] for r in catalog_rows(spark, project, "legacy", "id")] == list(range(10))
        assert ALREADY in convert(relation=name)
