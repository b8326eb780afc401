"""SQL statements on Delta tables, run by the engine as Delta commits.

The catalog entry of a Delta table is a parquet table over one version's hard links, so
Spark's own ``INSERT``, ``UPDATE``, ``MERGE`` ... would write files beside the Delta log
that no Delta reader sees (or fail). Statements dbt or a user runs (materializations,
snapshots, hooks, ``run-operation``, ``run_query``) are therefore looked at before they
reach Spark: ``INSERT``, ``UPDATE``, ``DELETE``, ``MERGE INTO``, ``TRUNCATE TABLE`` and
``ALTER TABLE ... ADD COLUMNS`` of a Delta-bound table, and ``CREATE TABLE ... USING delta``,
each become one Delta commit with Delta's operation name and metrics. A write form the
engine does not run fails quoting the statement, before anything is written. Any other
statement goes to Spark unchanged.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pyspark.sql import SparkSession

from dbt.adapters.deltamerge import binding
from dbt.adapters.deltamerge.delta import (
    DeltaError,
    Snapshot,
    WriteResult,
    after_commit,
    auto_compact,
    load_snapshot,
    recluster,
    rows_affected,
    table_path_of,
)
from dbt.adapters.deltamerge.merge.pipeline import merge_into
from dbt.adapters.deltamerge.merge.resolve import evolved_by_merge
from dbt.adapters.deltamerge.merge.spec import MergeSpec
from dbt.adapters.deltamerge.statements import dml
from dbt.adapters.deltamerge.statements.column_ddl import add_constraint, alter_column, drop_constraint
from dbt.adapters.deltamerge.statements.ddl import add_columns, create_table, drop_columns, rename_column
from dbt.adapters.deltamerge.statements.insert import insert_into
from dbt.adapters.deltamerge.statements.maintenance import optimize_table, reorg_purge, set_properties
from dbt.adapters.deltamerge.statements.parse import (
    RefusedStatement,
    StatementParseError,
    parse_write_statement,
)
from dbt.adapters.deltamerge.statements.parse_alter import (
    AddConstraintStatement,
    AlterColumnStatement,
    DropConstraintStatement,
)
from dbt.adapters.deltamerge.statements.parse_ddl import (
    AddColumnsStatement,
    CreateTableStatement,
    DropColumnsStatement,
    RenameColumnStatement,
)
from dbt.adapters.deltamerge.statements.parse_dml import (
    DeleteStatement,
    MergeStatement,
    TruncateStatement,
    UpdateStatement,
)
from dbt.adapters.deltamerge.statements.parse_maintenance import (
    ClusterByStatement,
    OptimizeStatement,
    ReorgStatement,
    SetPropertiesStatement,
)


class StatementError(DeltaError):
    """A SQL statement cannot be run on a Delta table."""


@dataclass(frozen=True)
class StatementResult:
    """A statement the engine ran: the table, Delta's result, and the rows it affected."""

    table: str
    result: WriteResult
    affected: dict[str, int | str]


def run_on_delta(spark: SparkSession, sql: str) -> StatementResult | None:
    """Run ``sql`` through the engine if it writes a Delta table.

    Returns:
        What ran, or None when ``sql`` is not such a statement (Spark runs it).

    Raises:
        StatementError: the statement cannot be run on a Delta table; nothing was written.
    """
    parsed = _parse(sql)
    if parsed is None or not parsed.parts:
        return None
    schema, identifier = _schema_of(spark, parsed.parts), parsed.parts[-1]
    if schema is None:
        return None
    name = f"{schema}.{identifier}"
    if isinstance(parsed, CreateTableStatement):
        result = create_table(spark, parsed, schema=schema, identifier=identifier)
        return None if result is None else _done(spark, schema, identifier, result)
    snapshot = _bound_snapshot(spark, schema, identifier)
    if snapshot is None:
        return None
    if isinstance(parsed, RefusedStatement):
        raise StatementError(
            f"{parsed.statement} on {name} is not run: write one INSERT INTO ... or INSERT "
            f"OVERWRITE ... per table. The statement was not run: {sql.strip()}"
        )
    if isinstance(parsed, DeleteStatement):
        result = dml.delete_rows(spark, snapshot, parsed.condition, alias=parsed.alias)
    elif isinstance(parsed, UpdateStatement):
        result = dml.update_rows(spark, snapshot, parsed.assignments, parsed.condition, alias=parsed.alias)
    elif isinstance(parsed, TruncateStatement):
        result = dml.truncate(spark, snapshot)
    elif isinstance(parsed, MergeStatement):
        result = _merge(spark, parsed, snapshot, name)
    elif isinstance(parsed, AddColumnsStatement):
        result = add_columns(spark, snapshot, parsed.columns, name)
    elif isinstance(parsed, RenameColumnStatement):
        result = rename_column(snapshot, parsed.old, parsed.new, name)
    elif isinstance(parsed, (DropColumnsStatement, DropConstraintStatement, AlterColumnStatement)):
        # Nothing to change (IF EXISTS of a missing one, a column already so): no new version.
        changed = _definition_change(spark, parsed, snapshot, name)
        result = changed if changed is not None else WriteResult(None, "ALTER TABLE", {}, snapshot)
    elif isinstance(parsed, AddConstraintStatement):
        result = add_constraint(spark, snapshot, parsed.name, parsed.expression, name)
    elif isinstance(parsed, SetPropertiesStatement):
        result = set_properties(spark, snapshot, parsed, name)
    elif isinstance(parsed, ReorgStatement):
        result = reorg_purge(spark, snapshot, parsed)
    elif isinstance(parsed, OptimizeStatement):
        result = optimize_table(spark, snapshot, parsed)
    elif isinstance(parsed, ClusterByStatement):
        result = recluster(snapshot, parsed.columns, name)
    else:
        result = insert_into(spark, parsed, snapshot, name)
    return _done(spark, schema, identifier, result)


