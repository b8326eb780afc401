"""A Delta ``add`` action as an Iceberg data file: path, partition tuple, counts and bounds.

Built from the log alone (no parquet footer is read): the record count is the ``add``'s
``numRecords``, the size its ``size``, the null counts and bounds its statistics keyed by physical
name, each put under the column's field id. A bound is given only where Delta's statistic is the
exact value Iceberg's bound means: integers, dates and strings shorter than Delta's truncation
(32 characters); timestamps (Delta keeps milliseconds), floating point and decimals have none, so
no reader skips a file by a bound that is not one.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from pyiceberg.conversions import to_bytes
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.typedef import Record
from pyiceberg.types import (
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    PrimitiveType,
    StringType,
    TimestampType,
    TimestamptzType,
)
from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.log.mapping import COLUMN_ID, physical_name
from dbt.adapters.deltamerge.delta.paths import local_path

_EPOCH = dt.date(1970, 1, 1)
_STRING_TRUNCATION = 32  # Delta's statistics truncate strings at 32 characters


def data_file(
    add: Mapping[str, Any], *, root: str, schema: T.StructType, iceberg: Schema, spec: PartitionSpec
) -> DataFile:
    """The Iceberg data file of an ``add`` of the Delta table at ``root`` (``schema``: the Delta
    schema in effect, with column mapping; ``iceberg``/``spec``: the table's Iceberg schema and spec)."""
    stats = json.loads(add.get("stats") or "{}")
    records = stats.get("numRecords")
    if records is None:
        raise ValueError(f"add {add['path']} has no numRecords (IcebergCompatV2 asks every add for it)")
    values, nulls, lower, upper = _metrics(schema, stats, int(records))
    return DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=local_path(root, str(add["path"])),
        file_format=FileFormat.PARQUET,
        partition=partition_record(add.get("partitionValues") or {}, schema, iceberg, spec),
        record_count=int(records),
        file_size_in_bytes=int(add["size"]),
        value_counts=values,
        null_value_counts=nulls,
        lower_bounds=lower,
        upper_bounds=upper,
    )


def partition_record(
    values: Mapping[str, str | None], schema: T.StructType, iceberg: Schema, spec: PartitionSpec
) -> Record:
    """The partition tuple of a file whose ``partitionValues`` (by physical name) are ``values``."""
    by_id = {int(f.metadata[COLUMN_ID]): physical_name(f) for f in schema.fields if COLUMN_ID in f.metadata}
    converted = []
    for field in spec.fields:
        text = values.get(by_id[field.source_id])
        converted.append(partition_value(iceberg.find_type(field.source_id), text))
    return Record(*converted)


def partition_value(kind: IcebergType, text: str | None) -> Any:
    """A Delta partition value's text as Iceberg's internal value of ``kind``.

    >>> partition_value(DateType(), "2026-12-07"), partition_value(LongType(), "-3")
    (20794, -3)
    >>> partition_value(TimestampType(), "2026-12-07 10:00:00.5"), partition_value(StringType(), None)
    (1796637600500000, None)
    """
    if text is None:
        return None
    if isinstance(kind, (IntegerType, LongType)):
        return int(text)
    if isinstance(kind, DateType):
        return (dt.date.fromisoformat(text) - _EPOCH).days
    if isinstance(kind, (TimestampType, TimestamptzType)):
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=dt.timezone.utc)
        delta = moment - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(kind, BooleanType):
        return text.lower() == "true"
    if isinstance(kind, (FloatType, DoubleType)):
        return float(text)
    if isinstance(kind, DecimalType):
        return Decimal(text)
    return text


def _metrics(
    schema: T.StructType, stats: Mapping[str, Any], records: int
) -> tuple[dict[int, int], dict[int, int], dict[int, bytes], dict[int, bytes]]:
    values: dict[int, int] = {}
    nulls: dict[int, int] = {}
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}

    def visit(fields: list[T.StructField], mins: Any, maxs: Any, counts: Any) -> None:
        for f in fields:
            key = physical_name(f)
            low, high, count = (_get(part, key) for part in (mins, maxs, counts))
            if isinstance(f.dataType, T.StructType):
                visit(f.dataType.fields, low, high, count)
                continue
            field_id = int(f.metadata[COLUMN_ID])
            if isinstance(count, int):
                nulls[field_id] = count
                values[field_id] = records
            kind = _leaf_type(f.dataType)
            if kind is not None and low is not None and high is not None:
                bounds = _bound(kind, low), _bound(kind, high)
                if bounds[0] is not None and bounds[1] is not None:
                    lower[field_id], upper[field_id] = bounds  # type: ignore[assignment]

    visit(schema.fields, stats.get("minValues"), stats.get("maxValues"), stats.get("nullCount"))
    return values, nulls, lower, upper


def _get(part: Any, key: str) -> Any:
    return part.get(key) if isinstance(part, dict) else None


def _leaf_type(data_type: T.DataType) -> PrimitiveType | None:
    """The Iceberg type whose bound the Delta statistic gives exactly (None: no bound)."""
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType)):
        return IntegerType()
    if isinstance(data_type, T.LongType):
        return LongType()
    if isinstance(data_type, T.DateType):
        return DateType()
    if isinstance(data_type, T.StringType):
        return StringType()
    return None


def _bound(kind: PrimitiveType, value: Any) -> bytes | None:
    """The bound's Iceberg single-value serialization (None where the statistic is not exact).

    >>> _bound(StringType(), "abc"), _bound(StringType(), "x" * 32), _bound(DateType(), "1970-01-02")
    (b'abc', None, b'\\x01\\x00\\x00\\x00')
    """
    if isinstance(kind, StringType):
        text = str(value)
        return text.encode("utf-8") if len(text) < _STRING_TRUNCATION else None
    if isinstance(kind, DateType):
        return to_bytes(kind, (dt.date.fromisoformat(str(value)[:10]) - _EPOCH).days)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return to_bytes(kind, value)
