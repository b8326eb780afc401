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

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from pyspark.sql import SparkSession

from dbt.adapters.deltamerge import binding
from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.common.errors import EngineError
from dbt.adapters.deltamerge.delta import (
    Snapshot,
    Stores,
    TableLocation,
    after_commit,
    load_snapshot,
    place_table,
)
from dbt.adapters.deltamerge.delta.commands import auto_compact, recluster
from dbt.adapters.deltamerge.delta.log import TableChange
from dbt.adapters.deltamerge.delta.txn import WriteResult, rows_affected
from dbt.adapters.deltamerge.merge import MergeSpec, evolved_by_merge, merge_into
from dbt.adapters.deltamerge.statements.parse.alter import (
    AddConstraintStatement,
    AlterColumnStatement,
    DropConstraintStatement,
)
from dbt.adapters.deltamerge.statements.parse.ddl import (
    AddColumnsStatement,
    CreateTableStatement,
    DropColumnsStatement,
    RenameColumnStatement,
)
from dbt.adapters.deltamerge.statements.parse.dml import (
    DeleteStatement,
    MergeStatement,
    TruncateStatement,
    UpdateStatement,
)
from dbt.adapters.deltamerge.statements.parse.maintenance import (
    ClusterByStatement,
    OptimizeStatement,
    ReorgStatement,
    SetPropertiesStatement,
)
from dbt.adapters.deltamerge.statements.parse.statement import (
    InsertStatement,
    RefusedStatement,
    SqlText,
    Statement,
    StatementParseError,
    parse_write_statement,
)
from dbt.adapters.deltamerge.statements.run import dml
from dbt.adapters.deltamerge.statements.run.alter import add_constraint, alter_column, drop_constraint
from dbt.adapters.deltamerge.statements.run.ddl import add_columns, create_table, drop_columns, rename_column
from dbt.adapters.deltamerge.statements.run.insert import insert_into
from dbt.adapters.deltamerge.statements.run.maintenance import optimize_table, reorg, set_properties
from dbt.adapters.deltamerge.statements.run.views import ViewError, resolve_as_delta, temp_view_plan


class StatementError(EngineError):
    """A SQL statement cannot be run on a Delta table."""


@dataclass(frozen=True)
class StatementResult:
    """A statement the engine ran: the table, Delta's result, and the rows it affected."""

    table: str
    result: WriteResult
    affected: dict[str, int | str]


# A schema's name -> the folder of its new tables (the invocation's catalog reads answer it).
SchemaFolder = Callable[[str], str]


def run_on_delta(
    spark: SparkSession, text: SqlText, stores: Stores, schema_folder: SchemaFolder | None = None
) -> StatementResult | None:
    """Run ``text`` through the engine if it writes a Delta table (parsed from the text's one lex
    and parse, shared with the cursor's other questions), its table reached through ``stores``
    (the invocation's); ``schema_folder`` tells where a schema's new tables go (asked only when a
    table is placed: a dbt invocation's catalog reads, which ask the catalog once per schema;
    without it, the catalog is asked each time).

    Returns:
        What ran, or None when ``sql`` is not such a statement (Spark runs it).

    Raises:
        StatementError: the statement cannot be run on a Delta table; nothing was written.
    """
    sql = text.sql
    parsed = _parse(text)
    if parsed is None or not parsed.parts:
        return None
    if isinstance(parsed, MergeStatement) and len(parsed.parts) == 1:
        parsed = _through_temp_view(spark, parsed, sql)
    schema, identifier = _schema_of(spark, parsed.parts), parsed.parts[-1]
    if schema is None:
        return None
    name = f"{schema}.{identifier}"
    folder = partial(schema_folder or partial(binding.schema_folder, spark), schema)
    if isinstance(parsed, CreateTableStatement):
        result = create_table(
            spark, parsed, schema=schema, identifier=identifier, schema_folder=folder, stores=stores
        )
        return None if result is None else _done(spark, schema, identifier, result)
    snapshot = _bound_snapshot(spark, schema, identifier, folder, stores)
    if snapshot is None:
        return None
    if isinstance(parsed, RefusedStatement):
        raise StatementError(
            f"{parsed.statement} on {name} is not run: write one INSERT INTO ... or INSERT "
            f"OVERWRITE ... per table. The statement was not run: {sql.strip()}"
        )
    runner = RUNNERS.get(type(parsed))
    if runner is None:
        raise AssertionError(f"no runner for {type(parsed).__name__} (a bug)")
    return _done(spark, schema, identifier, runner(spark, parsed, snapshot, name))


