"""Parsing table-writing SQL statements with sqlglot: pure, no JVM."""

from __future__ import annotations

import pytest

from dbt.adapters.deltamerge.dml_parse import (
    DeleteStatement,
    MergeStatement,
    TruncateStatement,
    UpdateStatement,
)
from dbt.adapters.deltamerge.statement_parse import (
    InsertStatement,
    RefusedStatement,
    StatementParseError,
    parse_write_statement,
)


@pytest.mark.parametrize(
    ("sql", "parts", "columns", "partitions", "by_name", "overwrite", "query"),
    [
        (
            "insert into s.t values (1, 'a'), (2, 'b')",
            ("s", "t"),
            (),
            (),
            False,
            False,
            "values (1, 'a'), (2, 'b')",
        ),
        (
            "INSERT INTO TABLE spark_catalog.s.t SELECT * FROM x;",
            ("spark_catalog", "s", "t"),
            (),
            (),
            False,
            False,
            "SELECT * FROM x",
        ),
        ("insert into t (a, `b c`) select 1, 2", ("t",), ("a", "b c"), (), False, False, "select 1, 2"),
        ("insert into t by name select 1 as a", ("t",), (), (), True, False, "select 1 as a"),
        (
            "insert overwrite table t partition (p = 'x', q) select 1, 2",
            ("t",),
            (),
            (("p", "x"), ("q", None)),
            False,
            True,
            "select 1, 2",
        ),
        ("insert into t partition (d = 5) values (1)", ("t",), (), (("d", "5"),), False, False, "values (1)"),
        (
            "-- hook\n/* c */ insert into `my s`.`t(1)` (select 1)",
            ("my s", "t(1)"),
            (),
            (),
            False,
            False,
            "(select 1)",
        ),
        (
            "insert into t with x as (select 1) select * from x",
            ("t",),
            (),
            (),
            False,
            False,
            "with x as (select 1) select * from x",
        ),
        ("insert into t table other", ("t",), (), (), False, False, "table other"),
        (
            "insert into t (a) (with x as (select 1) select * from x)",
            ("t",),
            ("a",),
            (),
            False,
            False,
            "(with x as (select 1) select * from x)",
        ),
    ],
)
def test_insert_header_and_the_query_as_written(sql, parts, columns, partitions, by_name, overwrite, query):
    assert parse_write_statement(sql) == InsertStatement(
        parts=parts,
        columns=columns,
        static_partitions=partitions,
        by_name=by_name,
        overwrite=overwrite,
        query=query,
    )


@pytest.mark.parametrize(
    ("sql", "parts", "statement"),
    [
        (
            "with x as (select 1) insert into s.t select * from x",
            ("s", "t"),
            "INSERT after a leading WITH or FROM",
        ),
        ("from x insert into s.t select a", ("s", "t"), "FROM ... INSERT"),
    ],
)
def test_insert_forms_not_run_name_their_target(sql, parts, statement):
    assert parse_write_statement(sql) == RefusedStatement(parts, statement)


@pytest.mark.parametrize(
    "sql",
    [
        "select 1",
        "create table t (a int) using parquet",
        "insert into",
        "show tables",
        "with x as (select 1) select 2",
    ],
)
def test_statements_that_write_no_delta_table(sql):
    assert parse_write_statement(sql) is None


def test_a_null_static_partition_is_not_guessed():
    with pytest.raises(StatementParseError, match="NULL partition value"):
        parse_write_statement("insert into t partition (p = null) select 1")


def test_row_changing_statements_are_parsed_for_the_engine():
    assert isinstance(parse_write_statement("update s.t set a = 1 where b = 2"), UpdateStatement)
    assert isinstance(parse_write_statement("DELETE FROM t WHERE a = 1"), DeleteStatement)
    assert isinstance(parse_write_statement("truncate table s.t"), TruncateStatement)
    merge = parse_write_statement("merge into s.t using u on t.a = u.a when matched then delete")
    assert isinstance(merge, MergeStatement) and merge.parts == ("s", "t")
