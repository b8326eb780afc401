"""Parsing table-writing SQL statements with sqlglot: pure, no JVM."""

from __future__ import annotations

import logging

import pytest

from dbt.adapters.deltamerge.statements.parse.dml import (
    DeleteStatement,
    MergeStatement,
    TruncateStatement,
    UpdateStatement,
)
from dbt.adapters.deltamerge.statements.parse.statement import (
    InsertStatement,
    RefusedStatement,
    StatementParseError,
    parse_write_statement,
)
from dbt.adapters.deltamerge.statements.parse.text import SqlText


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
    assert parse_write_statement(SqlText(sql)) == InsertStatement(
        parts=parts,
        columns=columns,
        static_partitions=partitions,
        by_name=by_name,
        overwrite=overwrite,
        query=query,
    )


@pytest.mark.parametrize(
    ("sql", "parts", "overwrite", "query"),
    [
        (
            "with x as (select 1 a) insert into s.t select * from x",
            ("s", "t"),
            False,
            "with x as (select 1 a) select * from x",
        ),
        (
            "-- lead\nWITH x AS (SELECT 1 a), y AS (SELECT (2) b)\n"
            "INSERT OVERWRITE TABLE t (SELECT * FROM x, y);",
            ("t",),
            True,
            "WITH x AS (SELECT 1 a), y AS (SELECT (2) b) (SELECT * FROM x, y)",
        ),
        ("from x insert into s.t select a where a > 1", ("s", "t"), False, "from x select a where a > 1"),
    ],
)
def test_what_precedes_the_insert_joins_its_query(sql, parts, overwrite, query):
    insert = parse_write_statement(SqlText(sql))
    assert isinstance(insert, InsertStatement)
    assert (insert.parts, insert.overwrite, insert.query) == (parts, overwrite, query)


def test_a_with_before_the_insert_and_in_its_query_is_one_with_too_many():
    with pytest.raises(StatementParseError, match="WITH both before the INSERT and in its query"):
        parse_write_statement(
            SqlText("with x as (select 1) insert into t with y as (select 2) select * from x, y")
        )


def test_an_insert_into_several_tables_names_the_first():
    assert parse_write_statement(
        SqlText("from x insert into s.t select a insert into s.u select b")
    ) == RefusedStatement(
        ("s", "t"), "FROM ... INSERT into several tables (one Delta commit writes one table)"
    )


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
    assert parse_write_statement(SqlText(sql)) is None


def test_a_null_static_partition_is_not_guessed():
    with pytest.raises(StatementParseError, match="NULL partition value"):
        parse_write_statement(SqlText("insert into t partition (p = null) select 1"))


def test_row_changing_statements_are_parsed_for_the_engine():
    assert isinstance(parse_write_statement(SqlText("update s.t set a = 1 where b = 2")), UpdateStatement)
    assert isinstance(parse_write_statement(SqlText("DELETE FROM t WHERE a = 1")), DeleteStatement)
    assert isinstance(parse_write_statement(SqlText("truncate table s.t")), TruncateStatement)
    merge = parse_write_statement(SqlText("merge into s.t using u on t.a = u.a when matched then delete"))
    assert isinstance(merge, MergeStatement) and merge.parts == ("s", "t")


def test_statements_sqlglot_has_no_grammar_for_log_no_warning(caplog):
    """sqlglot warns that it falls back to a Command for OPTIMIZE; that line must not reach dbt's log."""
    with caplog.at_level(logging.WARNING, logger="sqlglot"):
        statement = parse_write_statement(SqlText("OPTIMIZE s.t ZORDER BY (a)"))
    assert statement is not None and statement.zorder_by == ("a",)
    assert [r.getMessage() for r in caplog.records if r.name == "sqlglot"] == []
    assert logging.getLogger("sqlglot").level == logging.NOTSET  # its other warnings still logged
