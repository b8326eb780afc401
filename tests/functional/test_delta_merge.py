"""The delta_merge strategy through real dbt runs; tables read back with deltalake."""

from __future__ import annotations

import json

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file
from deltalake import DeltaTable

from tests.functional.helpers import log_actions, rows, table_path


def rows_sql(*values: tuple) -> str:
    selects = [f"select {i} as id, '{v}' as v, '{op}' as op" for i, v, op in values]
    return " union all ".join(selects)


def model(sql: str, **config: object) -> str:
    base = {"materialized": "incremental", "incremental_strategy": "delta_merge", **config}
    return "{{ config(" + ", ".join(f"{k}={v!r}" for k, v in base.items()) + ") }}\n" + sql


def put(project, name: str, text: str) -> None:
    write_file(text, project.project_root, "models", f"{name}.sql")


def last_metrics(path: str) -> dict[str, int]:
    """The newest commit's operationMetrics as numbers (the log stores strings)."""
    return {k: int(v) for k, v in DeltaTable(path).history()[0]["operationMetrics"].items()}


def _data_files(path: str) -> list[str]:
    import os

    return sorted(
        os.path.relpath(os.path.join(d, n), path)
        for d, dirs, names in os.walk(path)
        if not os.path.relpath(d, path).startswith("_")
        for n in names
        if n.endswith(".parquet")
    )


def state(path: str) -> list[tuple]:
    return [(r["id"], r["v"]) for r in rows(path)]


class TestUpsertAndClauses:
    @pytest.fixture(scope="class")
    def models(self):
        first = rows_sql((1, "a", "U"), (2, "b", "U"), (3, "c", "U"))
        return {"upsert.sql": model(first, unique_key="id"), "clauses.sql": model(first, unique_key="id")}

    def test_default_upsert(self, project):
        run_dbt(["run", "--select", "upsert"])
        put(project, "upsert", model(rows_sql((2, "B", "U"), (4, "d", "U")), unique_key="id"))
        result = run_dbt(["run", "--select", "upsert"])
        path = table_path(project, "upsert")
        assert state(path) == [(1, "a"), (2, "B"), (3, "c"), (4, "d")]
        head = log_actions(path, 1)[0]["commitInfo"]
        assert head["operation"] == "MERGE"
        metrics = head["operationMetrics"]
        assert (metrics["numTargetRowsInserted"], metrics["numTargetRowsUpdated"]) == ("1", "1")
        assert metrics["numSourceRows"] == "2" and metrics["numTargetRowsDeleted"] == "0"
        params = head["operationParameters"]
        assert set(params) == {
            "predicate",
            "matchedPredicates",
            "notMatchedPredicates",
            "notMatchedBySourcePredicates",
        }
        response = result.results[0].adapter_response
        assert response["rows_affected"] == 2 and response["numTargetRowsInserted"] == 1

    def test_clauses_first_match_wins_and_not_matched_by_source(self, project):
        run_dbt(["run", "--select", "clauses"])
        source = rows_sql((1, "x", "D"), (2, "y", "U"), (4, "z", "D"), (5, "w", "U"))
        put(
            project,
            "clauses",
            model(
                source,
                unique_key="id",
                when_matched=[
                    {"condition": "DBT_INTERNAL_SOURCE.op = 'D'", "action": "delete"},
                    {"action": "update", "set": {"v": "concat(DBT_INTERNAL_DEST.v, DBT_INTERNAL_SOURCE.v)"}},
                ],
                when_not_matched=[
                    {"condition": "DBT_INTERNAL_SOURCE.op != 'D'", "action": "insert", "values": "*"}
                ],
                when_not_matched_by_source=[{"action": "update", "set": {"v": "'orphan'"}}],
            ),
        )
        run_dbt(["run", "--select", "clauses"])
        path = table_path(project, "clauses")
        # 1 deleted, 2 updated from both sides, 3 untouched by source -> orphan, 4 not inserted, 5 inserted
        assert state(path) == [(2, "by"), (3, "orphan"), (5, "w")]
        metrics = last_metrics(path)
        assert metrics["numTargetRowsMatchedDeleted"] == 1
        assert metrics["numTargetRowsMatchedUpdated"] == 1
        assert metrics["numTargetRowsNotMatchedBySourceUpdated"] == 1
        assert metrics["numTargetRowsInserted"] == 1


