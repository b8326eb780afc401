"""CREATE TABLE and ALTER TABLE ... ADD COLUMNS parsed for the engine (pure)."""

from __future__ import annotations

import pytest

from dbt.adapters.deltamerge.statements.parse_ddl import (
    AddColumnsStatement,
    ColumnDefinition,
    CreateTableStatement,
    parse_ddl,
)
from dbt.adapters.deltamerge.statements.parse_dml import StatementParseError


def test_create_table_forms():
    parsed = parse_ddl(
        "create or replace table s.t (a int, b string comment 'the b') using delta partitioned by (b) "
        "comment 'tab' tblproperties ('delta.enableChangeDataFeed' = 'true')"
    )
    assert parsed == CreateTableStatement(
        parts=("s", "t"),
        replace=True,
        if_not_exists=False,
        columns=(ColumnDefinition("a", "INT"), ColumnDefinition("b", "STRING", "the b")),
        partition_by=("b",),
        properties=(("delta.enableChangeDataFeed", "true"),),
        comment="tab",
        location=None,
        query=None,
        using_delta=True,
    )
    ctas = parse_ddl("create table if not exists t location '/x' as (select 1 as a)")
    assert isinstance(ctas, CreateTableStatement)
    assert (ctas.if_not_exists, ctas.location, ctas.query) == (True, "/x", "(select 1 as a)")


def test_create_table_like():
    parsed = parse_ddl("create table if not exists s.t like s.src tblproperties ('k' = 'v') location '/x'")
    assert isinstance(parsed, CreateTableStatement)
    assert (parsed.like, parsed.properties, parsed.location, parsed.using_delta) == (
        ("s", "src"),
        (("k", "v"),),
        "/x",
        False,
    )
    assert parse_ddl("create table t like src using delta").using_delta  # type: ignore[union-attr]
    assert parse_ddl("create table t like src using parquet") is None


def test_create_table_like_takes_no_definition_of_its_own():
    with pytest.raises(
        StatementParseError, match="LIKE takes its columns, partitioning and comment from the source"
    ):
        parse_ddl("create table t like src comment 'mine'")


def test_create_table_with_another_format_is_spark_s():
    for sql in (
        "create table t using parquet as select 1",
        "create table t stored as parquet as select 1",
        "create table t (a int) row format delimited fields terminated by ','",
        "create view v as select 1",
        "create temporary view v as select 1",
    ):
        assert parse_ddl(sql) is None, sql


def test_add_columns():
    parsed = parse_ddl("alter table s.t add columns (c int comment 'x', `d e` varchar(20) default null)")
    assert parsed == AddColumnsStatement(
        ("s", "t"), (ColumnDefinition("c", "INT", "x"), ColumnDefinition("d e", "VARCHAR(20)"))
    )
    assert parse_ddl("alter table s.t rename to u") is None


def test_a_column_default_is_refused_naming_it():
    with pytest.raises(StatementParseError, match="DEFAULT 1"):
        parse_ddl("alter table t add column c int default 1")
