"""Z-order: rows ordered by Delta's interleaved bits of their columns' range ids (OPTIMIZE ZORDER BY).

As Delta's ``ZOrderClustering``: each Z-order column's value becomes its range id (the number of
quantile boundaries at or below it, nulls lowest), the ids' bits are interleaved into one
number (the Z-value), and each bin's rows are range-partitioned by it into the bin's output
files. Files then hold narrow ranges of every Z-ordered column, so data skipping prunes by each.

Delta's ``range_partition_id`` is a Spark expression of its own jars, and range partitioning
samples its whole input in a Spark job of its own. Here one small job samples the Z-order
columns' monotone numeric keys (strings by their first 7 UTF-8 bytes) of every bin; the driver
takes the columns' quantile boundaries and, from the sample's Z-values, each bin's file
boundaries. The write computes each row's Z-value and file in SQL (balanced searches over the
boundaries) and shuffles it straight to its file's partition (a partition key whose hash is that
partition, found by a tiny job), so the rows are read once and shuffled once. The file of a row
depends on its values only: a retried Spark task places every row where the first did.
The SQL is built by the pure functions below (unit-tested without Spark).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta.errors import DeltaError

# Most bits of a column's range id (Delta: spark.databricks.io.skipping.mdc.rangeId.max = 1000
# ranges); fewer when the files are few: file-level skipping needs a few bits more than a file
# count's share, and each bit is one level of the search a row's range id takes.
MAX_BITS = 8
_SAMPLE_ROWS = 100_000
_KEY, _Z, _FILE = "__deltamerge_zkey_", "__deltamerge_z", "__deltamerge_zfile"
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


def range_id(key_sql: str, boundaries: Sequence[float], labels: Sequence[int] | None = None) -> str:
    """SQL of the number of ``boundaries`` (sorted) at or below the key (null keys: 0), or that
    number's entry of ``labels``.

    >>> range_id("k", [])
    '0'
    >>> range_id("k", [10.0])
    'CASE WHEN k IS NULL THEN 0 WHEN k < 10.0D THEN 0 ELSE 1 END'
    >>> range_id("k", [1.0, 2.0, 3.0]).count("CASE")
    3
    >>> range_id("k", [5.0], labels=[7, 9])
    'CASE WHEN k IS NULL THEN 7 WHEN k < 5.0D THEN 7 ELSE 9 END'
    """
    names = list(labels) if labels is not None else list(range(len(boundaries) + 1))
    if not boundaries:
        return str(names[0])

    def search(low: int, high: int) -> str:
        if low == high:
            return str(names[low])
        middle = (low + high) // 2
        below, above = search(low, middle), search(middle + 1, high)
        return f"CASE WHEN {key_sql} < {boundaries[middle]!r}D THEN {below} ELSE {above} END"

    inner = search(0, len(boundaries))
    return f"CASE WHEN {key_sql} IS NULL THEN {names[0]} WHEN {inner[len('CASE WHEN ') :]}"


def bits_per_column(columns: int, files: int = 2**16) -> int:
    """Bits of each column's range id: enough for ``files`` files (4 more than a column's share of
    their count's bits, ``MAX_BITS`` at most), all of them in a long.

    >>> bits_per_column(2), bits_per_column(2, files=60), bits_per_column(9)
    (8, 7, 6)
    """
    share = math.ceil(math.log2(max(2, files)) / max(1, columns))
    return max(1, min(MAX_BITS, share + 4, 63 // max(1, columns)))


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


def z_value(keys: Sequence[float | None], boundaries: Sequence[Sequence[float]], bits: int) -> int:
    """The Z-value ``interleave`` of ``range_id`` computes for one row's keys, in Python.

    >>> z_value([5.0, 0.0], [[1.0, 9.0], [1.0]], 2)  # range ids 1 (01) and 0 (00): bits a1 b1 a0 b0
    2
    >>> z_value([None, 2.0], [[1.0], [1.0]], 1)
    1
    """
    ids = [0 if key is None else bisect.bisect_right(b, key) for key, b in zip(keys, boundaries, strict=True)]
    k, z = len(ids), 0
    for bit in range(bits - 1, -1, -1):
        for i, rank in enumerate(ids):
            z |= ((rank >> bit) & 1) << (bit * k + (k - 1 - i))
    return z


def usable_boundaries(values: Sequence[float | None], most: int) -> list[float]:
    """Up to ``most`` boundaries splitting ``values`` into equal parts (distinct, finite).

    >>> usable_boundaries([3.0, 1.0, 1.0, None, float("nan")], 255)
    [1.0, 3.0]
    >>> usable_boundaries([float(i) for i in range(10)], 3)
    [2.0, 5.0, 7.0]
    """
    finite = sorted(v for v in values if v is not None and math.isfinite(v))
    if not finite:
        return []
    if len(set(finite)) <= most:
        return sorted(set(finite))
    cuts = {finite[min(len(finite) - 1, (i * len(finite)) // (most + 1))] for i in range(1, most + 1)}
    return sorted(cuts)


@dataclass(frozen=True)
class ZOrderBin:
    """Rows of one bin, written as ``files`` files ordered by their Z-values; ``rows``: how many
    (from the files' statistics; None if unknown)."""

    frame: DataFrame
    files: int
    rows: int | None


def zordered(spark: SparkSession, bins: Sequence[ZOrderBin], columns: Sequence[str]) -> DataFrame:
    """Every bin's rows, in one partition per output file (a bin's files in Z-value ranges)."""
    total = sum(b.files for b in bins)
    frames = [_keyed(b.frame, columns) for b in bins]
    samples = _samples(frames, bins, len(columns))
    bits = bits_per_column(len(columns), max(b.files for b in bins))
    boundaries = [
        usable_boundaries([row[i] for s in samples for row in s], 2**bits - 1) for i in range(len(columns))
    ]
    keys = partition_keys(spark, total)
    placed, offset = [], 0
    z_sql = interleave([range_id(quote_identifier(f"{_KEY}{i}"), b) for i, b in enumerate(boundaries)], bits)
    for frame, zbin, sample in zip(frames, bins, samples, strict=True):
        sampled_z = [float(z_value(row, boundaries, bits)) for row in sample]
        cuts = usable_boundaries(sampled_z, zbin.files - 1) if zbin.files > 1 else []
        labels = keys[offset : offset + len(cuts) + 1]
        offset += zbin.files
        with_z = frame.withColumn(_Z, F.expr(z_sql))  # a column: the file's search reads it, not its SQL
        placed.append(with_z.withColumn(_FILE, F.expr(range_id(_Z, cuts, labels))))
    together = reduce(DataFrame.unionAll, placed).repartition(total, F.col(_FILE))
    return together.drop(_FILE, _Z, *[f"{_KEY}{i}" for i in range(len(columns))])


def _keyed(rows: DataFrame, columns: Sequence[str]) -> DataFrame:
    kinds = {f.name: f.dataType for f in rows.schema.fields}
    keys = [
        F.expr(order_key(quote_identifier(c), kinds[c])).alias(f"{_KEY}{i}") for i, c in enumerate(columns)
    ]
    return rows.select("*", *keys)


def _samples(frames: Sequence[DataFrame], bins: Sequence[ZOrderBin], count: int) -> list[list[tuple]]:
    """Up to ``_SAMPLE_ROWS`` rows' keys of each bin (one Spark job for all bins)."""
    names = [f"{_KEY}{i}" for i in range(count)]
    parts = []
    for index, (frame, zbin) in enumerate(zip(frames, bins, strict=True)):
        fraction = min(1.0, _SAMPLE_ROWS / zbin.rows) if zbin.rows else 0.05
        sampled = frame.select(F.lit(index).alias("bin"), *names)
        parts.append(sampled.sample(fraction=fraction, seed=17) if fraction < 1.0 else sampled)
    found: list[list[tuple]] = [[] for _ in bins]
    for row in reduce(DataFrame.unionAll, parts).collect():
        found[row["bin"]].append(tuple(row[n] for n in names))
    return found


def partition_keys(spark: SparkSession, partitions: int) -> list[int]:
    """For each of ``partitions`` shuffle partitions, an int whose hash partitioning (Spark's
    Murmur3 hash, modulo the partitions) sends rows to it: one tiny Spark job."""
    keys: dict[int, int] = {}
    span = 16 * partitions
    while len(keys) < partitions:
        candidates = spark.range(span - 16 * partitions, span).select(
            F.col("id").cast("int").alias("k"),
            F.pmod(F.hash(F.col("id").cast("int")), F.lit(partitions)).alias("p"),
        )
        for row in candidates.collect():
            keys.setdefault(row["p"], row["k"])
        span += 16 * partitions
    return [keys[p] for p in range(partitions)]