class TestWorkAvoidedAndErrors:
    @pytest.fixture(scope="class")
    def models(self):
        # 20 files, each a contiguous range of 100 keys
        wide = (
            "select /*+ REPARTITION_BY_RANGE(20, id) */ cast(id as int) as id, 'v' as v, 'U' as op "
            "from range(2000)"
        )
        return {
            "wide.sql": "{{ config(materialized='table') }}\n" + wide,
            "inserts.sql": model(rows_sql((1, "a", "U"), (2, "b", "U")), unique_key="id", when_matched=[]),
            "dupes.sql": model(rows_sql((1, "a", "U")), unique_key="id"),
            "nulls.sql": model("select cast(null as int) as id, 'n' as v, 'U' as op", unique_key="id"),
        }

    def test_upsert_into_one_file_of_many_rewrites_one_file(self, project):
        run_dbt(["run", "--select", "wide"])
        path = table_path(project, "wide")
        assert len(DeltaTable(path).file_uris()) == 20
        source = "select cast(id as int) as id, 'new' as v, 'U' as op from range(500, 510)"
        put(project, "wide", model(source, unique_key="id"))
        run_dbt(["run", "--select", "wide"])
        metrics = last_metrics(path)
        assert metrics["numTargetFilesRemoved"] == 1
        assert metrics["numTargetFilesAfterSkipping"] < metrics["numTargetFilesBeforeSkipping"] == 20
        assert metrics["numTargetRowsUpdated"] == 10 and metrics["numTargetRowsCopied"] == 90
        assert len(rows(path)) == 2000

    def test_insert_only_removes_nothing(self, project):
        run_dbt(["run", "--select", "inserts"])
        put(
            project,
            "inserts",
            model(rows_sql((2, "B", "U"), (3, "c", "U")), unique_key="id", when_matched=[]),
        )
        run_dbt(["run", "--select", "inserts"])
        path = table_path(project, "inserts")
        assert state(path) == [(1, "a"), (2, "b"), (3, "c")]
        metrics = last_metrics(path)
        assert metrics["numTargetFilesRemoved"] == 0 and metrics["numTargetRowsInserted"] == 1

    def test_multiple_matches_fail_and_leave_the_table(self, project):
        run_dbt(["run", "--select", "dupes"])
        put(project, "dupes", model(rows_sql((1, "x", "U"), (1, "y", "U")), unique_key="id"))
        _, out = run_dbt_and_capture(["run", "--select", "dupes"], expect_pass=False)
        assert "Cannot perform Merge as multiple source rows matched" in out
        assert "id=1" in out and "Model 'dupes'" in out
        path = table_path(project, "dupes")
        assert DeltaTable(path).version() == 0 and state(path) == [(1, "a")]

    def test_null_keys_never_duplicate_and_no_op_commits_nothing(self, project):
        run_dbt(["run", "--select", "nulls"])
        run_dbt(["run", "--select", "nulls"])
        path = table_path(project, "nulls")
        assert state(path) == [(None, "n")]
        assert DeltaTable(path).version() == 1  # the null key matched: one update
        put(
            project,
            "nulls",
            model("select 7 as id, 'x' as v, 'U' as op", unique_key="id", when_not_matched=[]),
        )
        results = run_dbt(["run", "--select", "nulls"])
        assert DeltaTable(path).version() == 1  # matched nothing, inserted nothing: no version
        assert "no change" in results.results[0].adapter_response["_message"]

    def test_an_insert_only_merge_of_rows_already_there_writes_and_commits_nothing(self, project):
        put(project, "inserts", model(rows_sql((1, "a", "U"), (2, "b", "U")), unique_key="id"))
        run_dbt(["run", "--select", "inserts"])
        path = table_path(project, "inserts")
        version, before, rows_before = DeltaTable(path).version(), _data_files(path), state(path)
        assert (1, "a") in rows_before and (2, "b") in rows_before
        put(
            project,
            "inserts",
            model(rows_sql((2, "z", "U"), (1, "y", "U")), unique_key="id", when_matched=[]),
        )
        results = run_dbt(["run", "--select", "inserts"])
        assert "no change" in results.results[0].adapter_response["_message"]
        assert results.results[0].adapter_response["numTargetRowsInserted"] == 0
        assert DeltaTable(path).version() == version and _data_files(path) == before
        assert state(path) == rows_before

    @pytest.mark.parametrize(
        ("config", "expected"),
        [
            ({"when_matched": [{"action": "update", "condition": "DBT_INTERNAL_SOURCE.nope > 1"}]}, "nope"),
            # Delta casts a string assigned to a number column (ANSI cast): this one does not parse.
            ({"when_matched": [{"action": "update", "set": {"id": "'not a number'"}}]}, "cannot be cast to"),
        ],
    )
    def test_failed_merge_leaves_table_and_files(self, project, config, expected):
        put(project, "inserts", model(rows_sql((1, "a", "U")), unique_key="id"))
        run_dbt(["run", "--select", "inserts"])
        path = table_path(project, "inserts")
        version, before = DeltaTable(path).version(), _data_files(path)
        put(project, "inserts", model(rows_sql((1, "z", "U")), unique_key="id", **config))
        _, out = run_dbt_and_capture(["run", "--select", "inserts"], expect_pass=False)
        assert "Model 'inserts'" in out and expected in out
        assert DeltaTable(path).version() == version
        assert _data_files(path) == before  # nothing written, nothing left behind

    def test_bad_config_is_reported_before_anything_runs(self, project):
        put(project, "dupes", model(rows_sql((1, "a", "U")), when_matched=[{"action": "upsert"}]))
        _, out = run_dbt_and_capture(["run", "--select", "dupes"], expect_pass=False)
        assert "Model 'dupes'" in out and "got 'upsert'" in out and "needs `unique_key`" in out


