"""The statements the engine runs on Delta tables, parsed without Spark."""

from __future__ import annotations

import pytest

from dbt.adapters.deltamerge.merge.spec import MergeSpec
from dbt.adapters.deltamerge.statements.parse.dml import (
    DeleteStatement,
    MergeStatement,
    StatementParseError,
    TruncateStatement,
    UpdateStatement,
    parse_dml,
)
from dbt.adapters.deltamerge.statements.parse.text import SqlText


def test_delete_with_and_without_condition():
    assert parse_dml(SqlText("DELETE FROM s.t")) == DeleteStatement(("s", "t"), None, None)
    assert parse_dml(SqlText("delete from t as x where x.a in (1, 2) or b is null")) == DeleteStatement(
        ("t",), "x", "x.a IN (1, 2) OR b IS NULL"
    )


def test_update_assignments_keep_their_order():
    parsed = parse_dml(SqlText("update `my s`.`t` set b = b * 2, a = 'z' where a <> 'q'"))
    assert parsed == UpdateStatement(("my s", "t"), None, (("b", "b * 2"), ("a", "'z'")), "a <> 'q'")


def test_merge_becomes_the_config_of_a_delta_merge_model():
    parsed = parse_dml(
        SqlText(
            "MERGE INTO s.t AS d USING (SELECT * FROM x) AS src ON d.id = src.id "
            "WHEN MATCHED AND src.op = 'D' THEN DELETE "
            "WHEN MATCHED THEN UPDATE SET * "
            "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (src.id, src.v + 1) "
            "WHEN NOT MATCHED BY SOURCE AND d.v > 1 THEN UPDATE SET v = 0"
        )
    )
    assert isinstance(parsed, MergeStatement)
    assert parsed.parts == ("s", "t") and parsed.source_query == "SELECT * FROM x"
    config = parsed.config
    assert (config["source_alias"], config["target_alias"]) == ("src", "d")
    assert config["merge_condition"] == "d.id = src.id"
    assert config["when_matched"] == [{"condition": "src.op = 'D'", "action": "delete"}, {"action": "update"}]
    assert config["when_not_matched"] == [{"action": "insert", "values": {"id": "src.id", "v": "src.v + 1"}}]
    assert config["when_not_matched_by_source"] == [
        {"condition": "d.v > 1", "action": "update", "set": {"v": "0"}}
    ]
    spec = MergeSpec.from_config("MERGE INTO s.t", config)
    assert [c.action for c in spec.matched] == ["delete", "update"] and spec.matched[1].is_star


def test_merge_with_schema_evolution_and_a_table_source():
    parsed = parse_dml(
        SqlText(
            "merge with schema evolution into t using s.src on t.k = src.k when not matched then insert *"
        )
    )
    assert isinstance(parsed, MergeStatement)
    assert parsed.config["merge_with_schema_evolution"] is True
    assert parsed.source_query == "SELECT * FROM `s`.`src`"
    assert (parsed.config["source_alias"], parsed.config["target_alias"]) == ("src", "t")


def test_a_merge_source_subquery_needs_an_alias():
    with pytest.raises(StatementParseError, match="subquery with an alias"):
        parse_dml(SqlText("merge into t using (select 1 as k) on t.k = 1 when matched then delete"))


def test_truncate():
    assert parse_dml(SqlText("truncate table s.t")) == TruncateStatement(("s", "t"))


def test_unsupported_forms_say_what_is_not_supported():
    with pytest.raises(StatementParseError, match="PARTITION"):
        parse_dml(SqlText("truncate table t partition (p = 1)"))


def test_spark_4_functions_sqlglot_s_spark_generator_drops_are_kept():
    # sqlglot's Spark generator turns parse_json(x) into x: a string where the user made a VARIANT.
    from dbt.adapters.deltamerge.statements.parse.statement import parse_write_statement

    statement = parse_write_statement(
        SqlText(
            "merge into t using (select 1 as id, parse_json('{\"k\": 1}') as v) s on t.id = s.id "
            "when not matched then insert *"
        )
    )
    assert "PARSE_JSON('{\"k\": 1}') AS v" in statement.source_query  # type: ignore[union-attr]
    update = parse_write_statement(SqlText("update t set v = parse_json(j) where id = 1"))
    assert update.assignments == (("v", "PARSE_JSON(j)"),)  # type: ignore[union-attr]


def test_schema_evolution_is_recognised_after_dbts_query_comment():
    parsed = parse_dml(
        SqlText(
            '/* {"app": "dbt", "node_id": "model.p.m"} */\n-- and a line\n'
            "MERGE WITH SCHEMA EVOLUTION INTO t USING s ON t.k = s.k WHEN MATCHED THEN DELETE"
        )
    )
    assert isinstance(parsed, MergeStatement) and parsed.config["merge_with_schema_evolution"] is True


def test_a_merges_ctes_belong_to_its_source():
    parsed = parse_dml(
        SqlText("with c as (select 1 as k) merge into t using c on t.k = c.k when matched then delete")
    )
    assert isinstance(parsed, MergeStatement)
    assert parsed.source_query == "WITH c AS (SELECT 1 AS k) SELECT * FROM `c`"


def test_assigned_columns_keep_their_path_and_qualifier():
    parsed = parse_dml(
        SqlText(
            "merge into t using s on t.k = s.k when matched then update set t.v = 1, value.b = 'x', "
            "`a b` = 2 when not matched then insert (k, value.a) values (s.k, 1)"
        )
    )
    assert isinstance(parsed, MergeStatement)
    assert list(parsed.config["when_matched"][0]["set"]) == ["t.v", "value.b", "`a b`"]
    assert list(parsed.config["when_not_matched"][0]["values"]) == ["k", "value.a"]


def test_a_column_assigned_twice_is_deltas_error():
    with pytest.raises(StatementParseError, match=r"DELTA_CONFLICT_SET_COLUMN\] .* \[`key2`, `key2`\]\."):
        parse_dml(
            SqlText("merge into t using s on t.k = s.k when matched then update set key2 = 1, key2 = 2")
        )
    duplicate = r"DELTA_DUPLICATE_COLUMNS_ON_INSERT\] Duplicate column names"
    with pytest.raises(StatementParseError, match=duplicate):
        parse_dml(
            SqlText("merge into t using s on t.k = s.k when not matched then insert (k, K) values (1, 2)")
        )


def test_long_runs_of_whitespace_and_comments_parse_at_once():
    # dbt's tests and macros send statements with long indented blank runs: the comment-skipping
    # pattern must not backtrack over them (a nested quantifier hung `dbt test` for minutes).
    assert parse_dml(SqlText("/* dbt */\n" + "    \n" * 20_000 + "select 1")) is None
    statement = parse_dml(
        SqlText(
            "/* dbt */\n" + "  \n" * 20_000 + "merge with schema evolution into t using s "
            "on t.k = s.k when matched then delete"
        )
    )
    assert isinstance(statement, MergeStatement) and statement.config["merge_with_schema_evolution"]
