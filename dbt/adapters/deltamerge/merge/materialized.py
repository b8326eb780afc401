"""Materializing a DataFrame once and reading aggregates of it, on classic and Connect sessions."""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame, Observation


def checkpoint_with_aggregates(
    df: DataFrame, name: str, aggregates: list[Column]
) -> tuple[DataFrame, dict[str, Any]]:
    """``df`` computed once (a local checkpoint) and the values of ``aggregates`` over it.

    On a classic session the aggregates are observed while the checkpoint is computed (no
    second pass). Spark Connect returns no observed metrics for a checkpoint, which is a
    command, not a query; then they are computed over the checkpointed rows (a cheap pass
    over data already in the executors' block stores).
    """
    observation = Observation(name)
    checkpointed = df.observe(observation, *aggregates).localCheckpoint(eager=True)
    values = observation.get
    if not values:
        row = checkpointed.agg(*aggregates).first()
        values = row.asDict() if row is not None else {}
    return checkpointed, dict(values)