class TestEdgesAndPartitions:
    @pytest.fixture(scope="class")
    def models(self):
        days = (
            "select id, concat('v', id) as v, 'U' as op, "
            "date_add(date'2026-01-01', cast(id % 3 as int)) as day from range(12)"
        )
        return {
            "parts.sql": model(days, unique_key="id", partition_by=["day"]),
            "empty_source.sql": model(rows_sql((1, "a", "U")), unique_key="id"),
            "empty_target.sql": model(rows_sql((1, "a", "U")) + " limit 0", unique_key="id"),
        }

    def test_partitioned_target_rewrites_only_the_touched_partition(self, project):
        run_dbt(["run", "--select", "parts"])
        path = table_path(project, "parts")
        source = "select 4 as id, 'changed' as v, 'U' as op, date'2026-01-02' as day"
        put(project, "parts", model(source, unique_key="id", partition_by=["day"]))
        run_dbt(["run", "--select", "parts"])
        metrics = last_metrics(path)
        assert metrics["numTargetFilesRemoved"] == 1 and metrics["numTargetPartitionsRemovedFrom"] == 1
        assert metrics["numTargetPartitionsAddedTo"] == 1 and metrics["numTargetRowsUpdated"] == 1
        added = [json.loads(a["add"]["stats"])["numRecords"] for a in log_actions(path, 1) if "add" in a]
        assert sum(added) == metrics["numTargetRowsCopied"] + 1
        changed = [r for r in rows(path) if r["id"] == 4]
        assert changed[0]["v"] == "changed" and len(rows(path)) == 12
        removed = [a["remove"] for a in log_actions(path, 1) if "remove" in a]
        assert removed[0]["partitionValues"] == {"day": "2026-01-02"}

    def test_partition_only_incremental_predicates_prune_files(self, project):
        path = table_path(project, "parts")
        before = DeltaTable(path).version()
        source = "select 7 as id, 'pruned' as v, 'U' as op, date'2026-01-02' as day"
        predicates = ["DBT_INTERNAL_DEST.day = date'2026-01-02'", "DBT_INTERNAL_DEST.v != 'x'"]
        put(
            project,
            "parts",
            model(source, unique_key="id", partition_by=["day"], incremental_predicates=predicates),
        )
        run_dbt(["run", "--select", "parts"])
        metrics = last_metrics(path)
        files_per_day = metrics["numTargetFilesAfterSkipping"]
        assert DeltaTable(path).version() == before + 1
        # only 2026-01-02's files are candidates: the partition predicate pruned the other days
        assert metrics["numTargetPartitionsAfterSkipping"] == 1
        assert 0 < files_per_day < metrics["numTargetFilesBeforeSkipping"]
        assert [r["v"] for r in rows(path) if r["id"] == 7] == ["pruned"]

    def test_empty_source_changes_nothing(self, project):
        run_dbt(["run", "--select", "empty_source"])
        put(project, "empty_source", model(rows_sql((1, "a", "U")) + " limit 0", unique_key="id"))
        run_dbt(["run", "--select", "empty_source"])
        path = table_path(project, "empty_source")
        assert DeltaTable(path).version() == 0 and state(path) == [(1, "a")]

    def test_empty_target_receives_inserts(self, project):
        run_dbt(["run", "--select", "empty_target"])
        path = table_path(project, "empty_target")
        assert rows(path) == []
        put(project, "empty_target", model(rows_sql((1, "a", "U"), (2, "b", "U")), unique_key="id"))
        run_dbt(["run", "--select", "empty_target"])
        assert state(path) == [(1, "a"), (2, "b")]
        assert last_metrics(path)["numTargetFilesBeforeSkipping"] == 0


