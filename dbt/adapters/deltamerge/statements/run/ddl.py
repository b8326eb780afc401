"""``CREATE TABLE ... USING delta`` and ``ALTER TABLE ... ADD / RENAME / DROP COLUMN`` as Delta commits.

Renaming and dropping a column change only the schema (files keep their physical names), so
they need column mapping, as in Delta; without it they fail with Delta's error.

A created table lives at its ``LOCATION``, else where Spark places a managed table (the
schema's folder); ``AS query`` writes the query's rows, a column list alone an empty table,
``LIKE source`` an empty table with the source's definition.
Naming a folder that already holds a Delta table, without columns or query, registers it;
with them, it is an error unless the statement says OR REPLACE. A table created at the managed
location of a dropped one becomes that Delta table's next version (DROP TABLE removes only
the catalog entry; the log and its history stay).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from dbt.adapters.deltamerge import binding
from dbt.adapters.deltamerge.common.errors import EngineError
from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta import Snapshot, Stores, load_snapshot, place_table
from dbt.adapters.deltamerge.delta.data import WriteRequest, read_files, write_dataframe
from dbt.adapters.deltamerge.delta.log import (
    definition_actions,
    find_field,
    identity_columns,
    mapping_mode,
    schema_to_json,
    with_schema,
)
from dbt.adapters.deltamerge.delta.txn import (
    CommitActions,
    CommitInfo,
    CommitOptions,
    WriteResult,
    commit_files,
)
from dbt.adapters.deltamerge.statements.parse.ddl import ColumnDefinition, CreateTableStatement
from dbt.adapters.deltamerge.statements.run.alter import column_metadata, constraint_properties
from dbt.adapters.deltamerge.statements.run.dml import update_rows


class TableStatementError(EngineError):
    """A CREATE TABLE or ALTER TABLE cannot be run on a Delta table."""


@dataclass(frozen=True)
class _Definition:
    """What ``CREATE TABLE ... LIKE`` copies from its source table."""

    schema: T.StructType
    partition_by: tuple[str, ...]
    properties: dict[str, str]
    description: str | None


def create_table(
    spark: SparkSession,
    statement: CreateTableStatement,
    *,
    schema: str,
    identifier: str,
    schema_folder: Callable[[], str],
    stores: Stores,
) -> WriteResult | None:
    """Create (or replace) the Delta table ``schema.identifier``; nothing is committed for IF NOT
    EXISTS. ``schema_folder``: the schema's folder, asked when the table is placed there;
    ``stores``: the invocation's, which reach the table.

    Returns:
        What was committed, or None for a ``LIKE`` of a non-Delta table without ``USING delta``
        (Spark's own CREATE TABLE LIKE keeps the source's format).
    """
    name = f"{schema}.{identifier}"
    like = _like(spark, statement.like, name, stores) if statement.like else None
    if statement.like and like is None and not statement.using_delta:
        return None
    bound = binding.binding(spark, schema, identifier, stores)
    if bound is not None and not statement.replace:
        existing = load_snapshot(bound.location)
        if statement.if_not_exists and existing is not None:
            return WriteResult(None, "CREATE TABLE", {}, existing)
        raise TableStatementError(f"CREATE TABLE {name}: the table already exists (use CREATE OR REPLACE)")
    location = place_table(
        identifier,
        explicit=statement.location,
        bound=bound.table_path if bound else None,
        schema_folder=schema_folder,
        stores=stores,
    )
    current = load_snapshot(location)
    if current is not None and not (
        statement.replace or statement.query or statement.columns or statement.like
    ):
        # Registering an existing table: its link folders go under the warehouse, not into it.
        binding.bind(spark, schema=schema, identifier=identifier, snapshot=current, registering=True)
        return WriteResult(None, "CREATE TABLE", {}, current)
    # A managed location keeps a dropped table's Delta folder (the catalog entry is all DROP
    # TABLE removes): a new table there is its next version, history kept for time travel.
    if current is not None and not statement.replace and statement.location:
        raise TableStatementError(
            f"CREATE TABLE {name}: {location} already holds a Delta table; use CREATE OR REPLACE TABLE "
            "to write a new version of it, or name the location alone to register it"
        )
    if statement.like:
        like = like or _spark_definition(spark, statement.like)
        rows = spark.createDataFrame([], like.schema)
        request = WriteRequest(
            location=location,
            mode="create_or_replace",
            partition_by=like.partition_by,
            properties={**like.properties, **dict(statement.properties)},
            description=like.description,
        )
        return write_dataframe(spark, rows, request)
    rows = _rows(spark, statement, name)
    definition = rows.schema if statement.columns else None
    if definition is not None and statement.query is None:
        # No rows to write: the identity columns are the definition's alone (an empty frame that
        # named a GENERATED ALWAYS one would be refused as giving it values).
        identities = {i.column for i in identity_columns(definition)}
        rows = rows.select(*[quote_identifier(c) for c in rows.columns if c not in identities])
    request = WriteRequest(
        location=location,
        mode="create_or_replace",
        partition_by=statement.partition_by,
        properties={**dict(statement.properties), **constraint_properties(statement.checks)},
        description=statement.comment,
        definition=definition,
        cluster_by=statement.cluster_by,
    )
    return write_dataframe(spark, rows, request)


def _like(spark: SparkSession, parts: tuple[str, ...], name: str, stores: Stores) -> _Definition | None:
    """A Delta source's definition as Delta's CREATE TABLE LIKE copies it, or None if not Delta.

    Schema with column comments, partition columns, table properties and description; not
    its rows or history.
    """
    source = ".".join(parts)
    schema = parts[-2] if len(parts) > 1 else spark.catalog.currentDatabase()
    bound = binding.binding(spark, schema, parts[-1], stores)
    if bound is None:
        return None
    snapshot = load_snapshot(bound.location)
    if snapshot is None:
        raise TableStatementError(f"CREATE TABLE {name} LIKE {source}: {bound.location} has no Delta table")
    return _Definition(
        schema=_commented(snapshot.schema),
        partition_by=tuple(snapshot.metadata.partition_columns),
        properties=dict(snapshot.metadata.configuration),
        description=snapshot.metadata.description,
    )


def _spark_definition(spark: SparkSession, parts: tuple[str, ...]) -> _Definition:
    """A catalog table's or view's columns and partition columns, for ``LIKE`` it ``USING delta``."""
    source = ".".join(quote_identifier(p) for p in parts)
    partitions = tuple(c.name for c in spark.catalog.listColumns(".".join(parts)) if c.isPartition)
    return _Definition(_commented(spark.table(source).schema), partitions, {}, None)


def _commented(schema: T.StructType) -> T.StructType:
    """``schema``'s top-level fields, nullable, keeping only their comments of all metadata."""
    return T.StructType(
        [
            T.StructField(
                f.name,
                f.dataType,
                True,
                {"comment": f.metadata["comment"]} if "comment" in f.metadata else {},
            )
            for f in schema.fields
        ]
    )


