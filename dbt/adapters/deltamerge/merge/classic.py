"""Delta's classic executor: phase 1 finds the touched files, phase 2 rewrites them.

Phase 1 (``touched.py``) returns the files to rewrite and what it learnt on the way;
phase 2 joins the touched files' rows with the source (or with phase 1's unmatched keys),
gives each row the code of the clause that takes it, and writes every output column as a
CASE over that code, with the inserts and, when the feed is on, the change rows.
"""

from __future__ import annotations

from pyspark.sql import functions as F

from dbt.adapters.deltamerge.merge.joins import touched_joined_with_source, touched_with_unmatched_keys
from dbt.adapters.deltamerge.merge.names import ACTION, ROW_ID, SOURCE_PRESENT, TARGET_PRESENT
from dbt.adapters.deltamerge.merge.output import action_expression
from dbt.adapters.deltamerge.merge.run import MergeRun
from dbt.adapters.deltamerge.merge.touched import TouchedFiles
from dbt.adapters.deltamerge.merge.written import MergeOutput, write_output_rows


def rewrite_touched_files(run: MergeRun, phase1: TouchedFiles, *, dry_run: bool) -> MergeOutput:
    """Phase 2: rewrite the touched files with every clause applied, plus the inserts."""
    spec = run.spec
    if not spec.not_matched and not phase1.files:
        return MergeOutput()
    present = None
    if phase1.unmatched_keys is not None and not (spec.matched or spec.not_matched):
        joined, present = touched_with_unmatched_keys(run, phase1)
    else:
        joined = touched_joined_with_source(run, phase1)
    if phase1.duplicate_matches:
        # A target row deleted by several source rows is one deleted row (and one output row).
        both = F.col(TARGET_PRESENT).isNotNull() & F.col(SOURCE_PRESENT).isNotNull()
        joined = joined.where(both).dropDuplicates([ROW_ID]).union(joined.where(~both))
    action = action_expression(run.merge, spec.target_alias, spec.source_alias, source_present=present)
    rows = joined.withColumn(ACTION, F.expr(action))
    return write_output_rows(run, rows, copy=True, changes=run.plan.change_data, dry_run=dry_run)
