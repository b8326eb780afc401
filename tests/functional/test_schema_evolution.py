"""Schema evolution through real dbt runs: Delta's merge auto-merge and dbt's on_schema_change."""

from __future__ import annotations

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file
from deltalake import DeltaTable

from tests.functional.helpers import catalog_rows, rows, table_path

BASE = "select 1 as id, 'a' as v, named_struct('x', 1) as s, cast(10 as bigint) as n"


def model(sql: str, **config: object) -> str:
    base = {
        "materialized": "incremental",
        "incremental_strategy": "delta_merge",
        "unique_key": "id",
        **config,
    }
    return "{{ config(" + ", ".join(f"{k}={v!r}" for k, v in base.items()) + ") }}\n" + sql


def columns(path: str) -> list[str]:
    return [f.name for f in DeltaTable(path).schema().fields]


@pytest.mark.connect
class TestMergeSchemaEvolution:
    @pytest.fixture(scope="class")
    def models(self):
        return {"evo.sql": model(BASE), "reader.sql": "select * from {{ ref('evo') }}"}

    def _run(self, project, sql: str, expect_pass: bool = True, **config: object) -> tuple[str, str]:
        write_file(model(BASE), project.project_root, "models", "evo.sql")
        run_dbt(["run", "--select", "evo", "--full-refresh"])
        write_file(
            model(sql, merge_with_schema_evolution=True, **config), project.project_root, "models", "evo.sql"
        )
        _, out = run_dbt_and_capture(["run", "--select", "evo"], expect_pass=expect_pass)
        return table_path(project, "evo"), out

    def test_update_star_and_insert_star_add_a_column(self, project, spark):
        sql = (
            "select 1 as id, 'A' as v, named_struct('x', 1) as s, cast(10 as bigint) as n, 'red' as color "
            "union all select 2, 'b', named_struct('x', 2), cast(20 as bigint), 'blue'"
        )
        path, _ = self._run(project, sql)
        assert columns(path) == ["id", "v", "s", "n", "color"]
        got = [(r["id"], r["v"], r["color"]) for r in rows(path)]
        assert got == [(1, "A", "red"), (2, "b", "blue")]
        history = DeltaTable(path).history()[0]
        assert history["operation"] == "MERGE"  # the schema change is in the merge's own commit
        assert [r["color"] for r in catalog_rows(spark, project, "evo", "id")] == ["red", "blue"]
        run_dbt(["run", "--select", "reader"])  # a downstream model sees the new column
        assert "color" in [c.name for c in spark.table(f"{project.test_schema}.reader").schema.fields]

    def test_new_nested_struct_field(self, project):
        sql = "select 1 as id, 'a' as v, named_struct('x', 1, 'y', 'new') as s, cast(10 as bigint) as n"
        path, _ = self._run(project, sql)
        s = next(f for f in DeltaTable(path).schema().fields if f.name == "s")
        assert [f.name for f in s.type.fields] == ["x", "y"]
        assert rows(path)[0]["s"] == {"x": 1, "y": "new"}

    def test_assignment_to_a_new_column_and_unreferenced_columns_stay_out(self, project):
        sql = "select 1 as id, 'z' as v, 'yes' as flag, 'ignored' as extra"
        path, _ = self._run(
            project,
            sql,
            when_matched=[
                {
                    "action": "update",
                    "set": {"v": "DBT_INTERNAL_SOURCE.v", "flag": "DBT_INTERNAL_SOURCE.flag"},
                }
            ],
            when_not_matched=[],
        )
        assert columns(path) == ["id", "v", "s", "n", "flag"]  # `extra` is referenced by no clause
        assert [(r["v"], r["flag"]) for r in rows(path)] == [("z", "yes")]

    def test_int_into_a_bigint_column_is_allowed(self, project):
        sql = "select 1 as id, 'a' as v, named_struct('x', 1) as s, cast(7 as int) as n"
        path, _ = self._run(project, sql)
        assert next(f for f in DeltaTable(path).schema().fields if f.name == "n").type.type == "long"
        assert rows(path)[0]["n"] == 7

    def test_string_into_an_int_column_is_refused_and_nothing_changes(self, project):
        """Delta keeps the int column (its schema merge allows Spark's implicit cast of a string to
        a number) and casts each value as ANSI SQL does: ``'one'`` fails the merge at run time."""
        sql = "select 'one' as id, 'a' as v, named_struct('x', 1) as s, cast(7 as bigint) as n"
        path = table_path(project, "evo")
        before = DeltaTable(path).version() + 1 if DeltaTable.is_deltatable(path) else 0
        path, out = self._run(project, sql, expect_pass=False)
        assert "Model 'evo'" in out and "(string) cannot be cast to int" in out, out[-2000:]
        assert DeltaTable(path).version() == before and columns(path) == ["id", "v", "s", "n"]


STRATEGIES = {
    "delta_merge": {"incremental_strategy": "delta_merge", "unique_key": "id"},
    "append": {"incremental_strategy": "append"},
    "insert_overwrite": {"incremental_strategy": "insert_overwrite", "partition_by": ["day"]},
}
FIRST = "select 1 as id, 'a' as keep_me, 'x' as drop_me, date'2026-01-01' as day"
SECOND = "select 2 as id, 'b' as keep_me, 'new' as added, date'2026-01-02' as day"
EXPECTED = {
    "ignore": (["id", "keep_me", "drop_me", "day"], {2: {"keep_me": "b", "drop_me": None}}),
    "append_new_columns": (
        ["id", "keep_me", "drop_me", "day", "added"],
        {2: {"added": "new", "drop_me": None}},
    ),
    "sync_all_columns": (["id", "keep_me", "day", "added"], {2: {"added": "new"}}),
}


