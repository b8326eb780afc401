"""Per-file statistics for ``add.stats``, read from the parquet footer of a written file.

Delta's stats are ``numRecords`` and, per leaf column of the first
``delta.dataSkippingNumIndexedCols`` (default 32) data columns, ``minValues``,
``maxValues`` and ``nullCount``. A min or max must be a true bound (readers skip files
with it), so when a value cannot be represented exactly we widen it or leave it out.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow.parquet as pq
from pyspark.sql import types as T

STRING_PREFIX_LENGTH = 32
DEFAULT_NUM_INDEXED_COLS = 32
_NO_MIN_MAX = (T.BooleanType, T.BinaryType)
_MAX_CHAR = 0x10FFFF


def indexed_leaves(
    schema: T.StructType, num_indexed_cols: int = DEFAULT_NUM_INDEXED_COLS
) -> list[tuple[tuple[str, ...], T.DataType]]:
    """Leaf columns that get statistics: structs are descended, arrays, maps and variants are not
    (a variant's min / max need variant shredding; its parquet leaves are not the column's values).

    >>> a = T.StructField("a", T.IntegerType())
    >>> b = T.StructField("b", T.ArrayType(T.IntegerType()))
    >>> [p for p, _ in indexed_leaves(T.StructType([a, b]))]
    [('a',)]
    """
    leaves = list(_leaves(schema, ()))
    if num_indexed_cols >= 0:
        leaves = leaves[:num_indexed_cols]
    return [(path, t) for path, t in leaves if not isinstance(t, (T.ArrayType, T.MapType, T.VariantType))]


def columns_with_stats(schema: T.StructType, configuration: Mapping[str, str]) -> set[str]:
    """Top-level columns (lower case) that get statistics under ``delta.dataSkippingNumIndexedCols``.

    >>> sorted(columns_with_stats(T.StructType([T.StructField("A", T.IntegerType())]), {}))
    ['a']
    """
    num_indexed = int(configuration.get("delta.dataSkippingNumIndexedCols", DEFAULT_NUM_INDEXED_COLS))
    return {path[0].lower() for path, _ in indexed_leaves(schema, num_indexed) if len(path) == 1}


def _leaves(dtype: T.StructType, prefix: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], T.DataType]]:
    for field in dtype.fields:
        if isinstance(field.dataType, T.StructType):
            yield from _leaves(field.dataType, (*prefix, field.name))
        else:
            yield (*prefix, field.name), field.dataType


def stats_from_metadata(
    metadata: pq.FileMetaData,
    data_schema: T.StructType,
    num_indexed_cols: int = DEFAULT_NUM_INDEXED_COLS,
) -> dict[str, Any]:
    """The ``stats`` object for one parquet file given its footer and the table's data schema."""
    chunks = _column_chunks(metadata)
    stats: dict[str, Any] = {"numRecords": metadata.num_rows}
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    for path, dtype in indexed_leaves(data_schema, num_indexed_cols):
        found = chunks.get(".".join(path))
        if found is None:
            # The column is absent from this file: every value reads as null.
            _put(nulls, path, metadata.num_rows)
            continue
        null_count, low, high = _combine(found, metadata.num_rows)
        if null_count is not None:
            _put(nulls, path, null_count)
        if isinstance(dtype, _NO_MIN_MAX) or low is None or high is None:
            continue
        lo, hi = lower_bound(low, dtype), upper_bound(high, dtype)
        if lo is not None and hi is not None:
            _put(mins, path, lo)
            _put(maxs, path, hi)
    stats.update(minValues=mins, maxValues=maxs, nullCount=nulls)
    return stats


def _column_chunks(metadata: pq.FileMetaData) -> dict[str, list[Any]]:
    by_path: dict[str, list[Any]] = {}
    for rg in range(metadata.num_row_groups):
        group = metadata.row_group(rg)
        for col in range(group.num_columns):
            chunk = group.column(col)
            by_path.setdefault(chunk.path_in_schema, []).append(chunk.statistics)
    return by_path


def _combine(chunk_stats: list[Any], num_rows: int) -> tuple[int | None, Any, Any]:
    if num_rows == 0:
        return 0, None, None
    null_count: int | None = 0
    low = high = None
    complete = True
    for st in chunk_stats:
        if st is None:
            return None, None, None
        if null_count is not None:
            null_count = null_count + st.null_count if st.has_null_count else None
        if st.num_values == 0:
            continue  # an all-null row group has no min/max and needs none
        try:
            bounds = (st.min, st.max) if st.has_min_max else None
        except (OverflowError, ValueError):  # a timestamp past year 9999: no Python value for it
            bounds = None
        if bounds is None:
            complete = False  # no min/max for this column of the file: readers read it, never skip it
            continue
        low = bounds[0] if low is None else min(low, bounds[0])
        high = bounds[1] if high is None else max(high, bounds[1])
    if not complete:
        return null_count, None, None
    return null_count, low, high


def _put(target: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for step in path[:-1]:
        target = target.setdefault(step, {})
    target[path[-1]] = value


def lower_bound(value: Any, dtype: T.DataType) -> Any:
    """A JSON value <= ``value`` in Delta's stats encoding, or None if there is none."""
    return _encode(value, dtype, upper=False)


def upper_bound(value: Any, dtype: T.DataType) -> Any:
    """A JSON value >= ``value`` in Delta's stats encoding, or None if there is none."""
    return _encode(value, dtype, upper=True)


def _encode(value: Any, dtype: T.DataType, *, upper: bool) -> Any:
    if isinstance(dtype, (T.FloatType, T.DoubleType)):
        return float(value) if math.isfinite(value) else None
    if isinstance(dtype, T.DecimalType):
        return decimal.Decimal(value)
    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return int(value)
    if isinstance(dtype, T.StringType):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        return _string_bound(text, upper=upper)
    if isinstance(dtype, T.DateType):
        return value.isoformat() if isinstance(value, dt.date) else None
    if isinstance(dtype, (T.TimestampType, T.TimestampNTZType)):
        return _timestamp_bound(value, utc=isinstance(dtype, T.TimestampType), upper=upper)
    return None


def _string_bound(text: str, *, upper: bool) -> str | None:
    if len(text) <= STRING_PREFIX_LENGTH:
        return text
    prefix = text[:STRING_PREFIX_LENGTH]
    if not upper:
        return prefix
    # Every string starting with `prefix` sorts below prefix[:-1] + next(prefix[-1]).
    last = ord(prefix[-1])
    if last >= _MAX_CHAR or 0xD7FF <= last < 0xE000:
        return None
    return prefix[:-1] + chr(last + 1)


def _timestamp_bound(value: Any, *, utc: bool, upper: bool) -> str | None:
    if not isinstance(value, dt.datetime):
        return None
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    # Delta writes milliseconds; round the max up so it stays an upper bound.
    micros = value.microsecond % 1000
    value = value - dt.timedelta(microseconds=micros)
    if upper and micros:
        value += dt.timedelta(milliseconds=1)
    text = value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}"
    return text + "Z" if utc else text


_DECIMAL_MARK = re.compile(r'"\\u0000dec:([-0-9.Ee+]+)"')


def stats_to_json(stats: dict[str, Any]) -> str:
    """Serialize stats; decimals become exact JSON numbers, not floats.

    >>> stats_to_json({"minValues": {"d": decimal.Decimal("12.30")}})
    '{"minValues":{"d":12.30}}'
    """
    text = json.dumps(
        stats,
        separators=(",", ":"),
        default=lambda o: f"\0dec:{o}" if isinstance(o, decimal.Decimal) else str(o),
    )
    return _DECIMAL_MARK.sub(r"\1", text)