def _through_temp_view(spark: SparkSession, parsed: MergeStatement, sql: str) -> MergeStatement:
    """A MERGE into a temp view that is its Delta table unchanged merges into the table (as Delta);
    where Delta fails the MERGE with its own error, that error (``views``)."""
    name = parsed.parts[0]
    try:
        found = temp_view_plan(spark, name)
        if found is None:
            return parsed  # no temp view: the catalog's name
        table, problem = found
        if table is not None:
            resolve_as_delta(spark, parsed, name, table)
        if problem is not None:
            raise ViewError(problem)
        assert table is not None
    except ViewError as error:
        raise StatementError(
            f"MERGE INTO the temp view {name} is not run: {error}. A MERGE writes through a temp view "
            f"only when the view is its Delta table unchanged (SELECT * FROM the table), as in Delta. "
            f"The statement was not run: {sql.strip()}"
        ) from error
    return replace(parsed, parts=table)


def _definition_change(
    spark: SparkSession,
    parsed: DropColumnsStatement | DropConstraintStatement | AlterColumnStatement,
    snapshot: Snapshot,
    name: str,
) -> WriteResult:
    """A DROP COLUMNS, DROP CONSTRAINT or ALTER COLUMN; no new version when it changes nothing (IF
    EXISTS of a missing one, a column already so)."""
    if isinstance(parsed, DropColumnsStatement):
        changed = drop_columns(snapshot, parsed.columns, parsed.if_exists, name)
    elif isinstance(parsed, DropConstraintStatement):
        changed = drop_constraint(spark, snapshot, parsed.name, parsed.if_exists, name)
    else:
        changed = alter_column(
            spark, snapshot, parsed.column, name, not_null=parsed.not_null, default=parsed.default
        )
    return changed if changed is not None else WriteResult(None, "ALTER TABLE", {}, snapshot)


# A statement's runner: (spark, the statement, the table's current version, its name) -> the commit.
Runner = Callable[[SparkSession, Any, Snapshot, str], WriteResult]
# The one table from a parsed statement's type to what runs it (``statements/parse.PARSERS`` is the
# other way); CREATE TABLE runs before a table exists (``run_on_delta``).
RUNNERS: dict[type, Runner] = {
    DeleteStatement: lambda spark, s, snapshot, _: dml.delete_rows(
        spark, snapshot, s.condition, alias=s.alias
    ),
    UpdateStatement: lambda spark, s, snapshot, _: dml.update_rows(
        spark, snapshot, s.assignments, s.condition, alias=s.alias
    ),
    TruncateStatement: lambda spark, _, snapshot, __: dml.truncate(spark, snapshot),
    MergeStatement: lambda spark, s, snapshot, name: _merge(spark, s, snapshot, name),
    AddColumnsStatement: lambda spark, s, snapshot, name: add_columns(spark, snapshot, s.columns, name),
    RenameColumnStatement: lambda _, s, snapshot, name: rename_column(snapshot, s.old, s.new, name),
    DropColumnsStatement: lambda spark, s, snapshot, name: _definition_change(spark, s, snapshot, name),
    DropConstraintStatement: lambda spark, s, snapshot, name: _definition_change(spark, s, snapshot, name),
    AlterColumnStatement: lambda spark, s, snapshot, name: _definition_change(spark, s, snapshot, name),
    AddConstraintStatement: lambda spark, s, snapshot, name: add_constraint(
        spark, snapshot, s.name, s.expression, name
    ),
    SetPropertiesStatement: lambda spark, s, snapshot, name: set_properties(spark, snapshot, s, name),
    ReorgStatement: lambda spark, s, snapshot, name: reorg(spark, snapshot, s, name),
    OptimizeStatement: lambda spark, s, snapshot, _: optimize_table(spark, snapshot, s),
    ClusterByStatement: lambda _, s, snapshot, name: recluster(snapshot, s.columns, name),
    InsertStatement: lambda spark, s, snapshot, name: insert_into(spark, s, snapshot, name),
}


def _parse(text: SqlText) -> Statement | None:
    try:
        return parse_write_statement(text)
    except StatementParseError as error:
        raise StatementError(f"{error}; the statement was not run: {text.sql.strip()}") from error


def _schema_of(spark: SparkSession, parts: tuple[str, ...]) -> str | None:
    if len(parts) > 3 or (len(parts) == 3 and parts[0].lower() != "spark_catalog"):
        return None
    return parts[-2] if len(parts) > 1 else spark.catalog.currentDatabase()


