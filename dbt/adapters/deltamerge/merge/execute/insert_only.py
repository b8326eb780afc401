"""Delta's insert-only executor: source rows with no match are appended, nothing is removed.

Readers infer an insert-only commit's changes from its adds, so no change data is written.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dbt.adapters.deltamerge.merge.execute.actions import action_code
from dbt.adapters.deltamerge.merge.execute.frames import (
    ACTION,
    DROP,
    MergeRun,
    aliased_source,
    matched_target,
)
from dbt.adapters.deltamerge.merge.execute.output import MergeOutput, counted_output_rows, write_output_rows


def insert_unmatched(run: MergeRun, *, dry_run: bool) -> MergeOutput:
    """Append the source rows no target row (of the files that may match) matches."""
    rows = _unmatched_with_action(run)
    if run.plan.counts_before_writing and not dry_run:
        rows, counts = counted_output_rows(run, rows)
        if not counts.changed:
            return MergeOutput(counts=counts)
    return write_output_rows(run, rows, copy=False, changes=False, dry_run=dry_run)


def _unmatched_with_action(run: MergeRun) -> DataFrame:
    source = aliased_source(run)
    if run.candidates:
        matched = matched_target(run, run.candidates)
        source = source.join(matched, F.expr(run.plan.join_condition), "left_anti")
    whens = " ".join(
        f"WHEN ({c.condition or 'true'}) THEN '{action_code(c, i)}'"
        for i, c in enumerate(run.merge.not_matched)
    )
    return source.withColumn(ACTION, F.expr(f"CASE {whens} ELSE '{DROP}' END"))