class TestClauseKinds:
    """One clause kind per test, each on a fresh table of ids 1..4 (v = a..d, op U)."""

    START = rows_sql((1, "a", "U"), (2, "b", "U"), (3, "c", "U"), (4, "d", "U"))

    @pytest.fixture(scope="class")
    def models(self):
        return {"kinds.sql": model(self.START, unique_key="id")}

    def _merge(self, project, source: str, **config) -> str:
        put(project, "kinds", model(self.START, unique_key="id"))
        run_dbt(["run", "--select", "kinds", "--full-refresh"])
        put(project, "kinds", model(source, **config))
        run_dbt(["run", "--select", "kinds"])
        return table_path(project, "kinds")

    def test_conditional_update_with_expressions(self, project):
        path = self._merge(
            project,
            rows_sql((1, "x", "U"), (3, "y", "U")),
            unique_key="id",
            when_matched=[
                {
                    "condition": "DBT_INTERNAL_DEST.v > 'a'",
                    "action": "update",
                    "set": {"v": "upper(DBT_INTERNAL_SOURCE.v)", "op": "'u'"},
                }
            ],
            when_not_matched=[],
        )
        assert [(r["id"], r["v"], r["op"]) for r in rows(path)] == [
            (1, "a", "U"),
            (2, "b", "U"),
            (3, "Y", "u"),
            (4, "d", "U"),
        ]
        m = last_metrics(path)
        assert (m["numTargetRowsMatchedUpdated"], m["numTargetRowsUpdated"], m["numTargetFilesRemoved"]) == (
            1,
            1,
            1,
        )

    def test_unconditional_delete_allows_several_source_rows_per_key(self, project):
        triple = rows_sql(*[(k, "z", "D") for k in (2, 2, 2, 4, 4, 4, 9)])
        path = self._merge(
            project, triple, unique_key="id", when_matched=[{"action": "delete"}], when_not_matched=[]
        )
        assert state(path) == [(1, "a"), (3, "c")]
        m = last_metrics(path)
        assert (m["numSourceRows"], m["numTargetRowsDeleted"], m["numTargetRowsInserted"]) == (7, 2, 0)

    def test_conditional_insert_with_explicit_values(self, project):
        path = self._merge(
            project,
            rows_sql((5, "e", "U"), (6, "f", "D"), (1, "x", "U")),
            unique_key="id",
            when_matched=[],
            when_not_matched=[
                {
                    "condition": "DBT_INTERNAL_SOURCE.op = 'U'",
                    "action": "insert",
                    "values": {
                        "id": "DBT_INTERNAL_SOURCE.id * 10",
                        "v": "concat(DBT_INTERNAL_SOURCE.v, '!')",
                    },
                }
            ],
        )
        got = [(r["id"], r["v"], r["op"]) for r in rows(path)]
        assert got[-1] == (50, "e!", None) and len(got) == 5  # op not named: null; 6 filtered; 1 matched
        m = last_metrics(path)
        assert (m["numTargetRowsInserted"], m["numTargetFilesRemoved"]) == (1, 0)

    def test_not_matched_by_source_delete_with_condition(self, project):
        path = self._merge(
            project,
            rows_sql((1, "A", "U")),
            unique_key="id",
            when_not_matched_by_source=[{"condition": "DBT_INTERNAL_DEST.id >= 3", "action": "delete"}],
        )
        assert state(path) == [(1, "A"), (2, "b")]
        m = last_metrics(path)
        assert (m["numTargetRowsNotMatchedBySourceDeleted"], m["numTargetRowsMatchedUpdated"]) == (2, 1)

    def test_explicit_merge_condition_never_matches_null_keys(self, project):
        nulls = "select cast(null as int) as id, 'n' as v, 'U' as op"
        put(project, "kinds", model(nulls, merge_condition="DBT_INTERNAL_DEST.id = DBT_INTERNAL_SOURCE.id"))
        run_dbt(["run", "--select", "kinds", "--full-refresh"])
        run_dbt(["run", "--select", "kinds"])  # `=` with null is never true: inserted again, as in SQL
        path = table_path(project, "kinds")
        assert state(path) == [(None, "n"), (None, "n")]
        assert last_metrics(path)["numTargetRowsInserted"] == 1