def _bound_snapshot(
    spark: SparkSession, schema: str, identifier: str, schema_folder: Callable[[], str], stores: Stores
) -> Snapshot | None:
    bound = binding.binding(spark, schema, identifier, stores)
    location = (
        bound.location
        if bound is not None
        else interrupted_table(spark, schema, identifier, schema_folder, stores)
    )
    if location is None:
        return None
    # The statement's query (a snapshot's staging view, say) may read the table: it must see
    # versions committed since the binding (a run killed after its commit, another writer).
    version = bound.version if bound is not None else None
    binding.refresh(spark, schema=schema, identifier=identifier, table=location, version=version)
    snapshot = load_snapshot(location)
    if snapshot is None:
        raise StatementError(f"{schema}.{identifier} is bound to {location}, which has no Delta table")
    return snapshot


def interrupted_table(
    spark: SparkSession, schema: str, identifier: str, schema_folder: Callable[[], str], stores: Stores
) -> TableLocation | None:
    """The Delta table at the managed location of a name whose catalog entry a killed run was
    replacing (a table the user dropped stays dropped): statements and snapshots bind it again.
    ``schema_folder``: the schema's folder (asked only when the schema exists); ``stores``: the
    invocation's."""
    if spark.catalog.tableExists(binding.table_name(schema, identifier)):
        return None  # a table of another kind (a view, a parquet table): Spark's
    if not spark.catalog.databaseExists(schema):
        return None
    location = place_table(identifier, explicit=None, bound=None, schema_folder=schema_folder, stores=stores)
    return location if binding.interrupted_binding(location, schema, identifier) else None


def _merge(spark: SparkSession, statement: MergeStatement, snapshot: Snapshot, name: str) -> WriteResult:
    spec = merge_spec(statement, name)
    source = spark.sql(statement.source_query)
    what = f"MERGE INTO {name}"
    evolved = evolved_by_merge(spec, snapshot, source.schema, what=what) if spec.schema_evolution else None
    try:
        return merge_into(spark, source, snapshot, spec, change=TableChange(schema=evolved))
    except SpecError as error:  # the clauses resolved against the table and the source: before any write
        said = " ".join(_said_of_sql(p) for p in error.problems)
        raise StatementError(f"MERGE INTO {name}: {said} Nothing was written.") from error


def merge_spec(statement: MergeStatement, name: str) -> MergeSpec:
    """The clause set of a SQL ``MERGE INTO name``; what is wrong with it said as the statement's
    error (its clauses, not a model's config keys), before anything is read or written."""
    try:
        return MergeSpec.from_config(f"MERGE INTO {name}", statement.config)
    except SpecError as error:
        said = " ".join(_said_of_sql(p) for p in error.problems)
        raise StatementError(f"MERGE INTO {name}: {said} Nothing was written.") from error


# A problem of the clauses' resolution (``merge/resolve.py``): ``matched clause 1 (update): ...``.
_RESOLVED_PROBLEM = r"^(not_matched_by_source|not_matched|matched) clause (\d+) \(\w+\): (.*)$"


def _said_of_sql(problem: str) -> str:
    """A clause-set problem in the words of the statement (``when_matched[1]: ...`` is the second
    ``WHEN MATCHED`` clause).

    >>> _said_of_sql("when_not_matched_by_source[0]: action must be 'update' or 'delete'")
    "the 1st WHEN NOT MATCHED BY SOURCE clause: action must be 'update' or 'delete'."
    >>> _said_of_sql("matched clause 2 (update): [FIELD_NOT_FOUND] No such struct field `b` in `a`.")
    'the 2nd WHEN MATCHED clause: [FIELD_NOT_FOUND] No such struct field `b` in `a`.'
    >>> _said_of_sql("source_alias and target_alias must differ (both are 'x')")
    "the source's and the target's aliases must differ (both are 'x')."
    """
    found = re.match(r"^when_(not_matched_by_source|not_matched|matched)\[(\d+)\]: (.*)$", problem, re.S)
    resolved = re.match(
        r"^(not_matched_by_source|not_matched|matched) clause (\d+) \(\w+\): (.*)$", problem, re.S
    )
    if found is not None or resolved is not None:
        kind, index, rest = (found or resolved).groups()  # type: ignore[union-attr]
        ordinal = int(index) + (1 if found is not None else 0)
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(ordinal if ordinal < 20 else ordinal % 10, "th")
        problem = f"the {ordinal}{suffix} WHEN {kind.replace('_', ' ').upper()} clause: {rest}"
    problem = problem.replace("source_alias and target_alias", "the source's and the target's aliases")
    return problem if problem.endswith(".") else f"{problem}."


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
