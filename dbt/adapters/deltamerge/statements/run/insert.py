"""``INSERT`` into a Delta table as a Delta append or overwrite, with Delta's insert semantics.

Columns by position, by an explicit column list or ``BY NAME``; static partitions; values
cast as an ANSI store assignment, failing on a value that does not convert.
"""

from __future__ import annotations

from typing import Literal

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from dbt.adapters.deltamerge.common.errors import EngineError
from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta import Snapshot
from dbt.adapters.deltamerge.delta.data import WriteRequest, computed_columns, store_assigned, write_dataframe
from dbt.adapters.deltamerge.delta.txn import WriteResult
from dbt.adapters.deltamerge.statements.parse.statement import InsertStatement


class InsertError(EngineError):
    """An INSERT cannot be written to the Delta table."""


def insert_into(spark: SparkSession, insert: InsertStatement, snapshot: Snapshot, name: str) -> WriteResult:
    """Run ``insert`` on the Delta table ``name`` (at ``snapshot``) as one new version."""
    data = _insert_rows(spark, insert, snapshot, name)
    return write_dataframe(spark, data, _request(spark, insert, snapshot))


def _insert_rows(spark: SparkSession, insert: InsertStatement, snapshot: Snapshot, name: str) -> DataFrame:
    """The statement's rows as the table's columns, cast as Delta's INSERT casts them."""
    query = spark.sql(insert.query)
    fields = {f.name.lower(): f for f in snapshot.schema.fields}
    static = {k.lower(): v for k, v in insert.static_partitions if v is not None}
    unknown = [c for c in [*insert.columns, *static] if c.lower() not in fields]
    if unknown:
        raise InsertError(f"INSERT into {name}: {unknown} are not columns of the table")
    targets = _target_columns(insert, snapshot, static, query, name)
    # Positional names: a VALUES list or `select 1, 1` may repeat a name.
    positional = query.toDF(*[f"_value{i}" for i in range(len(query.columns))])
    columns = [F.col(c) for c in positional.columns]
    values = dict(zip([t.lower() for t in targets], columns, strict=True))
    values.update({k: F.lit(v) for k, v in static.items()})
    # Columns left out get their defaults, identity values or generated values (``align``).
    return positional.select(
        *[
            store_assigned(values[f.name.lower()], f, f"INSERT into {name}")
            for f in snapshot.schema.fields
            if f.name.lower() in values
        ]
    )


def _target_columns(
    insert: InsertStatement, snapshot: Snapshot, static: dict[str, str], query: DataFrame, name: str
) -> list[str]:
    if insert.by_name:
        targets = [f.name for f in query.schema.fields]
        unknown = [t for t in targets if t.lower() not in {f.name.lower() for f in snapshot.schema.fields}]
        if unknown:
            raise InsertError(f"INSERT BY NAME into {name}: {unknown} are not columns of the table")
    elif insert.columns:
        targets = list(insert.columns)
    else:
        targets = [f.name for f in snapshot.schema.fields if f.name.lower() not in static]
        given = [t for t in targets if t.lower() not in computed_columns(snapshot.schema)]
        if len(query.columns) == len(given) < len(targets):
            targets = given  # VALUES for every column but the generated, identity and default ones
    if len({t.lower() for t in targets}) != len(targets):
        raise InsertError(f"INSERT into {name}: a column is named twice in {targets}")
    if len(targets) != len(query.columns):
        raise InsertError(
            f"INSERT into {name}: {len(query.columns)} values for {len(targets)} columns {targets}"
        )
    return targets


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
    return WriteRequest(location=snapshot.location, mode=mode, replace_where=predicate)
