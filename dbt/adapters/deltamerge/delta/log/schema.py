"""Spark types <-> Delta schema JSON.

Delta's schema serialization is Spark's own ``StructType`` JSON, so conversion is
PySpark's ``jsonValue``/``fromJson``; what this module adds is the checks Delta makes
before a schema may be written (types Delta has no encoding for, names that need
column mapping) and the table features a schema needs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.errors import DeltaSchemaError

# Spark marks CHAR/VARCHAR columns with this metadata key; Delta stores them as strings.
_CHAR_VARCHAR_KEY = "__CHAR_VARCHAR_TYPE_STRING"

# Delta without column mapping rejects these characters in column names.
INVALID_NAME_CHARS = " ,;{}()\n\t="

_ATOMIC = (
    T.BooleanType,
    T.ByteType,
    T.ShortType,
    T.IntegerType,
    T.LongType,
    T.FloatType,
    T.DoubleType,
    T.DecimalType,
    T.StringType,
    T.BinaryType,
    T.DateType,
    T.TimestampType,
    T.TimestampNTZType,
    T.CharType,
    T.VarcharType,
    T.VariantType,
)


def iter_fields(
    dtype: T.DataType, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], T.DataType]]:
    """Yield ``(path, type)`` for every field and element type, depth first.

    >>> s = T.StructType([T.StructField("a", T.StructType([T.StructField("b", T.IntegerType())]))])
    >>> [".".join(p) for p, _ in iter_fields(s)]
    ['a', 'a.b']
    """
    if isinstance(dtype, T.StructType):
        for field in dtype.fields:
            path = (*prefix, field.name)
            yield path, field.dataType
            yield from iter_fields(field.dataType, path)
    elif isinstance(dtype, T.ArrayType):
        yield from iter_fields(dtype.elementType, (*prefix, "element"))
    elif isinstance(dtype, T.MapType):
        yield from iter_fields(dtype.keyType, (*prefix, "key"))
        yield from iter_fields(dtype.valueType, (*prefix, "value"))


def schema_problems(schema: T.StructType, *, mapped: bool = False) -> list[str]:
    """Every reason this schema cannot be stored in a Delta table we write (``mapped``: with
    column mapping, where any character may appear in a name).

    >>> print(schema_problems(T.StructType([T.StructField("a b", T.NullType())]))[0])
    column `a b`: Delta has no type for NULL (void); cast it, e.g. `cast(null as string) as ...`
    """
    problems: list[str] = []
    seen: set[str] = set()
    for field in schema.fields:
        if field.name.lower() in seen:
            problems.append(f"column `{field.name}` appears twice (names are case-insensitive)")
        seen.add(field.name.lower())
    for path, dtype in iter_fields(schema):
        name = ".".join(path)
        if isinstance(dtype, T.NullType):
            problems.append(
                f"column `{name}`: Delta has no type for NULL (void); "
                "cast it, e.g. `cast(null as string) as ...`"
            )
        elif not isinstance(dtype, (*_ATOMIC, T.StructType, T.ArrayType, T.MapType)):
            problems.append(f"column `{name}`: type {dtype.simpleString()} cannot be stored in Delta")
        elif isinstance(dtype, T.StringType) and getattr(dtype, "collation", "UTF8_BINARY") != (
            "UTF8_BINARY"
        ):
            problems.append(f"column `{name}`: collated strings need a Delta table feature we do not write")
        leaf = path[-1]
        if mapped:
            continue
        if leaf not in ("element", "key", "value") or not _is_container_step(schema, path):
            bad = sorted({c for c in leaf if c in INVALID_NAME_CHARS})
            if bad:
                problems.append(
                    f"column `{name}`: the characters {bad!r} are not allowed in Delta column names "
                    "without column mapping; rename it with an alias"
                )
    return problems


def _is_container_step(schema: T.StructType, path: tuple[str, ...]) -> bool:
    parent: T.DataType = schema
    for step in path[:-1]:
        parent = _child(parent, step)
    return isinstance(parent, (T.ArrayType, T.MapType))


def _child(dtype: T.DataType, step: str) -> T.DataType:
    if isinstance(dtype, T.StructType):
        return dtype[step].dataType
    if isinstance(dtype, T.ArrayType):
        return dtype.elementType
    if isinstance(dtype, T.MapType):
        return dtype.keyType if step == "key" else dtype.valueType
    raise KeyError(step)


def to_delta_schema(
    schema: T.StructType, *, mapped: bool = False, keep_nullability: bool = False
) -> T.StructType:
    """The schema as Delta stores it: CHAR/VARCHAR become STRING, everything nullable.

    Delta tables written by Spark are nullable unless a NOT NULL constraint is declared;
    a query's inferred nullability is not a constraint. ``mapped``: the table has column mapping.
    ``keep_nullability``: ``schema`` is a table's (its NOT NULL fields are constraints, kept).
    """
    problems = schema_problems(schema, mapped=mapped)
    if problems:
        raise DeltaSchemaError(problems)
    return T.StructType([_clean_field(f, keep_nullability) for f in schema.fields])


def _clean_field(field: T.StructField, keep: bool = False) -> T.StructField:
    metadata = {k: v for k, v in (field.metadata or {}).items() if k != _CHAR_VARCHAR_KEY}
    return T.StructField(field.name, _clean_type(field.dataType, keep), field.nullable or not keep, metadata)


def _clean_type(dtype: T.DataType, keep: bool = False) -> T.DataType:
    if isinstance(dtype, T.StructType):
        return T.StructType([_clean_field(f, keep) for f in dtype.fields])
    if isinstance(dtype, T.ArrayType):
        return T.ArrayType(_clean_type(dtype.elementType, keep), True)
    if isinstance(dtype, T.MapType):
        return T.MapType(_clean_type(dtype.keyType, keep), _clean_type(dtype.valueType, keep), True)
    if isinstance(dtype, (T.CharType, T.VarcharType)):
        return T.StringType()
    return dtype


def schema_to_json(schema: T.StructType) -> str:
    """Delta's ``schemaString`` for a Spark schema."""
    return json.dumps(schema.jsonValue(), separators=(",", ":"))


