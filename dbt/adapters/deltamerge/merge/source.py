"""A merge source on Spark: materialized once with its aggregates; small enough to broadcast or not.

``checkpoint_with_aggregates`` works on classic and Connect sessions alike (also for the
executors' small intermediate frames); ``fits_in_broadcast`` decides from a row count and
Spark's default sizes of types, since Spark's own estimate of a checkpoint can be far off.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import types as T
from pyspark.sql.utils import is_remote


def checkpoint_with_aggregates(
    df: DataFrame, name: str, aggregates: list[Column]
) -> tuple[DataFrame, dict[str, Any]]:
    """``df`` computed once (a local checkpoint) and the values of ``aggregates`` over it, in one job.

    On a classic session the aggregates are observed while the eager checkpoint is computed.
    Spark Connect returns no observed metrics for a checkpoint (a command, not a query), so
    there the checkpoint is lazy and a no-op write of the observed checkpointed rows
    materializes it and returns the metrics: still one pass, and every later use of the
    frame reads the checkpointed rows.
    """
    observation = Observation(name)
    if is_remote():
        checkpointed = df.localCheckpoint(eager=False)
        checkpointed.observe(observation, *aggregates).write.format("noop").mode("overwrite").save()
    else:
        checkpointed = df.observe(observation, *aggregates).localCheckpoint(eager=True)
    return checkpointed, dict(observation.get)


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
