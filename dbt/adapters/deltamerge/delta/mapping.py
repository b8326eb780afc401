"""Column mapping (PROTOCOL.md, "Column Mapping"): logical names in the schema, physical names in files.

A table with ``delta.columnMapping.mode = name`` keeps each column's (and nested field's) name in
its data files under ``delta.columnMapping.physicalName``; readers resolve the files' columns by
those names and return them under the schema's (logical) names. Partition values are the log's
(such tables need not keep Hive-style folders). ``id`` mode resolves by parquet field ids: not
read by this version (refused by name, ``protocol.reader_problems``).
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import types as T

PHYSICAL_NAME = "delta.columnMapping.physicalName"


def mapping_mode(configuration: Mapping[str, str]) -> str:
    """``none``, ``name`` or ``id`` (``none`` when the property is absent)."""
    return str(configuration.get("delta.columnMapping.mode", "none")).lower()


def physical_type(data_type: T.DataType) -> T.DataType:
    """``data_type`` with every struct field named by its physical name (nested ones too).

    >>> inner = T.StructType([T.StructField("d", T.IntegerType(), True, {PHYSICAL_NAME: "col-d"})])
    >>> physical_type(T.ArrayType(inner)).simpleString()
    'array<struct<col-d:int>>'
    """
    if isinstance(data_type, T.StructType):
        return T.StructType(
            [T.StructField(physical_name(f), physical_type(f.dataType), f.nullable) for f in data_type.fields]
        )
    if isinstance(data_type, T.ArrayType):
        return T.ArrayType(physical_type(data_type.elementType), data_type.containsNull)
    if isinstance(data_type, T.MapType):
        key, value = physical_type(data_type.keyType), physical_type(data_type.valueType)
        return T.MapType(key, value, data_type.valueContainsNull)
    return data_type


def physical_name(field: T.StructField) -> str:
    """The name of ``field``'s column in the data files."""
    return str(field.metadata.get(PHYSICAL_NAME, field.name))
