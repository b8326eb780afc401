"""Delta's constraint and column-definition commands, each one commit (no data files written).

``ALTER TABLE ADD CONSTRAINT`` first checks every live row against the new CHECK constraint
(``DELTA_NEW_CHECK_CONSTRAINT_VIOLATION`` names how many fail) and ``SET NOT NULL`` every value
(``DELTA_NEW_NOT_NULL_VIOLATION``), as Delta does; ``DROP CONSTRAINT``, ``DROP NOT NULL``,
``SET DEFAULT`` and ``DROP DEFAULT`` change the definition only. Each commit carries the protocol
the new definition needs (``checkConstraints``, ``invariants``, ``allowColumnDefaults``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from pyspark.sql import SparkSession
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta.column_values import CURRENT_DEFAULT
from dbt.adapters.deltamerge.delta.commit import CommitInfo
from dbt.adapters.deltamerge.delta.constraints import CONSTRAINT_PREFIX, GENERATION_EXPRESSION
from dbt.adapters.deltamerge.delta.definition import definition_actions, with_metadata
from dbt.adapters.deltamerge.delta.errors import DeltaError
from dbt.adapters.deltamerge.delta.identity import metadata as identity_metadata
from dbt.adapters.deltamerge.delta.read import read_files
from dbt.adapters.deltamerge.delta.schema import find_field, schema_to_json
from dbt.adapters.deltamerge.delta.snapshot import Snapshot
from dbt.adapters.deltamerge.delta.transaction import WriteResult, commit_files
from dbt.adapters.deltamerge.statements.parse_ddl import ColumnDefinition


class ColumnDefinitionError(DeltaError):
    """A constraint or column definition Delta refuses."""


def column_metadata(column: ColumnDefinition, dtype: T.DataType) -> dict[str, object]:
    """The field metadata Delta keeps for ``column``'s comment, generation, default and identity."""
    found: dict[str, object] = {"comment": column.comment} if column.comment else {}
    if sum(x is not None for x in (column.generated, column.default, column.identity)) > 1:
        raise ColumnDefinitionError(
            f"column `{column.name}`: a column is one of generated, identity or with a default"
        )
    if column.generated is not None:
        found[GENERATION_EXPRESSION] = column.generated
    if column.default is not None:
        found[CURRENT_DEFAULT] = column.default
    if column.identity is not None:
        always, start, step = column.identity
        if not isinstance(dtype, T.LongType):
            raise ColumnDefinitionError(
                f"[DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE] DataType {dtype.simpleString()} is not "
                f"supported for IDENTITY columns (column `{column.name}`)."
            )
        if step == 0:
            raise ColumnDefinitionError(
                "[DELTA_IDENTITY_COLUMNS_ILLEGAL_STEP] IDENTITY column step cannot be 0."
            )
        found.update(identity_metadata(start, step, always=always))
    return found