def _rows(spark: SparkSession, statement: CreateTableStatement, name: str) -> DataFrame:
    if statement.query is not None and statement.columns:
        raise TableStatementError(
            f"CREATE TABLE {name}: give a column list or AS query, not both (Spark's rule for CTAS)"
        )
    if statement.query is not None:
        return spark.sql(statement.query)
    if not statement.columns:
        raise TableStatementError(f"CREATE TABLE {name}: a new Delta table needs columns or AS query")
    fields = _fields(spark, statement.columns)
    return spark.createDataFrame([], T.StructType(fields))


def _fields(spark: SparkSession, columns: Sequence[ColumnDefinition]) -> list[T.StructField]:
    """The columns as Spark fields (types parsed by Spark): comments, generation expressions,
    defaults and identity in their metadata, NOT NULL as nullability.

    ``CHAR(n)`` / ``VARCHAR(n)`` become ``string``, as Spark reads them (no length check).
    """
    casts = [f"cast(null as {c.type_sql}) as {quote_identifier(c.name)}" for c in columns]
    parsed = spark.range(0).selectExpr(*casts).schema.fields
    return [
        T.StructField(f.name, f.dataType, not c.not_null, column_metadata(c, f.dataType))
        for f, c in zip(parsed, columns, strict=True)
    ]


