"""Z-order: rows ordered by Delta's interleaved bits of their columns' range ids (OPTIMIZE ZORDER BY).

As Delta's ``ZOrderClustering``: each Z-order column's value becomes its range id (the number of
quantile boundaries at or below it, nulls lowest), the ids' bits are interleaved into one
number, and the rows are range-partitioned by it into the bin's output files. Files then hold
narrow ranges of every Z-ordered column, so data skipping prunes by each of them.

Delta's ``range_partition_id`` is a Spark expression of its own jars; here each column gets a
monotone numeric key (strings by their first 7 UTF-8 bytes), one aggregate job finds the
keys' quantiles (``percentile_approx``), and the range id is a balanced search over them in
SQL (depth log2 of the ranges). Delta's random tie-breaking byte is a hash of the Z-order
columns here: deterministic, so a retried Spark task places every row where the first did.
The SQL is built by the pure functions below (unit-tested without Spark).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta.errors import DeltaError

# Ranges per column (Delta: spark.databricks.io.skipping.mdc.rangeId.max = 1000): 8 bits each,
# finer than any file layout needs and a search of depth 8.
RANGES = 256
_NOISE_BITS = 8
_KEY, _Z = "__deltamerge_zkey_", "__deltamerge_z"
_NUMERIC = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType, T.DecimalType)


class ZOrderError(DeltaError):
    """A Z-order column Delta cannot order by (missing, a partition column, no statistics, a type)."""


def order_key(column_sql: str, kind: T.DataType) -> str:
    """SQL of a number that orders like the column (equal prefixes tie for strings and binaries).

    >>> order_key("`a`", T.IntegerType())
    'CAST(`a` AS DOUBLE)'
    >>> order_key("`d`", T.DateType())
    'CAST(unix_date(`d`) AS DOUBLE)'
    >>> order_key("`s`", T.StringType())
    "CAST(conv(rpad(hex(substring(encode(`s`, 'UTF-8'), 1, 7)), 14, '0'), 16, 10) AS DOUBLE)"
    """
    if isinstance(kind, _NUMERIC):
        return f"CAST({column_sql} AS DOUBLE)"
    if isinstance(kind, T.BooleanType):
        return f"CAST(CAST({column_sql} AS INT) AS DOUBLE)"
    if isinstance(kind, T.DateType):
        return f"CAST(unix_date({column_sql}) AS DOUBLE)"
    if isinstance(kind, T.TimestampType):
        return f"CAST(unix_micros({column_sql}) AS DOUBLE)"
    if isinstance(kind, T.TimestampNTZType):
        return f"CAST(unix_micros(CAST({column_sql} AS TIMESTAMP)) AS DOUBLE)"
    if isinstance(kind, (T.StringType, T.BinaryType)):
        # The first 7 bytes, big-endian: byte order is Spark's string order (UTF-8 binary order).
        raw = f"encode({column_sql}, 'UTF-8')" if isinstance(kind, T.StringType) else column_sql
        return f"CAST(conv(rpad(hex(substring({raw}, 1, 7)), 14, '0'), 16, 10) AS DOUBLE)"
    raise ZOrderError(f"Z-Ordering on a column of type {kind.simpleString()} is not supported")


def range_id(key_sql: str, boundaries: Sequence[float]) -> str:
    """SQL of the number of ``boundaries`` (sorted) at or below the key; null keys are 0.

    >>> range_id("k", [])
    '0'
    >>> range_id("k", [10.0])
    'CASE WHEN k IS NULL THEN 0 WHEN k < 10.0D THEN 0 ELSE 1 END'
    >>> range_id("k", [1.0, 2.0, 3.0]).count("CASE")
    3
    """
    if not boundaries:
        return "0"

    def search(low: int, high: int) -> str:
        if low == high:
            return str(low)
        middle = (low + high) // 2
        below, above = search(low, middle), search(middle + 1, high)
        return f"CASE WHEN {key_sql} < {boundaries[middle]!r}D THEN {below} ELSE {above} END"

    inner = search(0, len(boundaries))
    return f"CASE WHEN {key_sql} IS NULL THEN 0 WHEN {inner[len('CASE WHEN ') :]}"


def bits_per_column(columns: int) -> int:
    """Bits of each column's range id in the interleaved value (a long: 63 bits, 8 of them noise).

    >>> bits_per_column(2), bits_per_column(7)
    (8, 7)
    """
    return min(int(math.log2(RANGES)), (63 - _NOISE_BITS) // max(1, columns))


def interleave(ids_sql: Sequence[str], bits: int) -> str:
    """SQL interleaving the low ``bits`` of each id, the first column's bit highest in each group.

    >>> interleave(["a", "b"], 1)
    'shiftleft(CAST(shiftright(a, 0) & 1 AS BIGINT), 1) | shiftleft(CAST(shiftright(b, 0) & 1 AS BIGINT), 0)'
    """
    k = len(ids_sql)
    terms = [
        f"shiftleft(CAST(shiftright({sql}, {bit}) & 1 AS BIGINT), {bit * k + (k - 1 - i)})"
        for bit in range(bits - 1, -1, -1)
        for i, sql in enumerate(ids_sql)
    ]
    return " | ".join(terms)


def usable_boundaries(quantiles: Sequence[float | None], bits: int) -> list[float]:
    """The distinct finite quantiles, at most ``2**bits - 1`` of them (evenly thinned).

    >>> usable_boundaries([3.0, 1.0, 1.0, None, float("nan")], 8)
    [1.0, 3.0]
    >>> usable_boundaries([float(i) for i in range(10)], 2)
    [0.0, 3.0, 6.0]
    """
    distinct = sorted({q for q in quantiles if q is not None and math.isfinite(q)})
    most = 2**bits - 1
    if len(distinct) <= most:
        return distinct
    step = len(distinct) / most
    return [distinct[int(i * step)] for i in range(most)]


def zorder_boundaries(rows: DataFrame, columns: Sequence[str]) -> list[list[float]]:
    """Each column's range boundaries over ``rows``: one aggregate job for all columns."""
    kinds = {f.name: f.dataType for f in rows.schema.fields}
    fractions = F.array(*[F.lit(i / RANGES) for i in range(1, RANGES)])
    aggregates = [
        F.percentile_approx(F.expr(order_key(quote_identifier(c), kinds[c])), fractions, 10000).alias(f"q{i}")
        for i, c in enumerate(columns)
    ]
    found = rows.agg(*aggregates).collect()[0]
    bits = bits_per_column(len(columns))
    return [usable_boundaries(found[f"q{i}"] or [], bits) for i in range(len(columns))]


def zordered(
    rows: DataFrame, columns: Sequence[str], boundaries: Sequence[Sequence[float]], files: int
) -> DataFrame:
    """``rows`` range-partitioned into ``files`` partitions by their Z-order value."""
    if files <= 1:
        return rows.coalesce(1)
    kinds = {f.name: f.dataType for f in rows.schema.fields}
    bits = bits_per_column(len(columns))
    keyed = rows.select(
        "*",
        *[
            F.expr(order_key(quote_identifier(c), kinds[c])).alias(f"{_KEY}{i}")
            for i, c in enumerate(columns)
        ],
    )
    ids = [range_id(quote_identifier(f"{_KEY}{i}"), b) for i, b in enumerate(boundaries)]
    noise = f"pmod(xxhash64({', '.join(quote_identifier(c) for c in columns)}), {2**_NOISE_BITS})"
    value = F.expr(f"shiftleft({interleave(ids, bits)}, {_NOISE_BITS}) | {noise}")
    ordered = keyed.withColumn(_Z, value).repartitionByRange(files, F.col(_Z))
    return ordered.drop(_Z, *[f"{_KEY}{i}" for i in range(len(columns))])
