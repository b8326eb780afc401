"""One merge's working state on Spark and the aliased frames both phases join.

The target is read from exactly the Delta log's files, each row tagged with its file and
a row id (phase 1 groups by them, phase 2 de-duplicates by them); the source carries a
presence flag, so after an outer join each side's absence is a null flag.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from dbt.adapters.deltamerge.delta.read import read_files
from dbt.adapters.deltamerge.delta.snapshot import AddFile, Snapshot
from dbt.adapters.deltamerge.merge.clauses import MergeSpec
from dbt.adapters.deltamerge.merge.names import (
    FILE,
    ROW_ID,
    SOURCE_PRESENT,
    TARGET_PRESENT,
    UNMATCHED,
)
from dbt.adapters.deltamerge.merge.plan import MergePlan
from dbt.adapters.deltamerge.merge.resolve import ResolvedMerge
from dbt.adapters.deltamerge.sql import conjunction, qualified


@dataclass(frozen=True)
class MergeRun:
    """A plan and the frames it runs on (phase 1's findings are its result, ``TouchedFiles``)."""

    spark: SparkSession
    plan: MergePlan
    source: DataFrame

    @property
    def spec(self) -> MergeSpec:
        """The clause set, with the join condition the plan chose."""
        return self.plan.spec

    @property
    def merge(self) -> ResolvedMerge:
        """The clause set resolved against the schemas."""
        return self.plan.merge

    @property
    def snapshot(self) -> Snapshot:
        """The table version the merge reads."""
        return self.plan.snapshot

    @property
    def candidates(self) -> list[AddFile]:
        """The files data skipping keeps."""
        return self.plan.candidates


def aliased_source(run: MergeRun) -> DataFrame:
    """The source under its alias, with its presence flag."""
    return run.source.withColumn(SOURCE_PRESENT, F.lit(True)).alias(run.spec.source_alias)


def joinable_source(run: MergeRun) -> DataFrame:
    """``aliased_source``, marked for broadcast when small.

    Spark's own estimate of a materialized source can be far too big (a checkpoint keeps the
    estimate of the plan it came from), which would shuffle the whole target into a sort-merge
    join; the plan decides from the source's row count.
    """
    source = aliased_source(run)
    return F.broadcast(source) if run.plan.broadcast_source else source


def aliased_target(run: MergeRun, files: list[AddFile]) -> DataFrame:
    """The rows of ``files`` under the target alias, with file, row id and presence flag."""
    target = read_files(run.spark, run.snapshot, files)
    return (
        target.withColumn(FILE, F.input_file_name())
        .withColumn(ROW_ID, F.monotonically_increasing_id())
        .withColumn(TARGET_PRESENT, F.lit(True))
        .alias(run.spec.target_alias)
    )


def matched_target(run: MergeRun, files: list[AddFile]) -> DataFrame:
    """The rows of ``files`` a source row matches (all of them when the source is too big to broadcast).

    A small source is broadcast into a semi-join over the target, so the anti-join
    that finds the new rows never shuffles the whole target.
    """
    target = read_files(run.spark, run.snapshot, files).alias(run.spec.target_alias)
    if not run.plan.broadcast_source:
        return target
    source = F.broadcast(run.source.alias(run.spec.source_alias))
    return target.join(source, F.expr(run.plan.join_condition), "left_semi").alias(run.spec.target_alias)


def is_unmatched_key(run: MergeRun) -> Column:
    """The target row's unique key equals (null-safely) a key of the ``UNMATCHED`` frame."""
    alias = run.spec.target_alias
    pairs = [f"{qualified(alias, k)} <=> {qualified(UNMATCHED, k)}" for k in run.spec.unique_key]
    return F.expr(conjunction(pairs))
