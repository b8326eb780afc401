"""MERGE as Delta resolves and refuses it, through dbt (its query comment before every statement):
nested fields, structs by name, Delta's refusals and errors, the multiple-match rule, duplicate
assignments, one-sided clauses, CTEs, one instant per statement, Delta's MERGE metrics.

Each case is Delta's own (``MergeIntoSuiteBase``, ``MergeIntoSQLSuite``, ``PreprocessTableMerge``):
the expected rows, or the error class and message Delta gives, and the table left at its version.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from dbt.tests.util import run_dbt
from dbt_common.exceptions import DbtRuntimeError
from deltalake import DeltaTable

from tests.functional.helpers import rows, table_path

NESTED = (
    "select 'A' as key, named_struct('a', 1, 'b', 'x') as value, 10 as v "
    "union all select 'B', cast(null as struct<a:int, b:string>), 20"
)
MODEL = """
{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='key',
          when_matched=[{'action': 'update', 'set': {'value.b': "upper(DBT_INTERNAL_SOURCE.tag)"}}],
          when_not_matched=[{'action': 'insert', 'values': '*'}]) }}
{% if is_incremental() %}
select 'A' as key, named_struct('b', 'new', 'a', 7) as value, 'z' as tag
union all select 'B', named_struct('b', 'q', 'a', 2), 'w'
{% else %}
select 'A' as key, named_struct('a', 1, 'b', 'x') as value, 'y' as tag
{% endif %}
"""


@pytest.mark.connect
class TestMergeParity:
    @pytest.fixture(scope="class")
    def models(self):
        return {"nested_model.sql": MODEL}

    def _table(self, project, name: str, select: str) -> str:
        project.run_sql(f"create or replace table {project.test_schema}.{name} using delta as {select}")
        return table_path(project, name)

    def _refused(self, project, path: str, sql: str, *texts: str) -> None:
        before = DeltaTable(path).version()
        with pytest.raises(DbtRuntimeError) as raised:
            project.run_sql(sql)
        for text in texts:
            assert text in str(raised.value)
        assert DeltaTable(path).version() == before

    def test_nested_field_assignments_keep_their_siblings(self, project):
        schema, path = project.test_schema, self._table(project, "nested", NESTED)
        project.run_sql(
            f"merge into {schema}.nested t using (select 'A' as key union all select 'B') s on t.key = s.key "
            "when matched then update set value.b = 'UPDATED', t.v = t.v + 1"
        )
        got = [(r["key"], r["value"], r["v"]) for r in rows(path)]
        # A null struct's siblings are null (Delta builds the struct from the row's fields).
        assert got == [("A", {"a": 1, "b": "UPDATED"}, 11), ("B", {"a": None, "b": "UPDATED"}, 21)]

    def test_nested_assignment_errors_are_deltas(self, project):
        schema, path = project.test_schema, self._table(project, "nested_errors", NESTED)
        merge = f"merge into {schema}.nested_errors t using (select 'A' as key) s on t.key = s.key "
        self._refused(
            project,
            path,
            merge + "when matched then update set value.a = 2, value = named_struct('a', 3, 'b', 'c')",
            "[DELTA_CONFLICT_SET_COLUMN] There is a conflict from these SET columns: [`value.a`, `value`].",
        )
        self._refused(
            project,
            path,
            merge + "when not matched then insert (key, value.a) values (s.key, 1)",
            "Nested field is not supported in the INSERT clause of MERGE operation (field = `value`.`a`).",
        )
        self._refused(
            project, path, merge + "when matched then update set value.c = 1", "No such struct field `c`"
        )
        self._refused(
            project,
            path,
            merge + "when matched then update set v.x = 1",
            "[DELTA_UNSUPPORTED_FIELD_UPDATE_NON_STRUCT] Updating nested fields is only supported for "
            "StructType",
        )
        self._refused(
            project,
            path,
            merge + "when matched then update set s.t.v = 1",
            "[DELTA_MERGE_UNRESOLVED_EXPRESSION] Cannot resolve s.t.v in UPDATE clause given columns "
            "t.key, t.value, t.v.",
        )
        # ``MergeIntoSuiteBase`` "assigning simple type to struct field": Spark's data type mismatch.
        deep = self._table(
            project, "deep", "select 'A' as key, named_struct('a', named_struct('x', 1)) as value"
        )
        self._refused(
            project,
            deep,
            f"merge into {schema}.deep t using (select 'A' as key) s on t.key = s.key "
            "when matched then update set value.a = 'UPDATED'",
            "[DATATYPE_MISMATCH.CAST_WITHOUT_SUGGESTION] Cannot resolve",
            'due to data type mismatch: cannot cast "STRING" to "STRUCT<',
        )

    def test_structs_are_assigned_by_name(self, project):
        schema = project.test_schema
        path = self._table(
            project,
            "by_name",
            "select 1 as k, named_struct('a', 1, 'b', 'x') as value, "
            "array(named_struct('a', 1, 'b', 'x')) as items",
        )
        source = (
            "select 1 as k, named_struct('b', 'y', 'a', 5) as value, "
            "array(named_struct('b', 'q', 'a', 6)) as items "
            "union all select 2, named_struct('b', 'z', 'a', 9), cast(null as array<struct<b:string, a:int>>)"
        )
        project.run_sql(
            f"merge into {schema}.by_name t using ({source}) s on t.k = s.k "
            "when matched then update set * when not matched then insert *"
        )
        assert [(r["k"], r["value"], r["items"]) for r in rows(path)] == [
            (1, {"a": 5, "b": "y"}, [{"a": 6, "b": "q"}]),
            (2, {"a": 9, "b": "z"}, None),
        ]
        self._refused(
            project,
            path,
            f"merge into {schema}.by_name t using (select 1 as k, named_struct('a', 1) as value) s "
            "on t.k = s.k when matched then update set value = s.value",
            "[DELTA_UPDATE_SCHEMA_MISMATCH_EXPRESSION] Cannot cast struct<a:int> to struct<a:int,b:string>. "
            "All nested columns must match.",
        )

    def test_refusals_at_analysis(self, project):
        schema = project.test_schema
        path = self._table(project, "refused", "select 1 as key, 1 as value union all select 2, 2")
        merge = f"merge into {schema}.refused t using (select 1 as key, 5 as value) s "
        self._refused(
            project,
            path,
            merge + "on t.key = s.key and rand() > 0.5 when matched then delete",
            "[DELTA_NON_DETERMINISTIC_FUNCTION_NOT_SUPPORTED] Non-deterministic functions are not supported "
            "in the search condition of MERGE operation",
        )
        self._refused(
            project,
            path,
            merge + "on t.key = s.key when matched and rand() > 0.5 then update set value = 1",
            "Non-deterministic functions are not supported in the UPDATE condition of MERGE operation",
        )
        self._refused(
            project,
            path,
            merge + "on t.key = s.key when matched and max(0) > 0 then delete",
            "[DELTA_AGGREGATION_NOT_SUPPORTED] Aggregate functions are not supported in the DELETE condition "
            "of MERGE operation (condition = ",
        )
        self._refused(
            project,
            path,
            merge + "on t.key = s.key when not matched and s.value in (select 1) then insert *",
            "[DELTA_UNSUPPORTED_SUBQUERY] Subqueries are not supported in the INSERT condition of MERGE "
            "operation",
        )
        # Spark resolves a subquery's relations before Delta refuses the subquery: the aliases are
        # no tables (``MergeIntoSuiteBase`` "update condition - subquery", "insert condition - ...").
        self._refused(
            project,
            path,
            merge + "on t.key = s.key when matched and s.value in (select value from t) then delete",
            "[TABLE_OR_VIEW_NOT_FOUND] The table or view `t` cannot be found.",
        )
        self._refused(
            project,
            path,
            merge + "on t.key = s.key when not matched and s.value in (select value from s) then insert *",
            "[TABLE_OR_VIEW_NOT_FOUND] The table or view `s` cannot be found.",
        )
        self._refused(
            project,
            path,
            merge + f"on t.key = s.key when matched and s.value in (select value from {schema}.refused) "
            "then delete",
            "[DELTA_UNSUPPORTED_SUBQUERY] Subqueries are not supported in the DELETE condition",
        )
        self._refused(
            project,
            path,
            merge
            + "on t.key = s.key when matched then update set value = row_number() over (order by s.value)",
            "[UNSUPPORTED_EXPR_FOR_OPERATOR]",
        )
        self._refused(
            project,
            path,
            merge + "on t.key = s.key when not matched then insert (key, value) values (s.key, t.value)",
            "[DELTA_MERGE_UNRESOLVED_EXPRESSION] Cannot resolve t.value in INSERT clause given columns "
            "s.key, s.value.",
        )
        self._refused(
            project,
            path,
            merge + "on t.key = s.key when not matched and value > 1 and nosuch > 0 then insert *",
            "Cannot resolve nosuch in INSERT condition given columns s.key, s.value.",
        )
        # A nondeterministic assignment is allowed, as in Delta.
        project.run_sql(
            merge + "on t.key = s.key when matched then update set value = cast(rand() * 0 as int) + 7"
        )
        assert [r["value"] for r in rows(path)] == [7, 2]

    def test_multiple_matches_count_whatever_the_clause_conditions(self, project):
        schema = project.test_schema
        path = self._table(project, "multi", "select 1 as key, 1 as value union all select 2, 2")
        source = "(select 1 as key, 10 as value union all select 1, 11 union all select 2, 20)"
        self._refused(
            project,
            path,
            f"merge into {schema}.multi t using {source} s on t.key = s.key "
            "when matched and s.value = 10 then update set value = s.value",
            "Cannot perform Merge as multiple source rows matched",
        )
        project.run_sql(
            f"merge into {schema}.multi t using {source} s on t.key = s.key when matched then delete"
        )
        assert [r["key"] for r in rows(path)] == []

    @pytest.mark.parametrize(
        "layout", ["", "partitioned by (part)", "tblproperties (delta.enableChangeDataFeed = true)"]
    )
    def test_a_delete_only_merge_with_duplicate_matches_counts_each_target_row_once(self, project, layout):
        """``MergeIntoMetricsBase`` "delete-only with duplicates": 100 source rows, each of 50 target
        rows matched twice; Delta counts the 50 rows deleted, not the 100 matches (and, with the
        change data feed, records each deleted row once)."""
        schema = project.test_schema
        project.run_sql(
            f"create or replace table {schema}.dup_deletes using delta {layout} "
            "as select id, id % 2 as part from range(0, 100, 1, 5)"
        )
        path = table_path(project, "dup_deletes")
        project.run_sql(
            f"merge into {schema}.dup_deletes t "
            "using (select floor(id / 2) as id from range(50, 150, 1, 2)) s on s.id = t.id "
            "when matched then delete"
        )
        assert sorted(r["id"] for r in rows(path)) == [*range(25), *range(75, 100)]
        history = DeltaTable(path).history(1)[0]["operationMetrics"]
        metrics = {k: int(v) for k, v in history.items() if k.startswith("num")}
        assert metrics["numSourceRows"] == 100
        assert metrics["numTargetRowsDeleted"] == metrics["numTargetRowsMatchedDeleted"] == 50
        assert metrics["numOutputRows"] == metrics["numTargetRowsCopied"]
        assert metrics["numTargetRowsUpdated"] == metrics["numTargetRowsInserted"] == 0
        if "ChangeDataFeed" in layout:
            merged = DeltaTable(path).version()
            feed = DeltaTable(path).load_cdf(starting_version=merged, ending_version=merged)
            changes = pa.table(feed.read_all()).to_pylist()
            assert sorted(c["id"] for c in changes) == list(range(25, 75))
            assert {c["_change_type"] for c in changes} == {"delete"}

    def test_duplicate_assignments_are_refused(self, project):
        schema = project.test_schema
        path = self._table(project, "dupes", "select 1 as key, 1 as key2")
        merge = f"merge into {schema}.dupes t using (select 1 as key) s on t.key = s.key "
        conflict = "[DELTA_CONFLICT_SET_COLUMN] There is a conflict from these SET columns"
        self._refused(project, path, merge + "when matched then update set key2 = 1, key2 = 2", conflict)
        self._refused(project, path, merge + "when matched then update set key2 = 1, t.KEY2 = 2", conflict)
        self._refused(
            project,
            path,
            merge + "when not matched then insert (key, key) values (1, 2)",
            "[DELTA_DUPLICATE_COLUMNS_ON_INSERT] Duplicate column names in INSERT clause",
        )

    def test_one_sided_clauses_resolve_against_their_side(self, project):
        schema = project.test_schema
        path = self._table(project, "sided", "select 1 as key, 100 as value union all select 3, 300")
        project.run_sql(
            f"merge into {schema}.sided t using (select 1 as key, 10 as value union all select 2, 20) s "
            "on t.key = s.key when matched then update set value = s.value "
            "when not matched then insert (key, value) values (key, value + 1) "
            "when not matched by source then update set value = value + 1"
        )
        assert [(r["key"], r["value"]) for r in rows(path)] == [(1, 10), (2, 21), (3, 301)]

    def test_statements_after_comments_and_with_ctes(self, project):
        schema = project.test_schema
        path = self._table(project, "cte", "select 1 as key, 1 as value")
        project.run_sql(
            f"-- a comment\n/* another */ merge with schema evolution into {schema}.cte t "
            "using (select 2 as key, 2 as value, 'new' as extra) s on t.key = s.key "
            "when not matched then insert *"
        )
        project.run_sql(
            f"with c as (select 1 as key, 9 as value, 'x' as extra) merge into {schema}.cte t using c "
            "on t.key = c.key when matched then update set *"
        )
        assert [(r["key"], r["value"], r["extra"]) for r in rows(path)] == [(1, 9, "x"), (2, 2, "new")]

    def test_one_instant_per_statement_and_deltas_metrics(self, project):
        schema = project.test_schema
        path = self._table(
            project,
            "instant",
            "select 1 as key, current_timestamp() as a, current_timestamp() as b "
            "union all select 2, current_timestamp(), current_timestamp()",
        )
        project.run_sql(
            f"merge into {schema}.instant t using (select 1 as key, now() as a union all select 3, now()) s "
            "on t.key = s.key when matched and current_timestamp() >= s.a then update set a = s.a, b = now() "
            "when not matched then insert (key, a, b) values (s.key, s.a, current_timestamp())"
        )
        got = {r["key"]: (r["a"], r["b"]) for r in rows(path)}
        assert got[1][0] == got[1][1] == got[3][0] == got[3][1]
        metrics = DeltaTable(path).history(1)[0]["operationMetrics"]
        assert metrics["numTargetRowsUpdated"] == "1" and metrics["numTargetRowsInserted"] == "1"
        assert int(metrics["numOutputRows"]) == 1 + 1 + int(metrics["numTargetRowsCopied"])
        assert "materializeSourceTimeMs" in metrics

    def test_a_models_nested_assignment_and_struct_by_name(self, project):
        run_dbt(["run"])
        run_dbt(["run"])
        path = table_path(project, "nested_model")
        assert [(r["key"], r["value"]) for r in rows(path)] == [
            ("A", {"a": 1, "b": "Z"}),
            ("B", {"a": 2, "b": "q"}),
        ]

    def test_merge_into_a_temp_view_that_is_its_delta_table(self, project, spark):
        schema = project.test_schema
        path = self._table(project, "viewed", "select 0 as key, 3 as value union all select 1, 2")
        project.run_sql(
            f"create or replace temp view v as select value, key from (select * from {schema}.viewed)"
        )
        project.run_sql(
            "merge into v using (select 1 as a, 2 as b union all select 3, 4) src on src.a = v.key "
            "when matched then update set v.value = src.b + 1 when not matched then insert (key, value) "
            "values (src.a, src.b)"
        )
        assert [(r["key"], r["value"]) for r in rows(path)] == [(0, 3), (1, 3), (3, 4)]
        project.run_sql(f"create or replace temp view w as select * from {schema}.viewed where key > 0")
        self._refused(
            project,
            path,
            "merge into w using (select 1 as key) s on s.key = w.key when matched then delete",
            "MERGE INTO the temp view w is not run: [DELTA_UNEXPECTED_PARTIAL_SCAN] Expect a full scan of "
            "Delta sources, but found a partial scan.",
        )

    def test_merge_into_a_temp_view_that_is_not_its_tables_columns_fails_as_in_delta(self, project):
        """``MergeIntoTempViewsTests`` ("subset cols", "superset cols") and ``MergeIntoSQLSuite``'s
        "Update specific column does not work in temp views": Delta's errors, nothing written."""
        schema = project.test_schema
        path = self._table(project, "shown", "select 0 as key, 3 as value union all select 1, 2")
        source = "(select 1 as a, 2 as b union all select 3, 4) src"
        project.run_sql(f"create or replace temp view sub as select key from {schema}.shown")
        self._refused(
            project,
            path,
            f"merge into sub using {source} on src.a = sub.key and src.b = sub.value "
            "when matched then update set sub.key = src.b + 1",
            "[UNRESOLVED_COLUMN.WITH_SUGGESTION]",
            "`sub`.`value`",
        )
        project.run_sql(f"create or replace temp view sup as select key, value, 1 from {schema}.shown")
        self._refused(
            project,
            path,
            f"merge into sup using {source} on src.a = sup.key and src.b = sup.value "
            "when matched then update set sup.value = src.b + 1",
            "[DELTA_SCHEMA_CHANGE_SINCE_ANALYSIS] The schema of your Delta table has changed",
            "Latest schema is missing field(s): 1",
        )
        nested = self._table(
            project, "nested_shown", "select 'A' as key, named_struct('a', named_struct('x', 1)) as value"
        )
        project.run_sql(f"create or replace temp view nv as select * from {schema}.nested_shown")
        self._refused(
            project,
            nested,
            "merge into nv t using (select 'A' as key, named_struct('a', named_struct('x', 2)) as value) s "
            "on s.key = t.key when matched then update set value.a.x = s.value.a.x",
            "[DELTA_MERGE_UNEXPECTED_ASSIGNMENT_KEY] Unexpected assignment key",
        )
        # Through the view of every column, the same assignment is the table's (the view is stripped).
        project.run_sql(f"create or replace temp view whole as select * from {schema}.shown")
        project.run_sql(
            f"merge into whole using {source} on src.a = whole.key "
            "when matched then update set whole.value = 9"
        )
        assert sorted((r["key"], r["value"]) for r in rows(path)) == [(0, 3), (1, 9)]

    def test_schema_evolution_adds_nested_fields_and_update_star_keeps_the_others(self, project):
        schema = project.test_schema
        path = self._table(project, "evolving", "select 1 as k, named_struct('a', 1, 'b', 'x') as s")
        evolve = f"merge with schema evolution into {schema}.evolving t using "
        project.run_sql(
            evolve + "(select 1 as k, named_struct('b', 'y', 'c', 3, 'a', 5) as s union all "
            "select 2, named_struct('b', 'z', 'c', 4, 'a', 6)) s on t.k = s.k "
            "when matched then update set * when not matched then insert *"
        )
        project.run_sql(
            evolve + "(select 1 as k, named_struct('a', 9) as s union all select 3, named_struct('a', 7)) s "
            "on t.k = s.k when matched then update set * when not matched then insert *"
        )
        assert [(r["k"], r["s"]) for r in rows(path)] == [
            (1, {"a": 9, "b": "y", "c": 3}),  # UPDATE * keeps the fields the source lacks
            (2, {"a": 6, "b": "z", "c": 4}),
            (3, {"a": 7, "b": None, "c": None}),  # an insert has no row to keep them from
        ]

    def test_update_star_and_several_clauses_under_schema_evolution(self, project):
        """``MergeIntoSchemaEvolutionSuite``: "update * with column not in source" (the target's
        other column keeps its value) and "multiple clauses" (``srcVal`` in an assignment is the
        source's column, though UPDATE * adds it to the target)."""
        schema = project.test_schema
        path = self._table(
            project,
            "star",
            "select * from values (0, 0, 0), (1, 10, 10), (3, 30, 30) as v(key, value, extra)",
        )
        evolve = f"merge with schema evolution into {schema}.star t using "
        project.run_sql(
            evolve + "(select * from values (1, 1), (2, 2) as v(key, value)) s on t.key = s.key "
            "when matched then update set *"
        )
        assert [(r["key"], r["value"], r["extra"]) for r in rows(path)] == [
            (0, 0, 0),
            (1, 1, 10),
            (3, 30, 30),
        ]
        path = self._table(
            project,
            "several",
            "select * from values (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e') as v(key, targetVal)",
        )
        project.run_sql(
            f"merge with schema evolution into {schema}.several t using "
            "(select * from values (1, 't'), (2, 'u'), (3, 'v'), (4, 'w'), (6, 'x'), (7, 'y'), (8, 'z') "
            "as v(key, srcVal)) s on t.key = s.key "
            "when matched and s.key = 1 then update set targetVal = srcVal "
            "when matched and s.key = 2 then update set * "
            "when matched and s.key = 3 then delete when matched and s.key = 4 then delete "
            "when not matched and s.key = 6 then insert (key) values (s.key) "
            "when not matched and s.key = 7 then insert *"
        )
        assert [(r["key"], r["targetVal"], r["srcVal"]) for r in rows(path)] == [
            (1, "t", None),
            (2, "b", "u"),
            (5, "e", None),
            (6, None, None),
            (7, None, "y"),
        ]

    def test_schema_evolution_inside_map_keys_and_values(self, project):
        """``MergeIntoNestedStructInMapEvolutionTests``: a struct in a map's keys and values evolves
        (a new field, fewer fields, another order), matched by name; an untouched row's entries
        read the new field as null; a struct where the table has an array is Delta's merge error."""
        schema = project.test_schema
        path = self._table(
            project,
            "mapped",
            "select key, map(named_struct('a', a, 'b', b), named_struct('d', d, 'e', e)) as x "
            "from values (1, 2, 3, 4, 5), (3, 6, 7, 8, 9) as v(key, a, b, d, e)",
        )
        project.run_sql(
            f"merge with schema evolution into {schema}.mapped t using (select key, "
            "map(named_struct('b', b, 'c', c, 'a', a), named_struct('f', f, 'e', e)) as x from values "
            "(1, 10, 30, 50, 90, 110), (2, 20, 40, 60, 100, 120) as v(key, a, b, c, e, f)) s "
            "on t.key = s.key when matched then update set * when not matched then insert *"
        )
        got = {r["key"]: r["x"] for r in rows(path)}
        assert got == {
            1: [({"a": 10, "b": 30, "c": 50}, {"d": None, "e": 90, "f": 110})],  # no entry is kept
            2: [({"a": 20, "b": 40, "c": 60}, {"d": None, "e": 100, "f": 120})],
            3: [({"a": 6, "b": 7, "c": None}, {"d": 8, "e": 9, "f": None})],
        }
        arrays = self._table(project, "arrays", "select 1 as key, map('k', array(1, 2)) as m")
        self._refused(
            project,
            arrays,
            f"merge with schema evolution into {schema}.arrays t using "
            "(select 1 as key, map('k', named_struct('a', 2)) as m) s on t.key = s.key "
            "when matched then update set *",
            "[DELTA_FAILED_TO_MERGE_FIELDS] Failed to merge fields 'm' and 'm'",
            "Failed to merge incompatible data types array<int> and struct<a:int>",
        )

    def test_an_assigned_key_resolves_against_the_table_then_the_source_under_schema_evolution(self, project):
        """``MergeIntoSchemaEvolutionSuite``'s qualified assignments, each beside Delta on Spark:
        the key is the table's if it names the table's column (and fields), else the source's."""
        schema = project.test_schema
        evolve = f"merge with schema evolution into {schema}"
        path = self._table(project, "keyed", "select 1 as key, 2 as v")
        project.run_sql(
            f"{evolve}.keyed t using (select 1 as key, 5 as extra) s on t.key = s.key "
            "when matched then update set s.extra = s.extra"  # the source's column: added
        )
        assert [(r["key"], r["v"], r["extra"]) for r in rows(path)] == [(1, 2, 5)]
        self._refused(  # the table has no `extra2` yet: Delta does not read the alias away
            project,
            path,
            f"{evolve}.keyed t using (select 1 as key, 6 as extra2) s on t.key = s.key "
            "when matched then update set t.extra2 = s.extra2",
            "[DELTA_MERGE_UNRESOLVED_EXPRESSION] Cannot resolve t.extra2 in UPDATE clause given columns",
        )
        path = self._table(project, "struct_t", "select 1 as key, 1 as a, named_struct('a', 2) as t")
        project.run_sql(  # `t.b`: no column b in the table; the source's struct `t` has a field b
            f"{evolve}.struct_t t using (select 1 as key, 3 as a, 4 as b, "
            "named_struct('a', 5, 'b', 6) as t) s on 1 = 1 when matched then update set t.b = s.b"
        )
        assert [(r["key"], r["a"], r["t"]) for r in rows(path)] == [(1, 1, {"a": 2, "b": 4})]
        assert "b" not in DeltaTable(path).schema().to_arrow().names
