"""Delta's constraint and column-definition commands, each one commit (no data files written).

``ALTER TABLE ADD CONSTRAINT`` first checks every live row against the new CHECK constraint
and ``SET NOT NULL`` every value (``delta/commands/redefine.py``), as Delta does; ``DROP CONSTRAINT``,
``DROP NOT NULL``, ``SET DEFAULT`` and ``DROP DEFAULT`` change the definition only. Each commit
carries the protocol the new definition needs (``checkConstraints``, ``invariants``, ``allowColumnDefaults``).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import SparkSession
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.errors import EngineError
from dbt.adapters.deltamerge.delta import Snapshot
from dbt.adapters.deltamerge.delta.commands import redefine
from dbt.adapters.deltamerge.delta.data import CONSTRAINT_PREFIX, CURRENT_DEFAULT, GENERATION_EXPRESSION
from dbt.adapters.deltamerge.delta.log import find_field
from dbt.adapters.deltamerge.delta.log import metadata as identity_metadata
from dbt.adapters.deltamerge.delta.txn import WriteResult
from dbt.adapters.deltamerge.statements.parse.ddl import ColumnDefinition


class ColumnDefinitionError(EngineError):
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
    configuration = {**snapshot.metadata.configuration, key: expression}
    params: dict[str, object] = {"name": name, "expr": expression}
    return redefine(
        spark, snapshot, table, operation="ADD CONSTRAINT", params=params, configuration=configuration
    )


def drop_constraint(
    spark: SparkSession, snapshot: Snapshot, name: str, if_exists: bool, table: str
) -> WriteResult | None:
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
    return redefine(
        spark, snapshot, table, operation="DROP CONSTRAINT", params=params, configuration=configuration
    )


def alter_column(
    spark: SparkSession,
    snapshot: Snapshot,
    column: str,
    table: str,
    *,
    not_null: bool | None = None,
    default: str | None = None,
) -> WriteResult | None:
    """``ALTER COLUMN c SET / DROP NOT NULL`` (SET after every live value passes) or ``SET / DROP
    DEFAULT`` (None: nothing changes)."""
    field = find_field(snapshot.schema, column)
    if field is None:
        raise ColumnDefinitionError(
            f"ALTER TABLE {table} ALTER COLUMN: `{column}` is not a column of the table"
        )
    nullable = field.nullable if not_null is None else not not_null
    metadata = dict(field.metadata or {})
    if default is not None:
        metadata.pop(CURRENT_DEFAULT, None)
        if default:
            metadata[CURRENT_DEFAULT] = default
    changed = T.StructField(field.name, field.dataType, nullable, metadata)
    if changed == field:
        return None
    schema = T.StructType([changed if f.name == field.name else f for f in snapshot.schema.fields])
    params: dict[str, object] = {"column": changed.jsonValue()}
    return redefine(spark, snapshot, table, operation="CHANGE COLUMN", params=params, schema=schema)
