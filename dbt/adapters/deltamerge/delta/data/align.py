"""Fitting a DataFrame to a table's schema the way Delta's writers do.

Columns are matched by name (case-insensitively, as Spark resolves them); a column the
data lacks gets what Delta's writers give it (its default, a new identity value, its generation
expression, else null: ``column_values``); a type is converted only where Delta's implicit
conversion allows it (widening numbers, dates to timestamps); anything else is an error
naming the column and both types, never a silent null from a failed cast.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta.data.column_values import filled
from dbt.adapters.deltamerge.delta.errors import DeltaError, DeltaSchemaError
from dbt.adapters.deltamerge.delta.log.evolution import can_store_assign, can_write
from dbt.adapters.deltamerge.delta.log.identity import explicit_values_refused
from dbt.adapters.deltamerge.delta.log.schema import find_field


def align_to_schema(
    df: DataFrame, schema: T.StructType, *, what: str, store_assignment: bool = False
) -> DataFrame:
    """``df`` with exactly ``schema``'s columns, in its order and types.

    ``store_assignment`` (a merge's assignments) also casts the types ``can_store_assign``
    allows, failing the write on a value that does not fit; otherwise only lossless
    conversions (``can_write``) are made.

    Raises:
        DeltaSchemaError: a column of ``df`` is not in the table, or its type cannot be
            written to the table's column. ``what`` names the write in the message.
    """
    refused = explicit_values_refused(schema, [f.name for f in df.schema.fields], what)
    if refused:
        raise DeltaError("; ".join(refused) + " Nothing was written.")
    aligned = df.select(*aligned_columns(df.schema, schema, what=what, store_assignment=store_assignment))
    return filled(aligned, schema, [f.name for f in schema.fields if find_field(df.schema, f.name) is None])


def aligned_columns(
    source: T.StructType, schema: T.StructType, *, what: str, store_assignment: bool = False
) -> list[Column]:
    """Columns over ``source``'s fields giving exactly ``schema``'s columns (see ``align_to_schema``)."""
    problems: list[str] = []
    extra = [f.name for f in source.fields if find_field(schema, f.name) is None]
    if extra:
        problems.append(
            f"{what}: columns {extra} are not in the table (table columns: {[f.name for f in schema.fields]})"
        )
    columns = []
    for target in schema.fields:
        found = find_field(source, target.name)
        if found is None:
            columns.append(F.lit(None).cast(target.dataType).alias(target.name))
            continue
        col = F.col(quote_identifier(found.name))
        lossy = not can_write(found.dataType, target.dataType)
        if store_assignment and lossy and can_store_assign(found.dataType, target.dataType):
            columns.append(store_assigned(col, target, what, found.dataType))
            continue
        if not can_write(found.dataType, target.dataType):
            problems.append(
                f"{what}: column `{target.name}` is {found.dataType.simpleString()} in the data "
                f"but {target.dataType.simpleString()} in the table"
            )
            continue
        if found.dataType != target.dataType:
            col = col.cast(target.dataType)
        columns.append(col.alias(target.name))
    if problems:
        raise DeltaSchemaError(problems)
    return columns


def store_assigned(
    value: Column, field: T.StructField, what: str, source: T.DataType | None = None
) -> Column:
    """``value`` cast to the column's type as a MERGE's or UPDATE's assignment (Spark's ANSI cast);
    a value that does not convert fails the write (with ``what`` and the column named) instead of
    becoming null. With the value's type (``source``), a value inside an array, map or struct that
    does not convert fails it too (Spark's ``try_cast`` nulls just that element)."""
    cast = value.try_cast(field.dataType)
    message = F.lit(
        f"{what}: a value of column `{field.name}` cannot be cast to "
        f"{field.dataType.simpleString()}; nothing was written"
    )
    lost = (
        _lost(value, cast, source, field.dataType)
        if source is not None
        else value.isNotNull() & cast.isNull()
    )
    return F.when(lost, F.raise_error(message)).otherwise(cast).alias(field.name)


def _lost(value: Column, cast: Column, source: T.DataType, target: T.DataType) -> Column:
    """True where ``cast`` (``try_cast(value)``) lost a value that was there, at any depth."""
    here = value.isNotNull() & cast.isNull()
    if isinstance(source, T.ArrayType) and isinstance(target, T.ArrayType):
        inner = F.zip_with(value, cast, lambda v, c: _lost(v, c, source.elementType, target.elementType))
        return here | (value.isNotNull() & F.exists(inner, lambda lost: lost))
    if isinstance(source, T.MapType) and isinstance(target, T.MapType):
        keys = F.zip_with(
            F.map_keys(value), F.map_keys(cast), lambda v, c: _lost(v, c, source.keyType, target.keyType)
        )
        values = F.zip_with(
            F.map_values(value),
            F.map_values(cast),
            lambda v, c: _lost(v, c, source.valueType, target.valueType),
        )
        nested = F.exists(keys, lambda lost: lost) | F.exists(values, lambda lost: lost)
        return here | (value.isNotNull() & nested)
    if isinstance(source, T.StructType) and isinstance(target, T.StructType):
        fields = zip(source.fields, target.fields, strict=False)  # a struct casts by position
        inside = [
            _lost(value.getField(s.name), cast.getField(t.name), s.dataType, t.dataType) for s, t in fields
        ]
        return here | (value.isNotNull() & cast.isNotNull() & _any(inside)) if inside else here
    return here


def _any(conditions: list[Column]) -> Column:
    found = conditions[0]
    for condition in conditions[1:]:
        found = found | condition
    return found
