"""Schema evolution: which schema a write leaves, as Delta's ``mergeSchema`` / merge auto-merge decide.

Pure functions over Spark ``StructType``s. Columns match by name case-insensitively;
existing columns keep their type and position; new columns (and new nested struct
fields) are appended, nullable. A source type that Delta casts implicitly to the
table's type (``can_write``) keeps the table's type; any other type change is an error
naming the column and both types. Partition columns never change.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.errors import DeltaSchemaError
from dbt.adapters.deltamerge.delta.log.schema import find_field


@dataclass(frozen=True)
class SchemaChanges:
    """How a model's result differs from its table (dbt's ``on_schema_change`` vocabulary)."""

    source_not_in_target: tuple[str, ...]
    target_not_in_source: tuple[str, ...]
    new_target_types: tuple[tuple[str, str, str], ...]

    @property
    def any(self) -> bool:
        """Whether the schemas differ at all."""
        return bool(self.source_not_in_target or self.target_not_in_source or self.new_target_types)


def schema_changes(target: T.StructType, source: T.StructType) -> SchemaChanges:
    """Top-level differences between the table and the model's result.

    >>> t = T.StructType([T.StructField("id", T.IntegerType()), T.StructField("a", T.StringType())])
    >>> s = T.StructType([T.StructField("ID", T.LongType()), T.StructField("b", T.StringType())])
    >>> changes = schema_changes(t, s)
    >>> changes.source_not_in_target, changes.target_not_in_source, changes.new_target_types
    (('b',), ('a',), (('id', 'int', 'bigint'),))
    """
    added = tuple(f.name for f in source.fields if find_field(target, f.name) is None)
    removed = tuple(f.name for f in target.fields if find_field(source, f.name) is None)
    retyped = tuple(
        (f.name, f.dataType.simpleString(), found.dataType.simpleString())
        for f in target.fields
        if (found := find_field(source, f.name)) is not None and found.dataType != f.dataType
    )
    return SchemaChanges(added, removed, retyped)


def evolved_schema(
    target: T.StructType,
    source: T.StructType,
    *,
    add: Iterable[str] | None = None,
    drop_missing: bool = False,
    partition_columns: Iterable[str] = (),
    what: str,
    store_assignment: bool = False,
) -> T.StructType:
    """``target`` with the source's new columns (only those named in ``add``, if given).

    ``drop_missing`` also removes target columns the source lacks (dbt's
    ``sync_all_columns``). Nested struct fields are added recursively. ``store_assignment``
    (a merge) keeps the table's type wherever Spark's store assignment casts the source's.

    Raises:
        DeltaSchemaError: a type that cannot be written to the table's, or a change to a
            partition column.
    """
    wanted = None if add is None else {a.lower() for a in add}
    partitions = {p.lower() for p in partition_columns}
    problems: list[str] = []
    fields: list[T.StructField] = []
    for field in target.fields:
        found = find_field(source, field.name)
        if found is None:
            if drop_missing and field.name.lower() in partitions:
                problems.append(
                    f"{what}: partition column `{field.name}` cannot be removed by schema evolution"
                )
            elif not drop_missing:
                fields.append(field)
            continue
        merged = _merge_type(
            field.dataType, found.dataType, field.name, problems, what=what, assign=store_assignment
        )
        if merged != field.dataType and field.name.lower() in partitions:
            problems.append(f"{what}: partition column `{field.name}` cannot change through schema evolution")
            merged = field.dataType
        fields.append(T.StructField(field.name, merged, True, field.metadata))
    for field in source.fields:
        if find_field(target, field.name) is None and (wanted is None or field.name.lower() in wanted):
            fields.append(T.StructField(field.name, _nullable(field.dataType), True))
    if problems:
        raise DeltaSchemaError(problems)
    return T.StructType(fields)


def _merge_type(
    target: T.DataType, source: T.DataType, path: str, problems: list[str], *, what: str, assign: bool = False
) -> T.DataType:
    if isinstance(target, T.StructType) and isinstance(source, T.StructType):
        fields = [
            T.StructField(
                f.name,
                f.dataType
                if (s := find_field(source, f.name)) is None
                else _merge_type(
                    f.dataType, s.dataType, f"{path}.{f.name}", problems, what=what, assign=assign
                ),
                True,
                f.metadata,
            )
            for f in target.fields
        ]
        fields += [
            T.StructField(s.name, _nullable(s.dataType), True)
            for s in source.fields
            if find_field(target, s.name) is None
        ]
        return T.StructType(fields)
    if isinstance(target, T.ArrayType) and isinstance(source, T.ArrayType):
        return T.ArrayType(
            _merge_type(
                target.elementType, source.elementType, f"{path}.element", problems, what=what, assign=assign
            ),
            True,
        )
    if isinstance(target, T.MapType) and isinstance(source, T.MapType):
        return T.MapType(
            _merge_type(target.keyType, source.keyType, f"{path}.key", problems, what=what, assign=assign),
            _merge_type(
                target.valueType, source.valueType, f"{path}.value", problems, what=what, assign=assign
            ),
            True,
        )
    if assign and not can_store_assign(source, target):  # a merge's source: Delta's schema merge fails
        field = path.split(".")[0]
        problems.append(
            f"{what}: [DELTA_FAILED_TO_MERGE_FIELDS] Failed to merge fields '{field}' and '{field}'. "
            f"[DELTA_MERGE_INCOMPATIBLE_DATATYPE] Failed to merge incompatible data types "
            f"{target.simpleString()} and {source.simpleString()} (column `{path}`)"
        )
    elif not assign and not can_write(source, target):
        problems.append(
            f"{what}: column `{path}` is {target.simpleString()} in the table and {source.simpleString()} "
            "in the model's result; Delta cannot cast it implicitly (cast it in the model, or --full-refresh)"
        )
    return target


def _nullable(dtype: T.DataType) -> T.DataType:
    if isinstance(dtype, T.StructType):
        return T.StructType(
            [T.StructField(f.name, _nullable(f.dataType), True, f.metadata) for f in dtype.fields]
        )
    if isinstance(dtype, T.ArrayType):
        return T.ArrayType(_nullable(dtype.elementType), True)
    if isinstance(dtype, T.MapType):
        return T.MapType(dtype.keyType, _nullable(dtype.valueType), True)
    return dtype


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
    """Whether Delta casts ``source`` values assigned to a ``target`` column by a MERGE or UPDATE.

    Delta's rule (``UpdateExpressionsSupport.cast`` under Spark's default ``storeAssignmentPolicy``
    ANSI) is Spark's ANSI cast: numbers among themselves and to and from booleans, a string to a
    number, boolean, date, timestamp or binary, dates and timestamps among themselves, numbers to
    timestamps and back, anything but binary to a string (a struct, array or map as Spark writes it,
    ``{1, x}``, ``[1, 2]``); recursively inside arrays, maps and structs.
    A value that does not convert (``'a'`` into an int, an overflow) fails the write at run time
    (``store_assigned``), never a silent null. A date never becomes a number (Spark refuses it).

    >>> can_store_assign(T.LongType(), T.IntegerType()), can_store_assign(T.TimestampType(), T.DateType())
    (True, True)
    >>> can_store_assign(T.StringType(), T.IntegerType()), can_store_assign(T.DateType(), T.IntegerType())
    (True, False)
    >>> can_store_assign(T.StructType([T.StructField("a", T.IntegerType())]), T.StringType())
    True
    """
    if can_write(source, target):
        return True
    numeric_or_bool = (T.NumericType, T.BooleanType)
    if isinstance(source, numeric_or_bool) and isinstance(target, numeric_or_bool):
        return True
    if isinstance(source, _DATETIME) and isinstance(target, _DATETIME):
        return True
    if isinstance(source, T.StringType):
        return isinstance(target, (*numeric_or_bool, *_DATETIME, T.BinaryType, T.StringType))
    if isinstance(source, T.NumericType) and isinstance(target, T.TimestampType):
        return True
    if isinstance(source, T.TimestampType) and isinstance(target, T.NumericType):
        return True
    if isinstance(target, T.StringType):  # Spark's text of the value: a struct is "{1, x}"
        return not isinstance(source, T.BinaryType)
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
