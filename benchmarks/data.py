"""Deterministic benchmark data: the base tables and the merge sources.

Every value is a pure function of the row's key (Spark's ``xxhash64`` with a fixed
seed), so two runs of the harness, on any machine, merge the same rows. Table keys are
the even numbers ``0, 2, ..., 2(n-1)``: odd keys are free for interleaved inserts and
keys past ``2n`` for inserts beyond the maximum. ``spark.range`` with one partition per
file writes each file as one contiguous key range, like a table built up over time.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

KEY = "id"
STATUSES = ("placed", "paid", "shipped", "delivered", "cancelled")


def _h(key: Column, salt: int, modulus: int) -> Column:
    """A deterministic pseudo-random integer in ``[0, modulus)`` for ``key``."""
    return F.pmod(F.xxhash64(key, F.lit(salt)), F.lit(modulus))


def rows_for_keys(keys: DataFrame, *, version: int = 0) -> DataFrame:
    """The 12 benchmark columns for a frame of ``id`` keys; ``version`` changes the values.

    Version 0 is what the base table holds; a source's updated rows use version 1, so
    every update really changes the row (and the 3-clause merge's conditions bite).
    """
    k = F.col(KEY)
    v = version * 7919
    status = F.element_at(F.array(*[F.lit(s) for s in STATUSES]), (_h(k, 3 + v, 5) + 1).cast("int"))
    return keys.select(
        k.cast("bigint").alias(KEY),
        _h(k, 1, 100_000).cast("int").alias("customer_id"),
        F.date_add(F.lit("2020-01-01").cast("date"), _h(k, 2, 2000).cast("int")).alias("order_date"),
        F.timestamp_micros(F.lit(1_577_836_800_000_000) + _h(k, 4 + v, 10**14)).alias("created_at"),
        status.alias("status"),
        F.concat(F.lit("category_"), _h(k, 5, 50).cast("string")).alias("category"),
        (_h(k, 6 + v, 20) + 1).cast("int").alias("quantity"),
        (_h(k, 7 + v, 1_000_000) / F.lit(100.0)).cast("double").alias("price"),
        (_h(k, 8 + v, 10_000_000) / F.lit(100)).cast("decimal(12,2)").alias("amount"),
        (_h(k, 9, 10) == 0).alias("is_gift"),
        F.concat(F.lit("note-"), F.hex(F.xxhash64(k, F.lit(11 + v)))).alias("note"),
        (_h(k, 10 + v, 1000) / F.lit(7.0)).cast("float").alias("score"),
    )


def base_rows(spark: SparkSession, *, rows: int, files: int) -> DataFrame:
    """The base table's rows: keys ``0, 2, ..., 2(rows-1)``, one contiguous key range per file."""
    keys = spark.range(0, rows, 1, numPartitions=files).select((F.col("id") * 2).alias(KEY))
    return rows_for_keys(keys)


def existing_keys(spark: SparkSession, *, rows: int, start: int, count: int, step: int = 1) -> DataFrame:
    """``count`` keys of the base table: every ``step``-th row from row ``start`` (wrapping)."""
    positions = spark.range(0, count).select(F.pmod(F.lit(start) + F.col("id") * step, F.lit(rows)))
    return positions.select((F.col(positions.columns[0]) * 2).alias(KEY))


def random_existing_keys(spark: SparkSession, *, rows: int, count: int, salt: int) -> DataFrame:
    """``count`` distinct base-table keys spread over the whole key range."""
    step = max(1, rows // max(count, 1))
    positions = spark.range(0, count).select((F.col("id") * step + _h(F.col("id"), salt, step)).alias("p"))
    return positions.select((F.col("p") * 2).alias(KEY))


def new_keys_beyond(spark: SparkSession, *, rows: int, count: int) -> DataFrame:
    """``count`` keys past the table's maximum key."""
    return spark.range(0, count).select((F.lit(2 * rows) + F.col("id")).alias(KEY))


def new_keys_interleaved(
    spark: SparkSession, *, rows: int, count: int, start: int = 0, span: int | None = None
) -> DataFrame:
    """``count`` odd (absent) keys spread evenly over rows ``start .. start+span``."""
    span = rows if span is None else span
    step = max(1, span // max(count, 1))
    return spark.range(0, count).select(((F.lit(start) + F.col("id") * step) * 2 + 1).alias(KEY))
