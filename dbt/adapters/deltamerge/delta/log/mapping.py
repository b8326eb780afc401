"""Column mapping (PROTOCOL.md, "Column Mapping"): logical names in the schema, physical names in files.

A table with ``delta.columnMapping.mode = name`` keeps each column's (and nested field's) name in
its data files under ``delta.columnMapping.physicalName``; readers resolve the files' columns by
those names and return them under the schema's (logical) names. Partition values are the log's
(such tables need not keep Hive-style folders). ``id`` mode resolves the files' columns by
their parquet field ids (the schema's ``delta.columnMapping.id``), whatever their names; a file
without field ids is refused by Spark's reader, as the protocol asks.

Writers (PROTOCOL.md, "Writer Requirements for Column Mapping") write data files under the
physical names with each column's id as the parquet ``field_id``, key partition values and
statistics by physical name, and give every new column a fresh id (above
``delta.columnMapping.maxColumnId``, which the table's properties carry) and a physical name
unique across the table's versions (``col-<uuid>``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from pyspark.sql import types as T

MAPPING_MODE = "delta.columnMapping.mode"
PHYSICAL_NAME = "delta.columnMapping.physicalName"
COLUMN_ID = "delta.columnMapping.id"
MAX_COLUMN_ID = "delta.columnMapping.maxColumnId"
# The StructField metadata key Spark writes as a parquet field_id.
FIELD_ID = "parquet.field.id"


def mapping_mode(configuration: Mapping[str, str]) -> str:
    """``none``, ``name`` or ``id`` (``none`` when the property is absent)."""
    return str(configuration.get(MAPPING_MODE, "none")).lower()


def physical_type(data_type: T.DataType, *, ids: bool = False) -> T.DataType:
    """``data_type`` with every struct field named by its physical name (nested ones too); with
    ``ids``, each carrying its column id as the parquet field id (writes, and reads in mode ``id``).

    >>> inner = T.StructType([T.StructField("d", T.IntegerType(), True, {PHYSICAL_NAME: "col-d"})])
    >>> physical_type(T.ArrayType(inner)).simpleString()
    'array<struct<col-d:int>>'
    """
    if isinstance(data_type, T.StructType):
        return T.StructType(
            [
                T.StructField(
                    physical_name(f),
                    physical_type(f.dataType, ids=ids),
                    f.nullable,
                    field_id(f) if ids else {},
                )
                for f in data_type.fields
            ]
        )
    if isinstance(data_type, T.ArrayType):
        return T.ArrayType(physical_type(data_type.elementType, ids=ids), data_type.containsNull)
    if isinstance(data_type, T.MapType):
        key, value = physical_type(data_type.keyType, ids=ids), physical_type(data_type.valueType, ids=ids)
        return T.MapType(key, value, data_type.valueContainsNull)
    return data_type


def physical_name(field: T.StructField) -> str:
    """The name of ``field``'s column in the data files."""
    return str(field.metadata.get(PHYSICAL_NAME, field.name))


def field_id(field: T.StructField) -> dict[str, int]:
    """The StructField metadata giving ``field``'s column id as its parquet field id (none without one)."""
    return {FIELD_ID: int(field.metadata[COLUMN_ID])} if COLUMN_ID in field.metadata else {}


def physical_names(schema: T.StructType) -> dict[str, str]:
    """Each top-level column's physical name by its logical name."""
    return {f.name: physical_name(f) for f in schema.fields}


def with_column_mapping(
    schema: T.StructType, previous: T.StructType | None, max_column_id: int
) -> tuple[T.StructType, int]:
    """``schema`` with a column id and physical name on every field (nested ones too), and the new
    ``maxColumnId``.

    A field ``previous`` has (same name, case-insensitively) keeps its id and physical name; one
    that had none (the table had no column mapping) keeps its name as its physical name, as its
    data files hold it; any other field is new: the next id, and ``col-<uuid>``.

    >>> s = T.StructType([T.StructField("a", T.IntegerType()), T.StructField("b b", T.IntegerType())])
    >>> mapped, top = with_column_mapping(s, T.StructType(s.fields[:1]), 0)
    >>> top, mapped.fields[0].metadata[PHYSICAL_NAME], mapped.fields[1].metadata[PHYSICAL_NAME][:4]
    (2, 'a', 'col-')
    """
    counter = [max_column_id]
    mapped = _mapped_type(schema, previous, counter)
    assert isinstance(mapped, T.StructType)
    return mapped, counter[0]


def _mapped_type(data_type: T.DataType, previous: T.DataType | None, counter: list[int]) -> T.DataType:
    if isinstance(data_type, T.StructType):
        known = {f.name.lower(): f for f in previous.fields} if isinstance(previous, T.StructType) else {}
        return T.StructType([_mapped_field(f, known.get(f.name.lower()), counter) for f in data_type.fields])
    if isinstance(data_type, T.ArrayType):
        before = previous.elementType if isinstance(previous, T.ArrayType) else None
        return T.ArrayType(_mapped_type(data_type.elementType, before, counter), data_type.containsNull)
    if isinstance(data_type, T.MapType):
        keys = previous.keyType if isinstance(previous, T.MapType) else None
        values = previous.valueType if isinstance(previous, T.MapType) else None
        return T.MapType(
            _mapped_type(data_type.keyType, keys, counter),
            _mapped_type(data_type.valueType, values, counter),
            data_type.valueContainsNull,
        )
    return data_type


def _mapped_field(field: T.StructField, previous: T.StructField | None, counter: list[int]) -> T.StructField:
    metadata = dict(field.metadata or {})
    if previous is not None and COLUMN_ID in previous.metadata:
        metadata[COLUMN_ID] = previous.metadata[COLUMN_ID]
        metadata[PHYSICAL_NAME] = previous.metadata.get(PHYSICAL_NAME, previous.name)
    elif previous is not None:
        counter[0] += 1
        metadata[COLUMN_ID], metadata[PHYSICAL_NAME] = counter[0], previous.name
    elif COLUMN_ID not in metadata:
        counter[0] += 1
        metadata[COLUMN_ID], metadata[PHYSICAL_NAME] = counter[0], f"col-{uuid.uuid4()}"
    counter[0] = max(counter[0], int(metadata[COLUMN_ID]))
    inner = _mapped_type(field.dataType, previous.dataType if previous else None, counter)
    return T.StructField(field.name, inner, field.nullable, metadata)


def logical_stats(values: Mapping[str, object], schema: T.StructType) -> dict[str, object]:
    """Statistics keyed by physical names (as the log keeps them) keyed by the schema's names,
    nested ones too; a key no column has (a dropped column's) is left out.

    >>> field = T.StructField("a b", T.IntegerType(), True, {PHYSICAL_NAME: "col-1"})
    >>> logical_stats({"col-1": 3, "col-9": 1}, T.StructType([field]))
    {'a b': 3}
    """
    found: dict[str, object] = {}
    for field in schema.fields:
        value = values.get(physical_name(field))
        if value is None:
            continue
        if isinstance(value, Mapping) and isinstance(field.dataType, T.StructType):
            value = logical_stats(value, field.dataType)
        found[field.name] = value
    return found