class TestOnSchemaChange:
    @pytest.fixture(scope="class")
    def models(self):
        return {"osc.sql": "select 1 as id"}

    @pytest.mark.parametrize("strategy", sorted(STRATEGIES))
    @pytest.mark.parametrize("mode", sorted(EXPECTED))
    def test_modes(self, project, strategy, mode):
        config = {"materialized": "incremental", "on_schema_change": mode, **STRATEGIES[strategy]}
        header = "{{ config(" + ", ".join(f"{k}={v!r}" for k, v in config.items()) + ") }}\n"
        write_file(header + FIRST, project.project_root, "models", "osc.sql")
        run_dbt(["run", "--select", "osc", "--full-refresh"])
        write_file(header + SECOND, project.project_root, "models", "osc.sql")
        path = table_path(project, "osc")
        if mode == "ignore" and strategy == "delta_merge":
            # As dbt documents for `ignore`, and as Delta's `*` without auto-merge: a removed column fails.
            _, out = run_dbt_and_capture(["run", "--select", "osc"], expect_pass=False)
            assert "missing ['drop_me']" in out and "on_schema_change" in out
            return
        run_dbt(["run", "--select", "osc"])
        expected_columns, expected_rows = EXPECTED[mode]
        assert sorted(columns(path)) == sorted(expected_columns)
        got = {r["id"]: r for r in rows(path)}
        assert got[1]["keep_me"] == "a" and set(got) == {1, 2}
        for key, value in expected_rows[2].items():
            assert got[2][key] == value
        if mode == "sync_all_columns":  # a metadata change: the first file was not rewritten
            assert DeltaTable(path).history()[0]["operationMetrics"].get("numRemovedFiles", "0") == "0" or (
                strategy != "append"
            )

    def test_a_merge_leaving_a_column_out_keeps_it_with_append_new_columns(self, project):
        """No new column, one left out: with on_schema_change set, the merge writes the result's
        columns (dbt-databricks's merge does so too): the left-out one is kept on an update and
        null on an insert; the schema is unchanged (``ignore`` refuses, above)."""
        config = {"materialized": "incremental", "on_schema_change": "append_new_columns"}
        settings = {**config, **STRATEGIES["delta_merge"]}
        header = "{{ config(" + ", ".join(f"{k}={v!r}" for k, v in settings.items()) + ") }}\n"
        write_file(header + FIRST, project.project_root, "models", "osc.sql")
        run_dbt(["run", "--select", "osc", "--full-refresh"])
        second = (
            "select 1 as id, 'b' as keep_me, date'2026-01-01' as day union all select 3, 'c', current_date"
        )
        write_file(header + second, project.project_root, "models", "osc.sql")
        run_dbt(["run", "--select", "osc"])
        path = table_path(project, "osc")
        assert columns(path) == ["id", "keep_me", "drop_me", "day"]
        got = {r["id"]: (r["keep_me"], r["drop_me"]) for r in rows(path)}
        assert got == {1: ("b", "x"), 3: ("c", None)}

    @pytest.mark.parametrize("strategy", sorted(STRATEGIES))
    def test_fail(self, project, strategy):
        config = {"materialized": "incremental", "on_schema_change": "fail", **STRATEGIES[strategy]}
        header = "{{ config(" + ", ".join(f"{k}={v!r}" for k, v in config.items()) + ") }}\n"
        write_file(header + FIRST, project.project_root, "models", "osc.sql")
        run_dbt(["run", "--select", "osc", "--full-refresh"])
        version = DeltaTable(table_path(project, "osc")).version()
        write_file(header + SECOND, project.project_root, "models", "osc.sql")
        _, out = run_dbt_and_capture(["run", "--select", "osc"], expect_pass=False)
        assert "out of sync" in out and "Source columns not in target: ['added']" in out
        assert DeltaTable(table_path(project, "osc")).version() == version

    def test_partition_columns_cannot_be_removed(self, project):
        config = {
            "materialized": "incremental",
            "on_schema_change": "sync_all_columns",
            **STRATEGIES["insert_overwrite"],
        }
        header = "{{ config(" + ", ".join(f"{k}={v!r}" for k, v in config.items()) + ") }}\n"
        write_file(header + FIRST, project.project_root, "models", "osc.sql")
        run_dbt(["run", "--select", "osc", "--full-refresh"])
        write_file(header + "select 3 as id, 'c' as keep_me", project.project_root, "models", "osc.sql")
        _, out = run_dbt_and_capture(["run", "--select", "osc"], expect_pass=False)
        assert "partition column `day` cannot be removed" in out


def test_a_partition_column_cannot_change_type():
    from pyspark.sql import types as T

    from dbt.adapters.deltamerge.delta import DeltaSchemaError
    from dbt.adapters.deltamerge.delta.log import evolved_schema

    table = T.StructType([T.StructField("id", T.IntegerType()), T.StructField("day", T.IntegerType())])
    result = T.StructType([T.StructField("id", T.IntegerType()), T.StructField("day", T.StringType())])
    with pytest.raises(DeltaSchemaError, match="column `day` is int in the table and string"):
        evolved_schema(table, result, partition_columns=["day"], what="m")
    wider = T.StructType([T.StructField("id", T.IntegerType()), T.StructField("day", T.ShortType())])
    assert evolved_schema(table, wider, partition_columns=["day"], what="m") == table
