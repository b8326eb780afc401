"""SQL statements on Delta tables: INSERT, UPDATE, DELETE, MERGE, TRUNCATE and CREATE run as Delta commits."""

from __future__ import annotations

import datetime as dt
import os

import pytest
from dbt.tests.util import run_dbt
from dbt_common.exceptions import DbtRuntimeError
from deltalake import DeltaTable

from tests.functional.helpers import catalog_rows, operations, rows, table_path

SEED = "id,name,day\n1,a,2026-01-01\n2,b,2026-01-02\n"
PARTITIONED = (
    "{{ config(materialized='table', partition_by=['day']) }}\n"
    "select 1 as id, 'a' as name, date'2026-01-01' as day union all "
    "select 2 as id, 'b' as name, date'2026-01-02' as day"
)
HOOKED = (
    "{{ config(materialized='table', post_hook=\"insert into {{ this }} (id, name) values (9, 'hook')\") }}\n"
    "select 1 as id, 'a' as name"
)
PARQUET = "{{ config(materialized='table', file_format='parquet') }}\nselect 1 as id"


@pytest.mark.stores
@pytest.mark.connect
class TestInsertStatements:
    @pytest.fixture(scope="class")
    def seeds(self):
        return {"people.csv": SEED}

    @pytest.fixture(scope="class")
    def models(self):
        return {"by_day.sql": PARTITIONED, "hooked.sql": HOOKED, "plain.sql": PARQUET}

    @pytest.fixture(scope="class", autouse=True)
    def built(self, project):
        run_dbt(["seed"])
        run_dbt(["run"])

    def test_insert_values_is_a_delta_append_with_cast_dates(self, project, spark):
        path = table_path(project, "people")
        before = DeltaTable(path).version()
        project.run_sql(
            f"-- a comment first\ninsert into {project.test_schema}.people (id, name, day) "
            "values (3, 'c', '2026-01-03'), (4, 'd', null)"
        )
        assert DeltaTable(path).version() == before + 1
        assert operations(path)[-1] == "WRITE"
        got = [(r["id"], r["name"], r["day"]) for r in rows(path)]
        assert got == [
            (1, "a", dt.date(2026, 1, 1)),
            (2, "b", dt.date(2026, 1, 2)),
            (3, "c", dt.date(2026, 1, 3)),
            (4, "d", None),
        ]
        assert [r["id"] for r in catalog_rows(spark, project, "people", "id")] == [1, 2, 3, 4]

    def test_insert_select_by_position_and_missing_columns_are_null(self, project):
        path = table_path(project, "people")
        project.run_sql(f"insert into {project.test_schema}.people select 5, 'e', date'2026-01-05'")
        project.run_sql(f"insert into {project.test_schema}.people (name, id) select 'f', 6")
        got = {r["id"]: (r["name"], r["day"]) for r in rows(path)}
        assert got[5] == ("e", dt.date(2026, 1, 5)) and got[6] == ("f", None)

    def test_a_leading_with_or_from_belongs_to_the_inserted_query(self, project):
        schema, path = project.test_schema, table_path(project, "people")
        before = DeltaTable(path).version()
        project.run_sql(
            f"with x as (select 10 as id, 'j' as name) insert into {schema}.people (id, name) select * from x"
        )
        project.run_sql(
            f"from {schema}.people insert into {schema}.people (id, name) select id + 10, name where id = 1"
        )
        assert DeltaTable(path).version() == before + 2 and operations(path)[-2:] == ["WRITE", "WRITE"]
        got = {r["id"]: r["name"] for r in rows(path)}
        assert got[10] == "j" and got[11] == "a"

    def test_a_value_that_does_not_convert_fails_and_writes_nothing(self, project):
        path = table_path(project, "people")
        before = DeltaTable(path).version()
        with pytest.raises(DbtRuntimeError, match=r"column `day` cannot be cast to date"):
            project.run_sql(f"insert into {project.test_schema}.people values (7, 'g', '2026-13-45')")
        with pytest.raises(DbtRuntimeError, match=r"2 values for 3 columns"):
            project.run_sql(f"insert into {project.test_schema}.people values (7, 'g')")
        assert DeltaTable(path).version() == before

    def test_update_delete_merge_truncate_are_delta_commits(self, project, spark):
        schema = project.test_schema
        project.run_sql(f"create table {schema}.dml using delta as select * from {schema}.people")
        path = table_path(project, "dml")
        project.run_sql(f"update {schema}.dml set name = upper(name) where id = 1")
        project.run_sql(f"delete from {schema}.dml as d where d.id = 2")
        project.run_sql(
            f"merge into {schema}.dml t using (select 1 as id, 'm' as name, date'2026-02-01' as day "
            "union all select 8, 'h', null) s on t.id = s.id "
            "when matched then update set t.name = s.name when not matched then insert *"
        )
        assert operations(path) == ["CREATE TABLE AS SELECT", "UPDATE", "DELETE", "MERGE"]
        assert [(r["id"], r["name"]) for r in rows(path) if r["id"] in (1, 2, 8)] == [(1, "m"), (8, "h")]
        history = {h["version"]: h for h in DeltaTable(path).history()}
        assert history[1]["operationMetrics"]["numUpdatedRows"] == "1"
        assert history[2]["operationMetrics"]["numDeletedRows"] == "1"
        assert history[3]["operationMetrics"]["numTargetRowsInserted"] == "1"
        assert [r["id"] for r in catalog_rows(spark, project, "dml", "id")] == [r["id"] for r in rows(path)]
        project.run_sql(f"truncate table {schema}.dml")
        assert operations(path)[-1] == "TRUNCATE" and rows(path) == []

    def test_a_bad_statement_names_the_problem_and_changes_nothing(self, project):
        schema = project.test_schema
        path = table_path(project, "people")
        before = DeltaTable(path).version()
        with pytest.raises(DbtRuntimeError, match=r"`nosuch` is not a column of the table"):
            project.run_sql(f"update {schema}.people set nosuch = 1")
        with pytest.raises(DbtRuntimeError, match=r"multiple source rows matched"):
            project.run_sql(
                f"merge into {schema}.people t using (select 1 as id union all select 1) s "
                "on t.id = s.id when matched then update set name = 'x'"
            )
        with pytest.raises(
            DbtRuntimeError, match=r"INSERT into several tables .* per table\. The statement was not run"
        ):
            project.run_sql(
                f"from {schema}.people insert into {schema}.people (id) select id "
                f"insert into {schema}.people (id) select id + 1"
            )
        assert DeltaTable(path).version() == before

    def test_insert_overwrite_of_a_static_partition(self, project, spark):
        path = table_path(project, "by_day")
        project.run_sql(
            f"insert overwrite {project.test_schema}.by_day partition (day = '2026-01-02') "
            "select 20 as id, 'b2' as name"
        )
        got = [(r["id"], r["name"], r["day"]) for r in rows(path)]
        assert got == [(1, "a", dt.date(2026, 1, 1)), (20, "b2", dt.date(2026, 1, 2))]
        assert DeltaTable(path).history()[0]["operationParameters"]["mode"] == "Overwrite"
        assert [r["id"] for r in catalog_rows(spark, project, "by_day", "id")] == [1, 20]

    def test_a_post_hook_insert_lands_in_the_delta_table(self, project):
        got = [(r["id"], r["name"]) for r in rows(table_path(project, "hooked"))]
        assert got == [(1, "a"), (9, "hook")]

    def test_create_table_like_a_delta_table_copies_its_definition(self, project):
        schema = project.test_schema
        project.run_sql(
            f"create table {schema}.src (id int comment 'the key', name string) partitioned by (name) "
            "comment 'a source' tblproperties ('delta.enableChangeDataFeed' = 'true')"
        )
        project.run_sql(f"insert into {schema}.src values (1, 'a')")
        project.run_sql(f"create table {schema}.copy like {schema}.src tblproperties ('team' = 'core')")
        project.run_sql(f"create table if not exists {schema}.copy like {schema}.people")
        copy = DeltaTable(table_path(project, "copy"))
        assert copy.version() == 0 and rows(table_path(project, "copy")) == []
        assert [(f.name, f.type.type, f.metadata) for f in copy.schema().fields] == [
            ("id", "integer", {"comment": "the key"}),
            ("name", "string", {}),
        ]
        metadata = copy.metadata()
        assert (metadata.partition_columns, metadata.description) == (["name"], "a source")
        assert metadata.configuration == {"delta.enableChangeDataFeed": "true", "team": "core"}

    def test_create_table_like_another_format_is_delta_only_when_asked(self, project, spark):
        schema = project.test_schema
        project.run_sql(f"create table {schema}.plain_copy like {schema}.plain")
        project.run_sql(f"create table {schema}.plain_delta like {schema}.plain using delta")
        described = spark.sql(f"describe table extended {schema}.plain_copy").collect()
        assert {r[0]: r[1] for r in described}["Provider"] == "parquet"
        assert not os.path.exists(os.path.join(table_path(project, "plain_copy"), "_delta_log"))
        delta = DeltaTable(table_path(project, "plain_delta"))
        assert [f.name for f in delta.schema().fields] == ["id"] and delta.version() == 0

    def test_statements_on_other_tables_go_to_spark(self, project, spark):
        project.run_sql(f"insert into {project.test_schema}.plain values (2)")
        assert [r["id"] for r in catalog_rows(spark, project, "plain", "id")] == [1, 2]
