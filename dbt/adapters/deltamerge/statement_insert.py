"""SQL statements that write to a Delta table bound in the catalog.

The catalog entry of a Delta table is a parquet table over one version's hard links, so
Spark's own ``INSERT`` would write files beside the Delta log that no Delta reader sees.
Statements dbt or a user runs (hooks, ``run-operation``, tests' setup SQL) are therefore
looked at before they reach Spark: an ``INSERT`` into a Delta-bound table becomes a Delta
append (or overwrite) through the engine, with Delta's insert semantics (columns by
position, by an explicit column list or ``BY NAME``; values cast as an ANSI store
assignment, failing on a value that does not convert). ``UPDATE``, ``DELETE``, ``MERGE``
and ``TRUNCATE`` of such a table are refused with an error that says what to do instead.
Any other statement goes to Spark unchanged.
"""

from __future__ import annotations

import re
from typing import Literal

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge import catalog
from dbt.adapters.deltamerge.delta.errors import DeltaError
from dbt.adapters.deltamerge.delta.snapshot import Snapshot, load_snapshot
from dbt.adapters.deltamerge.delta.write import WriteRequest, WriteResult, write_dataframe
from dbt.adapters.deltamerge.sql import quote_identifier
from dbt.adapters.deltamerge.statement_parse import (
    InsertStatement,
    RefusedStatement,
    StatementParseError,
    parse_write_statement,
)

_LEADING = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*([a-z]+)", re.IGNORECASE | re.DOTALL)
_WRITING = {"insert", "with", "update", "delete", "merge", "truncate", "from"}


class StatementError(DeltaError):
    """A SQL statement cannot be run on a Delta table."""


def may_write_table(sql: str) -> bool:
    """Whether ``sql`` can be a statement that writes a table (cheap text test, no Spark).

    >>> may_write_table("-- note\\n  INSERT INTO s.t VALUES (1)"), may_write_table("select 1")
    (True, False)
    >>> may_write_table("/* a */ with x as (select 1) insert into t select * from x")
    True
    """
    found = _LEADING.match(sql)
    return found is not None and found.group(1).lower() in _WRITING


def run_on_delta(spark: SparkSession, sql: str) -> tuple[str, WriteResult] | None:
    """Run ``sql`` through the engine if it writes a Delta-bound table.

    Returns:
        ``(table name, result)``, or None when ``sql`` is not such a statement (Spark runs it).

    Raises:
        StatementError: the statement cannot be run on a Delta table; nothing was written.
    """
    parsed = _parse(sql)
    if parsed is None:
        return None
    found = _bound_table(spark, parsed.parts)
    if found is None:
        return None
    schema, identifier, snapshot = found
    name = f"{schema}.{identifier}"
    if isinstance(parsed, RefusedStatement):
        raise StatementError(
            f"{parsed.statement} on {name} is not run: it is a Delta table written by dbt-deltamerge, "
            "and Spark without Delta would not change its Delta log. Express the change as a "
            "`delta_merge` model (when_matched delete/update clauses), or rebuild it with --full-refresh."
        )
    data = _insert_rows(spark, parsed, snapshot, name)
    result = write_dataframe(spark, data, _request(spark, parsed, snapshot))
    catalog.bind(spark, schema=schema, identifier=identifier, snapshot=result.snapshot)
    return name, result


def _parse(sql: str) -> InsertStatement | RefusedStatement | None:
    try:
        return parse_write_statement(sql)
    except StatementParseError as error:
        raise StatementError(f"{error}; the statement was not run: {sql.strip()}") from error


def _bound_table(spark: SparkSession, parts: tuple[str, ...]) -> tuple[str, str, Snapshot] | None:
    if not parts or len(parts) > 3:
        return None
    if len(parts) == 3 and parts[0].lower() != "spark_catalog":
        return None
    schema = parts[-2] if len(parts) > 1 else spark.catalog.currentDatabase()
    bound = catalog.binding(spark, schema, parts[-1])
    if bound is None:
        return None
    snapshot = load_snapshot(bound[0])
    if snapshot is None:
        raise StatementError(f"{schema}.{parts[-1]} is bound to {bound[0]}, which has no Delta table")
    return schema, parts[-1], snapshot


def _insert_rows(spark: SparkSession, insert: InsertStatement, snapshot: Snapshot, name: str) -> DataFrame:
    """The statement's rows as the table's columns, cast as Delta's INSERT casts them."""
    query = spark.sql(insert.query)
    fields = {f.name.lower(): f for f in snapshot.schema.fields}
    static = {k.lower(): v for k, v in insert.static_partitions if v is not None}
    unknown = [c for c in [*insert.columns, *static] if c.lower() not in fields]
    if unknown:
        raise StatementError(f"INSERT into {name}: {unknown} are not columns of the table")
    targets = _target_columns(insert, snapshot, static, query, name)
    # Positional names: a VALUES list or `select 1, 1` may repeat a name.
    positional = query.toDF(*[f"_value{i}" for i in range(len(query.columns))])
    columns = [F.col(c) for c in positional.columns]
    values = dict(zip([t.lower() for t in targets], columns, strict=True))
    values.update({k: F.lit(v) for k, v in static.items()})
    return positional.select(
        *[
            _store_assign(values[f.name.lower()], f, name)
            if f.name.lower() in values
            else F.lit(None).cast(f.dataType).alias(f.name)
            for f in snapshot.schema.fields
        ]
    )


def _target_columns(
    insert: InsertStatement, snapshot: Snapshot, static: dict[str, str], query: DataFrame, name: str
) -> list[str]:
    if insert.by_name:
        targets = [f.name for f in query.schema.fields]
        unknown = [t for t in targets if t.lower() not in {f.name.lower() for f in snapshot.schema.fields}]
        if unknown:
            raise StatementError(f"INSERT BY NAME into {name}: {unknown} are not columns of the table")
    elif insert.columns:
        targets = list(insert.columns)
    else:
        targets = [f.name for f in snapshot.schema.fields if f.name.lower() not in static]
    if len({t.lower() for t in targets}) != len(targets):
        raise StatementError(f"INSERT into {name}: a column is named twice in {targets}")
    if len(targets) != len(query.columns):
        raise StatementError(
            f"INSERT into {name}: {len(query.columns)} values for {len(targets)} columns {targets}"
        )
    return targets


def _store_assign(value: Column, field: T.StructField, name: str) -> Column:
    """``value`` cast to the column's type; a value that does not convert fails the statement."""
    cast = value.try_cast(field.dataType)
    message = F.lit(
        f"INSERT into {name}: a value of column `{field.name}` cannot be cast to "
        f"{field.dataType.simpleString()}; nothing was written"
    )
    return F.when(value.isNotNull() & cast.isNull(), F.raise_error(message)).otherwise(cast).alias(field.name)


def _request(spark: SparkSession, insert: InsertStatement, snapshot: Snapshot) -> WriteRequest:
    mode: Literal["append", "replace_partitions", "replace_where"] = "append"
    predicate = None
    if insert.overwrite:
        dynamic = spark.conf.get("spark.sql.sources.partitionOverwriteMode", "static") == "dynamic"
        static = [(k, v) for k, v in insert.static_partitions if v is not None]
        if dynamic and snapshot.partition_columns and not static:
            mode = "replace_partitions"
        else:
            mode = "replace_where"
            predicate = (
                " AND ".join(
                    f"{quote_identifier(k)} <=> '{v.replace(chr(39), chr(39) * 2)}'" for k, v in static
                )
                or "true"
            )
    return WriteRequest(table_path=snapshot.table_path, mode=mode, replace_where=predicate)
