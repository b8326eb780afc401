"""A Delta table's schema and partitioning as Iceberg's: the ids are the column-mapping ids.

Iceberg resolves a data file's columns by their parquet field ids; a Delta table with column mapping
writes each column's ``delta.columnMapping.id`` as its field id, so the Iceberg schema takes those
ids as its field ids (Delta's converter does the same, overwriting the ids Iceberg would assign).
The partition spec is an identity transform of each partition column (ids from 1000, Iceberg's
first partition field id). The name mapping (``schema.name-mapping.default``) resolves files
written without field ids by the physical names they hold.
"""

from __future__ import annotations

from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.name_mapping import MappedField, NameMapping
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
)
from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.errors import DeltaError
from dbt.adapters.deltamerge.delta.log.mapping import COLUMN_ID, physical_name

# Iceberg's first partition field id (the spec's ``1000``).
PARTITION_FIELD_START = 1000

_PRIMITIVES: dict[type, IcebergType] = {
    T.ByteType: IntegerType(),
    T.ShortType: IntegerType(),
    T.IntegerType: IntegerType(),
    T.LongType: LongType(),
    T.FloatType: FloatType(),
    T.DoubleType: DoubleType(),
    T.StringType: StringType(),
    T.BinaryType: BinaryType(),
    T.BooleanType: BooleanType(),
    T.DateType: DateType(),
    T.TimestampType: TimestamptzType(),
    T.TimestampNTZType: TimestampType(),
}


def iceberg_type(data_type: T.DataType) -> IcebergType:
    """Iceberg's type for a Delta column type (IcebergCompatV2's allow-list; ``compat`` refuses
    the others before anything is written).

    >>> iceberg_type(T.DecimalType(12, 2)), iceberg_type(T.TimestampType())
    (DecimalType(precision=12, scale=2), TimestamptzType())
    """
    if isinstance(data_type, T.DecimalType):
        return DecimalType(data_type.precision, data_type.scale)
    if isinstance(data_type, T.StructType):
        return StructType(*_fields(data_type))
    for kind, converted in _PRIMITIVES.items():
        if isinstance(data_type, kind):
            return converted
    raise DeltaError(f"type {data_type.simpleString()} has no Iceberg v2 type (a bug: compat refuses it)")


def _fields(schema: T.StructType) -> list[NestedField]:
    fields = []
    for f in schema.fields:
        if COLUMN_ID not in f.metadata:
            raise DeltaError(f"column `{f.name}` has no column-mapping id: the Iceberg schema needs one")
        fields.append(
            NestedField(int(f.metadata[COLUMN_ID]), f.name, iceberg_type(f.dataType), required=not f.nullable)
        )
    return fields


def iceberg_schema(schema: T.StructType, schema_id: int = 0) -> Schema:
    """The Iceberg schema of a Delta schema with column mapping (names logical, ids the mapping's).

    >>> s = T.StructType([T.StructField("k", T.LongType(), False, {COLUMN_ID: 1}),
    ...     T.StructField("d", T.StructType([T.StructField("x", T.ShortType(), True, {COLUMN_ID: 3})]),
    ...     True, {COLUMN_ID: 2})])
    >>> print(iceberg_schema(s))
    table {
      1: k: required long
      2: d: optional struct<3: x: optional int>
    }
    """
    return Schema(*_fields(schema), schema_id=schema_id)


def partition_spec(schema: T.StructType, partition_columns: list[str], spec_id: int = 0) -> PartitionSpec:
    """Identity partitioning by ``partition_columns`` (logical names), field ids from 1000."""
    by_name = {f.name: f for f in schema.fields}
    fields = [
        PartitionField(
            source_id=int(by_name[name].metadata[COLUMN_ID]),
            field_id=PARTITION_FIELD_START + i,
            transform=IdentityTransform(),
            name=name,
        )
        for i, name in enumerate(partition_columns)
    ]
    return PartitionSpec(*fields, spec_id=spec_id)


def name_mapping(schema: T.StructType) -> NameMapping:
    """Each field id's names in data files: the logical and the physical name (files without ids)."""
    return NameMapping(_mapped(schema))


def _mapped(schema: T.StructType) -> list[MappedField]:
    mapped = []
    for f in schema.fields:
        names = sorted({f.name, physical_name(f)})
        nested = _mapped(f.dataType) if isinstance(f.dataType, T.StructType) else []
        mapped.append(
            MappedField.model_validate(
                {"field_id": int(f.metadata[COLUMN_ID]), "names": names, "fields": nested}
            )
        )
    return mapped


def same_schema(a: Schema, b: Schema) -> bool:
    """Whether two Iceberg schemas have the same fields (ids, names, types), whatever their ids."""
    return a.fields == b.fields


def same_spec(a: PartitionSpec, b: PartitionSpec) -> bool:
    """Whether two partition specs partition the same way, whatever their ids."""
    return a.fields == b.fields
