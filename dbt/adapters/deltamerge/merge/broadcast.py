"""When a merge source is small enough to broadcast to every task that reads the target."""

from __future__ import annotations

from pyspark.sql import types as T

# Sources up to this estimated size are broadcast into joins with the target.
BROADCAST_SOURCE_BYTES = 64 * 1024 * 1024


def fits_in_broadcast(schema: T.StructType, rows: int) -> bool:
    """Whether ``rows`` rows of ``schema`` are small enough to broadcast.

    >>> fits_in_broadcast(T.StructType([T.StructField("i", T.LongType())]), 1_000_000)
    True
    """
    return estimated_bytes(schema, rows) <= BROADCAST_SOURCE_BYTES


def estimated_bytes(schema: T.StructType, rows: int) -> int:
    """A size estimate for ``rows`` rows of ``schema``, with Spark's default sizes of types.

    >>> schema = T.StructType([T.StructField("i", T.LongType()), T.StructField("s", T.StringType())])
    >>> estimated_bytes(schema, 10)
    280
    """
    return rows * sum(_DEFAULT_SIZES.get(type(f.dataType), 100) for f in schema.fields)


_DEFAULT_SIZES: dict[type, int] = {
    T.BooleanType: 1,
    T.ByteType: 1,
    T.ShortType: 2,
    T.IntegerType: 4,
    T.FloatType: 4,
    T.DateType: 4,
    T.LongType: 8,
    T.DoubleType: 8,
    T.TimestampType: 8,
    T.TimestampNTZType: 8,
    T.DecimalType: 16,
    T.StringType: 20,
    T.BinaryType: 20,
}