class TestInsertWithoutMatchedClauseButBySource:
    """Issue 14, case 2: no WHEN MATCHED clause, inserts and a conditional BY SOURCE update.

    Source id 33 matches the target: Delta, delta-rs and DuckDB leave it alone and insert
    the 50 new ids (52 rows). The BY SOURCE condition selects only row 33, which matches,
    so phase 1 touches no file; whether a source row is new must still be decided against
    every file that may hold its match.
    """

    FIRST = "select 53 as id, 13 as ts, 'g' as grp union all select 33 as id, 7 as ts, 'g' as grp"
    SOURCE = (
        "select 33 as id, 20 as ts, 'src' as grp union all "
        "select cast(id + 100 as int) as id, 1 as ts, 'new' as grp from range(50)"
    )

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "by_key.sql": model(self.FIRST, unique_key="id"),
            "by_condition.sql": model(self.FIRST, unique_key="id"),
        }

    @pytest.mark.parametrize(
        ("name", "config"),
        [
            ("by_key", {"unique_key": "id"}),
            (
                "by_condition",
                {"merge_condition": "src.id = tgt.id", "source_alias": "src", "target_alias": "tgt"},
            ),
        ],
    )
    def test_a_matched_source_row_is_not_inserted(self, project, name, config):
        run_dbt(["run", "--select", name])
        target = config.get("target_alias", "DBT_INTERNAL_DEST")
        clauses = {
            "when_matched": [],
            "when_not_matched": [{"action": "insert", "values": "*"}],
            "when_not_matched_by_source": [
                {"condition": f"{target}.ts <= 10", "action": "update", "set": {"grp": "'-1'"}}
            ],
        }
        put(project, name, model(self.SOURCE, **config, **clauses))
        result = run_dbt(["run", "--select", name])
        path = table_path(project, name)
        got = rows(path)
        assert len(got) == 52 and [r["id"] for r in got].count(33) == 1
        assert [(r["ts"], r["grp"]) for r in got if r["id"] in (33, 53)] == [(7, "g"), (13, "g")]
        m = last_metrics(path)
        assert (m["numTargetRowsInserted"], m["numTargetRowsUpdated"], m["numTargetFilesRemoved"]) == (
            50,
            0,
            0,
        )
        assert result.results[0].adapter_response["rows_affected"] == 50