def schema_from_json(schema_string: str) -> T.StructType:
    """The Spark schema for a Delta ``schemaString``."""
    parsed = T.StructType.fromJson(json.loads(schema_string))
    assert isinstance(parsed, T.StructType)
    return parsed


def required_features(schema: T.StructType) -> set[str]:
    """Delta table features a table with this schema must declare (nested types too).

    >>> sorted(required_features(T.StructType([T.StructField("v", T.ArrayType(T.VariantType()))])))
    ['variantType']
    >>> ntz = T.MapType(T.StringType(), T.TimestampNTZType())
    >>> sorted(required_features(T.StructType([T.StructField("m", ntz)])))
    ['timestampNtz']
    """
    features = {"timestampNtz"} if contains_type(schema, T.TimestampNTZType) else set()
    if contains_type(schema, T.VariantType):
        features.add("variantType")
    for field in _all_fields(schema):
        metadata = field.metadata or {}
        if not field.nullable or "delta.invariants" in metadata:
            features.add("invariants")  # Delta's NOT NULL is a column invariant
        if "delta.generationExpression" in metadata:
            features.add("generatedColumns")
        if any(k.startswith("delta.identity.") for k in metadata):
            features.add("identityColumns")
        if "CURRENT_DEFAULT" in metadata:
            features.add("allowColumnDefaults")
    return features


def _all_fields(dtype: T.DataType) -> Iterator[T.StructField]:
    for t in _all_types(dtype):
        if isinstance(t, T.StructType):
            yield from t.fields


def contains_type(dtype: T.DataType, kind: type[T.DataType]) -> bool:
    """Whether ``dtype`` is or holds (in a struct, array or map, at any depth) a ``kind``."""
    return any(isinstance(t, kind) for t in _all_types(dtype))


def _all_types(dtype: T.DataType) -> Iterator[T.DataType]:
    yield dtype
    if isinstance(dtype, T.StructType):
        for field in dtype.fields:
            yield from _all_types(field.dataType)
    elif isinstance(dtype, T.ArrayType):
        yield from _all_types(dtype.elementType)
    elif isinstance(dtype, T.MapType):
        yield from _all_types(dtype.keyType)
        yield from _all_types(dtype.valueType)


def find_field(schema: T.StructType, name: str) -> T.StructField | None:
    """The top-level field named ``name``, case-insensitively as Spark resolves it."""
    for field in schema.fields:
        if field.name.lower() == name.lower():
            return field
    return None
