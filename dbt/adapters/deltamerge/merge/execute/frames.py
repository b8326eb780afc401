"""One merge's working state on Spark, the aliased frames both phases join, and their internal columns.

Internal columns are ``_merge_*`` and ``_*_row_present`` (user columns so named are not
supported); ``_merge_action`` holds the code of the clause that takes a row
(``actions.action_code``), or ``copy`` / ``drop``.

The target is read from exactly the Delta log's files, each row tagged with its file and
a row id (phase 1 groups by them, phase 2 de-duplicates by them); the source carries a
presence flag, so after an outer join each side's absence is a null flag.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from dbt.adapters.deltamerge.common.sql import conjunction, qualified
from dbt.adapters.deltamerge.delta import AddFile, Snapshot
from dbt.adapters.deltamerge.delta.data import read_files
from dbt.adapters.deltamerge.merge.plan import MergePlan
from dbt.adapters.deltamerge.merge.resolve import ResolvedMerge
from dbt.adapters.deltamerge.merge.spec import MergeSpec

# Internal columns of the joined frames.
ACTION = "_merge_action"  # the action code of the clause that takes the row
SOURCE_PRESENT = "_source_row_present"  # non-null on every source row (null after an outer join: absent)
TARGET_PRESENT = "_target_row_present"
FILE = "_merge_file"  # the target row's data file
ROW_ID = "_merge_row_id"  # a target row's id within one scan
UNMATCHED = "_merge_unmatched"  # alias of phase 1's unmatched target keys
UNMATCHED_ROW = "_merge_unmatched_row"  # true on every row of those keys
SOURCE_MATCHES = "_merge_source_matches"  # how many source rows have a key (null: none)

# Action codes besides the clauses' own.
COPY = "copy"  # the target row is written unchanged
DROP = "drop"  # nothing is written (a source row no clause inserts)


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
    """The rows of ``files`` under the target alias, with file, row id and presence flag (and the
    stable row ids a table that keeps them has, ``row_ids.py``)."""
    target = read_files(run.spark, run.snapshot, files, row_ids=True, positions=run.plan.marks_deleted)
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
    """The target row's join keys equal (null-safely) a key of the ``UNMATCHED`` frame."""
    alias = run.spec.target_alias
    pairs = [f"{qualified(alias, k)} <=> {qualified(UNMATCHED, k)}" for k in run.spec.join_keys]
    return F.expr(conjunction(pairs))
