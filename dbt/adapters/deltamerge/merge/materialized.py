"""Materializing a DataFrame once and reading aggregates of it, on classic and Connect sessions."""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame, Observation
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