def add_columns(
    spark: SparkSession, snapshot: Snapshot, columns: Sequence[ColumnDefinition], name: str
) -> WriteResult:
    """``ALTER TABLE ... ADD COLUMNS``: a new version whose schema ends with ``columns`` (no data files)."""
    clashing = [c.name for c in columns if find_field(snapshot.schema, c.name) is not None]
    if clashing:
        raise TableStatementError(
            f"ALTER TABLE {name} ADD COLUMNS: {clashing} are already columns of the table"
        )
    added = _fields(spark, columns)
    required = [f.name for f in added if not f.nullable]
    rows = read_files(spark, snapshot, list(snapshot.files)).count() if required and snapshot.files else 0
    if rows:
        raise TableStatementError(
            f"ALTER TABLE {name} ADD COLUMNS: [DELTA_NEW_NOT_NULL_VIOLATION] {rows} rows in {name} violate "
            f"the new NOT NULL constraint on {required[0]} (add the column nullable, fill it, then "
            "ALTER COLUMN ... SET NOT NULL). Nothing was committed."
        )
    changed = with_schema(snapshot, T.StructType([*snapshot.schema.fields, *added]))
    leading = definition_actions(snapshot, changed)
    info = CommitInfo("ADD COLUMNS", {"columns": [{"column": f.jsonValue()} for f in added]}, {})
    result = commit_files(snapshot, CommitActions(leading=leading), CommitOptions(info))
    defaults = [(c.name, c.default) for c in columns if c.default is not None]
    if not defaults or not snapshot.files:
        return result
    # Existing rows take the new column's default (SQL's rule; Delta has no "exists default"):
    # the UPDATE that writes it is the next version.
    return update_rows(spark, result.snapshot, defaults, None)


def _check_mapped(snapshot: Snapshot, name: str, what: str, error: str) -> None:
    if mapping_mode(snapshot.metadata.configuration) == "none":
        raise TableStatementError(
            f"ALTER TABLE {name}: {error}: {what} is not supported for your Delta table. Enable column "
            "mapping: ALTER TABLE ... SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name') in Delta, or "
            "tblproperties={'delta.columnMapping.mode': 'name'} on the model. Nothing was committed."
        )


def rename_column(snapshot: Snapshot, old: str, new: str, name: str) -> WriteResult:
    """``ALTER TABLE ... RENAME COLUMN``: the column keeps its id and physical name (its data)."""
    _check_mapped(snapshot, name, "Column rename", "DELTA_UNSUPPORTED_RENAME_COLUMN")
    field = find_field(snapshot.schema, old)
    if field is None:
        raise TableStatementError(f"ALTER TABLE {name} RENAME COLUMN: `{old}` is not a column of the table")
    if find_field(snapshot.schema, new) is not None and new.lower() != old.lower():
        raise TableStatementError(
            f"ALTER TABLE {name} RENAME COLUMN: `{new}` is already a column of the table"
        )
    fields = [
        T.StructField(new, f.dataType, f.nullable, f.metadata) if f.name == field.name else f
        for f in snapshot.schema.fields
    ]
    partitions = tuple(new if c == field.name else c for c in snapshot.partition_columns)
    params: dict[str, object] = {"oldColumnPath": field.name, "newColumnPath": new}
    return _commit_schema(snapshot, T.StructType(fields), partitions, "RENAME COLUMN", params)


def drop_columns(
    snapshot: Snapshot, columns: Sequence[str], if_exists: bool, name: str
) -> WriteResult | None:
    """``ALTER TABLE ... DROP COLUMN[S]``: the schema forgets them; their data stays in old files
    (unread), and their physical names are never given again."""
    _check_mapped(snapshot, name, "DROP COLUMN", "DELTA_UNSUPPORTED_DROP_COLUMN")
    found = [find_field(snapshot.schema, c) for c in columns]
    missing = [c for c, f in zip(columns, found, strict=True) if f is None]
    if missing and not if_exists:
        raise TableStatementError(f"ALTER TABLE {name} DROP COLUMNS: {missing} are not columns of the table")
    dropped = {f.name for f in found if f is not None}
    partitions = [c for c in snapshot.partition_columns if c in dropped]
    if partitions:
        raise TableStatementError(
            f"ALTER TABLE {name}: Dropping partition columns ({', '.join(partitions)}) is not allowed."
        )
    kept = [f for f in snapshot.schema.fields if f.name not in dropped]
    if not dropped:
        return None
    if len(kept) == len(snapshot.partition_columns):
        raise TableStatementError(f"ALTER TABLE {name} DROP COLUMNS: a Delta table needs one data column")
    params: dict[str, object] = {"columns": sorted(dropped)}
    return _commit_schema(snapshot, T.StructType(kept), snapshot.partition_columns, "DROP COLUMNS", params)


def _commit_schema(
    snapshot: Snapshot,
    schema: T.StructType,
    partitions: Sequence[str],
    operation: str,
    params: dict[str, object],
) -> WriteResult:
    metadata = replace(
        snapshot.metadata, schema_string=schema_to_json(schema), partition_columns=tuple(partitions)
    )
    info = CommitInfo(operation, params, {})
    leading = [metadata.to_action()]
    return commit_files(snapshot, CommitActions(leading=leading), CommitOptions(info))