def _definition_change(
    spark: SparkSession,
    parsed: DropColumnsStatement | DropConstraintStatement | AlterColumnStatement,
    snapshot: Snapshot,
    name: str,
) -> WriteResult | None:
    """A DROP COLUMNS, DROP CONSTRAINT or ALTER COLUMN; None when it changes nothing."""
    if isinstance(parsed, DropColumnsStatement):
        return drop_columns(snapshot, parsed.columns, parsed.if_exists, name)
    if isinstance(parsed, DropConstraintStatement):
        return drop_constraint(spark, snapshot, parsed.name, parsed.if_exists, name)
    return alter_column(
        spark, snapshot, parsed.column, name, not_null=parsed.not_null, default=parsed.default
    )


def _parse(sql: str):  # type: ignore[no-untyped-def]
    try:
        return parse_write_statement(sql)
    except StatementParseError as error:
        raise StatementError(f"{error}; the statement was not run: {sql.strip()}") from error


def _schema_of(spark: SparkSession, parts: tuple[str, ...]) -> str | None:
    if len(parts) > 3 or (len(parts) == 3 and parts[0].lower() != "spark_catalog"):
        return None
    return parts[-2] if len(parts) > 1 else spark.catalog.currentDatabase()


def _bound_snapshot(spark: SparkSession, schema: str, identifier: str) -> Snapshot | None:
    bound = binding.binding(spark, schema, identifier)
    path = bound.table_path if bound is not None else interrupted_table(spark, schema, identifier)
    if path is None:
        return None
    # The statement's query (a snapshot's staging view, say) may read the table: it must see
    # versions committed since the binding (a run killed after its commit, another writer).
    version = bound.version if bound is not None else None
    binding.refresh(spark, schema=schema, identifier=identifier, table_path=path, version=version)
    snapshot = load_snapshot(path)
    if snapshot is None:
        raise StatementError(f"{schema}.{identifier} is bound to {path}, which has no Delta table")
    return snapshot


def interrupted_table(spark: SparkSession, schema: str, identifier: str) -> str | None:
    """The Delta table at the managed location of a name whose catalog entry a killed run was
    replacing (a table the user dropped stays dropped): statements and snapshots bind it again."""
    if spark.catalog.tableExists(binding.table_name(schema, identifier)):
        return None  # a table of another kind (a view, a parquet table): Spark's
    if not spark.catalog.databaseExists(schema):
        return None
    path = os.path.join(table_path_of(spark.catalog.getDatabase(schema).locationUri), identifier.lower())
    return path if binding.interrupted_binding(path, schema, identifier) else None


def _merge(spark: SparkSession, statement: MergeStatement, snapshot: Snapshot, name: str) -> WriteResult:
    spec = MergeSpec.from_config(f"MERGE INTO {name}", statement.config)
    source = spark.sql(statement.source_query)
    schema = (
        evolved_by_merge(spec, snapshot, source.schema, what=f"MERGE INTO {name}")
        if spec.schema_evolution
        else None
    )
    return merge_into(spark, source, snapshot, spec, schema=schema)


def _done(spark: SparkSession, schema: str, identifier: str, result: WriteResult) -> StatementResult:
    if result.version is not None:
        with after_commit("the table's auto compaction"):
            compacted = auto_compact(spark, result)  # the table's auto compaction, if it asks for it
        latest = (
            compacted.snapshot if compacted is not None and compacted.version is not None else result.snapshot
        )
        with after_commit(f"binding the new version as {schema}.{identifier} in the catalog"):
            binding.bind(spark, schema=schema, identifier=identifier, snapshot=latest)
    if result.operation in ("OPTIMIZE", "REORG"):
        # Delta's result of both: the table's path and the operation's metrics.
        row: dict[str, int | str] = {"path": result.snapshot.table_path, **result.metrics}
        return StatementResult(f"{schema}.{identifier}", result, row)
    return StatementResult(
        f"{schema}.{identifier}", result, dict(rows_affected(result.operation, result.metrics))
    )