def constraint_properties(checks: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Table properties of CHECK constraints (Delta keeps names lower-cased)."""
    return {f"{CONSTRAINT_PREFIX}{name.lower()}": expression for name, expression in checks}


def add_constraint(
    spark: SparkSession, snapshot: Snapshot, name: str, expression: str, table: str
) -> WriteResult:
    """``ALTER TABLE ADD CONSTRAINT name CHECK (expression)``, after every live row passes it."""
    key = f"{CONSTRAINT_PREFIX}{name.lower()}"
    old = snapshot.metadata.configuration.get(key)
    if old is not None:
        raise ColumnDefinitionError(
            f"[DELTA_CONSTRAINT_ALREADY_EXISTS] Constraint '{name}' already exists. Please delete the old "
            f"constraint first.\nOld constraint:\n{old}"
        )
    failing = _count(spark, snapshot, f"NOT coalesce(({expression}), true)")
    if failing:
        raise ColumnDefinitionError(
            f"[DELTA_NEW_CHECK_CONSTRAINT_VIOLATION] {failing} rows in {table} violate the new CHECK "
            f"constraint ({expression}). Nothing was committed."
        )
    configuration = {**snapshot.metadata.configuration, key: expression}
    params: dict[str, object] = {"name": name, "expr": expression}
    return _commit(snapshot, "ADD CONSTRAINT", params, configuration=configuration)


def drop_constraint(snapshot: Snapshot, name: str, if_exists: bool, table: str) -> WriteResult | None:
    """``ALTER TABLE DROP CONSTRAINT [IF EXISTS] name``; None when there is none and IF EXISTS."""
    key = f"{CONSTRAINT_PREFIX}{name.lower()}"
    if key not in snapshot.metadata.configuration:
        if if_exists:
            return None
        raise ColumnDefinitionError(
            f"[DELTA_CONSTRAINT_DOES_NOT_EXIST] Cannot drop nonexistent constraint {name} "
            f"from table {table}. To avoid throwing an error, provide the parameter IF EXISTS."
        )
    configuration = {k: v for k, v in snapshot.metadata.configuration.items() if k != key}
    params: dict[str, object] = {"name": name, "expr": snapshot.metadata.configuration[key]}
    return _commit(snapshot, "DROP CONSTRAINT", params, configuration=configuration)


def alter_column(
    spark: SparkSession,
    snapshot: Snapshot,
    column: str,
    table: str,
    *,
    not_null: bool | None = None,
    default: str | None = None,
) -> WriteResult | None:
    """``ALTER COLUMN c SET / DROP NOT NULL`` or ``SET / DROP DEFAULT`` (None: nothing changes)."""
    field = find_field(snapshot.schema, column)
    if field is None:
        raise ColumnDefinitionError(
            f"ALTER TABLE {table} ALTER COLUMN: `{column}` is not a column of the table"
        )
    nullable, metadata = field.nullable, dict(field.metadata or {})
    if not_null is not None:
        nullable = not not_null
        if not_null and field.nullable:
            failing = _count(spark, snapshot, f"{quote_identifier(field.name)} IS NULL")
            if failing:
                raise ColumnDefinitionError(
                    f"[DELTA_NEW_NOT_NULL_VIOLATION] {failing} rows in {table} violate the new NOT NULL "
                    f"constraint on {field.name}. Nothing was committed."
                )
    if default is not None:
        metadata.pop(CURRENT_DEFAULT, None)
        if default:
            metadata[CURRENT_DEFAULT] = default
    changed = T.StructField(field.name, field.dataType, nullable, metadata)
    if changed == field:
        return None
    schema = T.StructType([changed if f.name == field.name else f for f in snapshot.schema.fields])
    params: dict[str, object] = {"column": changed.jsonValue()}
    return _commit(snapshot, "CHANGE COLUMN", params, schema=schema)


def redefine(
    spark: SparkSession,
    snapshot: Snapshot,
    table: str,
    *,
    configuration: dict[str, str],
    nullable: Mapping[str, bool],
    added: Mapping[str, str],
) -> WriteResult:
    """One commit giving the table ``configuration`` (its CHECK constraints among its properties)
    and the columns' ``nullable``, after every live row passes the ``added`` checks (name ->
    expression) and the new NOT NULL columns (one counting job), as ALTER TABLE would."""
    tests = [("check", n, f"NOT coalesce(({e}), true)") for n, e in added.items()]
    tests += [("not null", c, f"{quote_identifier(c)} IS NULL") for c, n in nullable.items() if not n]
    if tests and snapshot.files:
        rows = read_files(spark, snapshot, list(snapshot.files))
        counts = rows.selectExpr(
            *[f"count_if({sql}) AS `{i}`" for i, (_, _, sql) in enumerate(tests)]
        ).first()
        for (kind, name, _), failing in zip(tests, counts or (), strict=True):
            if failing and kind == "check":
                raise ColumnDefinitionError(
                    f"[DELTA_NEW_CHECK_CONSTRAINT_VIOLATION] {failing} rows in {table} violate the new CHECK "
                    f"constraint ({added[name]}). Nothing was committed."
                )
            if failing:
                raise ColumnDefinitionError(
                    f"[DELTA_NEW_NOT_NULL_VIOLATION] {failing} rows in {table} violate the new NOT NULL "
                    f"constraint on {name}. Nothing was committed."
                )
    schema = T.StructType(
        [
            T.StructField(f.name, f.dataType, nullable.get(f.name, f.nullable), f.metadata)
            for f in snapshot.schema.fields
        ]
    )
    operation = "ADD CONSTRAINT" if added else "DROP CONSTRAINT" if not nullable else "CHANGE COLUMN"
    params: dict[str, object] = {"constraints": dict(added), "nullable": dict(nullable)}
    return _commit(snapshot, operation, params, configuration=configuration, schema=schema)


def _count(spark: SparkSession, snapshot: Snapshot, condition: str) -> int:
    if not snapshot.files:
        return 0
    return read_files(spark, snapshot, list(snapshot.files)).where(condition).count()


def _commit(
    snapshot: Snapshot,
    operation: str,
    params: dict[str, object],
    *,
    configuration: dict[str, str] | None = None,
    schema: T.StructType | None = None,
) -> WriteResult:
    metadata = snapshot.metadata
    if configuration is not None:
        metadata = replace(metadata, configuration=configuration)
    if schema is not None:
        metadata = replace(metadata, schema_string=schema_to_json(schema))
    leading = definition_actions(snapshot, with_metadata(snapshot, metadata))
    info = CommitInfo(operation, params, {})
    return commit_files(snapshot.table_path, snapshot, info, leading, [], [], metadata.configuration)
