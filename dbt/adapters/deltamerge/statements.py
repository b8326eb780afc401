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
from dataclasses import dataclass
from typing import Any, Literal

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge import catalog
from dbt.adapters.deltamerge.delta.errors import DeltaError
from dbt.adapters.deltamerge.delta.snapshot import Snapshot, load_snapshot
from dbt.adapters.deltamerge.delta.write import WriteRequest, WriteResult, write_dataframe
from dbt.adapters.deltamerge.sql import quote_identifier

_LEADING = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*([a-z]+)", re.IGNORECASE | re.DOTALL)
_WRITING = {"insert", "with", "update", "delete", "merge", "truncate", "from"}
_REFUSED = {"DeleteFromTable": "DELETE", "UpdateTable": "UPDATE", "MergeIntoTable": "MERGE"}


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


@dataclass(frozen=True)
class _Insert:
    parts: tuple[str, ...]
    columns: tuple[str, ...]
    static_partitions: tuple[tuple[str, str | None], ...]
    by_name: bool
    overwrite: bool
    query: Any


@dataclass(frozen=True)
class _Refused:
    parts: tuple[str, ...]
    statement: str


def run_on_delta(spark: SparkSession, sql: str) -> tuple[str, WriteResult] | None:
    """Run ``sql`` through the engine if it writes a Delta-bound table.

    Returns:
        ``(table name, result)``, or None when ``sql`` is not such a statement (Spark runs it).

    Raises:
        StatementError: the statement cannot be run on a Delta table; nothing was written.
    """
    parsed = _parse(spark, sql)
    if parsed is None:
        return None
    found = _bound_table(spark, parsed.parts)
    if found is None:
        return None
    schema, identifier, snapshot = found
    name = f"{schema}.{identifier}"
    if isinstance(parsed, _Refused):
        raise StatementError(
            f"{parsed.statement} on {name} is not run: it is a Delta table written by dbt-deltamerge, "
            "and Spark without Delta would not change its Delta log. Express the change as a "
            "`delta_merge` model (when_matched delete/update clauses), or rebuild it with --full-refresh."
        )
    data = _insert_rows(spark, parsed, snapshot, name)
    result = write_dataframe(spark, data, _request(spark, parsed, snapshot))
    catalog.bind(spark, schema=schema, identifier=identifier, snapshot=result.snapshot)
    return name, result


def _parse(spark: SparkSession, sql: str) -> _Insert | _Refused | None:
    jss = spark._jsparkSession
    try:
        plan = jss.sessionState().sqlParser().parsePlan(sql)
    except Exception:  # Spark reports the syntax error itself when it runs the statement.
        return None
    kind = plan.getClass().getSimpleName()
    if kind == "UnresolvedWith" and plan.child().getClass().getSimpleName() == "InsertIntoStatement":
        return _Refused(_name_parts(plan.child().table()), "INSERT after a leading WITH")
    if kind in _REFUSED:
        return _Refused(_name_parts(plan.table()), _REFUSED[kind])
    if kind == "TruncateTable":
        return _Refused(_name_parts(plan.table()), "TRUNCATE TABLE")
    if kind != "InsertIntoStatement":
        return None
    spec = plan.partitionSpec()
    static = tuple(
        (str(key), None if spec.apply(key).isEmpty() else str(spec.apply(key).get()))
        for key in _scala_list(spec.keys().toSeq())
    )
    return _Insert(
        parts=_name_parts(plan.table()),
        columns=tuple(str(c) for c in _scala_list(plan.userSpecifiedCols())),
        static_partitions=static,
        by_name=bool(plan.byName()),
        overwrite=bool(plan.overwrite()),
        query=plan.query(),
    )


def _scala_list(seq: Any) -> list[Any]:
    return [seq.apply(i) for i in range(seq.size())]


def _name_parts(relation: Any) -> tuple[str, ...]:
    if relation.getClass().getSimpleName() not in ("UnresolvedRelation", "UnresolvedTable"):
        return ()
    return tuple(str(p) for p in _scala_list(relation.multipartIdentifier()))


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


def _insert_rows(spark: SparkSession, insert: _Insert, snapshot: Snapshot, name: str) -> DataFrame:
    """The statement's rows as the table's columns, cast as Delta's INSERT casts them."""
    jdf = spark._jvm.org.apache.spark.sql.classic.Dataset.ofRows(  # type: ignore[union-attr]
        spark._jsparkSession,
        insert.query,
    )
    query = DataFrame(jdf, spark)
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
    insert: _Insert, snapshot: Snapshot, static: dict[str, str], query: DataFrame, name: str
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


def _request(spark: SparkSession, insert: _Insert, snapshot: Snapshot) -> WriteRequest:
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
