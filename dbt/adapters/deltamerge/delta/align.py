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
from dbt.adapters.deltamerge.delta.column_values import filled
from dbt.adapters.deltamerge.delta.errors import DeltaError, DeltaSchemaError
from dbt.adapters.deltamerge.delta.identity import explicit_values_refused
from dbt.adapters.deltamerge.delta.schema import find_field

_INTEGRAL_ORDER = [T.ByteType, T.ShortType, T.IntegerType, T.LongType]


def can_write(source: T.DataType, target: T.DataType) -> bool:
    """Whether values of ``source`` may be written to a column of ``target`` without loss.

    >>> can_write(T.IntegerType(), T.LongType()), can_write(T.StringType(), T.IntegerType())
    (True, False)
    >>> can_write(T.DecimalType(10, 2), T.DecimalType(12, 2))
    True
    """
    if isinstance(source, T.NullType) or source == target:
        return True
    if isinstance(source, T.StructType) and isinstance(target, T.StructType):
        return all(
            (t := find_field(target, f.name)) is not None and can_write(f.dataType, t.dataType)
            for f in source.fields
        )
    if isinstance(source, T.ArrayType) and isinstance(target, T.ArrayType):
        return can_write(source.elementType, target.elementType)
    if isinstance(source, T.MapType) and isinstance(target, T.MapType):
        return can_write(source.keyType, target.keyType) and can_write(source.valueType, target.valueType)
    if isinstance(source, (T.CharType, T.VarcharType)) and isinstance(target, T.StringType):
        return True
    return _widens(source, target)


_DATETIME = (T.DateType, T.TimestampType, T.TimestampNTZType)


def can_store_assign(source: T.DataType, target: T.DataType) -> bool:
    """Whether Spark's ANSI store assignment casts ``source`` values into a ``target`` column.

    The rule of a MERGE's, UPDATE's or INSERT's assignments (Delta casts the assigned values
    to the column types; a value that does not fit fails the write at run time): numbers to
    numbers, dates and timestamps among themselves, atomic values to strings, recursively
    inside arrays, maps and structs.

    >>> can_store_assign(T.LongType(), T.IntegerType()), can_store_assign(T.TimestampType(), T.DateType())
    (True, True)
    >>> can_store_assign(T.StringType(), T.IntegerType())
    False
    """
    if can_write(source, target):
        return True
    if isinstance(source, T.NumericType) and isinstance(target, T.NumericType):
        return True
    if isinstance(source, _DATETIME) and isinstance(target, _DATETIME):
        return True
    if isinstance(target, T.StringType):
        return isinstance(source, T.AtomicType) and not isinstance(source, T.BinaryType)
    if isinstance(source, T.ArrayType) and isinstance(target, T.ArrayType):
        return can_store_assign(source.elementType, target.elementType)
    if isinstance(source, T.MapType) and isinstance(target, T.MapType):
        return can_store_assign(source.keyType, target.keyType) and can_store_assign(
            source.valueType, target.valueType
        )
    if isinstance(source, T.StructType) and isinstance(target, T.StructType):
        return all(
            (t := find_field(target, f.name)) is not None and can_store_assign(f.dataType, t.dataType)
            for f in source.fields
        )
    return False


def _widens(source: T.DataType, target: T.DataType) -> bool:
    integral = [type(source) is t for t in _INTEGRAL_ORDER]
    if any(integral):
        rank = integral.index(True)
        if any(type(target) is t for t in _INTEGRAL_ORDER[rank:]):
            return True
        if isinstance(target, T.DoubleType):
            return rank <= 2
        if isinstance(target, T.DecimalType):
            digits = [3, 5, 10, 20][rank]
            return target.precision - target.scale >= digits
        return False
    if isinstance(source, T.FloatType):
        return isinstance(target, T.DoubleType)
    if isinstance(source, T.DecimalType) and isinstance(target, T.DecimalType):
        return target.scale >= source.scale and (
            target.precision - target.scale >= source.precision - source.scale
        )
    if isinstance(source, T.DateType):
        return isinstance(target, (T.TimestampType, T.TimestampNTZType))
    return False


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
            columns.append(store_assigned(col, target, what))
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


def store_assigned(value: Column, field: T.StructField, what: str) -> Column:
    """``value`` cast to the column's type as a SQL store assignment; a value that does not convert
    fails the write (with ``what`` and the column named) instead of becoming null."""
    cast = value.try_cast(field.dataType)
    message = F.lit(
        f"{what}: a value of column `{field.name}` cannot be cast to "
        f"{field.dataType.simpleString()}; nothing was written"
    )
    return F.when(value.isNotNull() & cast.isNull(), F.raise_error(message)).otherwise(cast).alias(field.name)
