"""Delta's classic executor: phase 1 finds the touched files, phase 2 rewrites them.

Phase 1 (``touched.py``) returns the files to rewrite and what it learnt on the way;
phase 2 joins the touched files' rows with the source (or with phase 1's unmatched keys),
gives each row the code of the clause that takes it, and writes every output column as a
CASE over that code, with the inserts and, when the feed is on, the change rows.
"""

from __future__ import annotations

from pyroaring import BitMap64
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dbt.adapters.deltamerge.common.sql import qualified
from dbt.adapters.deltamerge.delta import AddFile
from dbt.adapters.deltamerge.delta.data import ROW_INDEX, VectorUpdate, collect_positions, mark_deleted
from dbt.adapters.deltamerge.merge.execute.actions import action_expression, counted_actions
from dbt.adapters.deltamerge.merge.execute.frames import (
    ACTION,
    COPY,
    FILE,
    ROW_ID,
    SOURCE_PRESENT,
    TARGET_PRESENT,
    UNMATCHED,
    UNMATCHED_ROW,
    MergeRun,
    aliased_source,
    aliased_target,
    is_unmatched_key,
    matched_target,
)
from dbt.adapters.deltamerge.merge.execute.output import OUTPUT_ROWS_PER_FILE, MergeOutput, write_output_rows
from dbt.adapters.deltamerge.merge.execute.touched import TouchedFiles


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


def mark_touched_rows(
    run: MergeRun, phase1: TouchedFiles, *, dry_run: bool
) -> tuple[MergeOutput, VectorUpdate]:
    """Phase 2, merge-on-read: the target rows a clause updates or deletes are marked in deletion
    vectors; only updated and inserted rows are written (Delta's ``writeDVs`` beside the output).

    The join is scanned once for the output columns (only those the clauses' expressions name:
    an update of every column from the source reads the target's key alone), with each row's
    action and position; Spark keeps those few rows, the removed rows' positions are collected
    from them and the rest written (``output.write_output_rows(marking=...)``). With the change
    feed on, the positions are a job of their own. Rows no clause takes are neither copied nor
    kept; the written rows go into as many files as their count needs (not one per target file,
    as a rewrite keeps them).
    """
    spec = run.spec
    if not spec.not_matched and not phase1.files:
        return MergeOutput(), VectorUpdate()
    present = None
    if phase1.unmatched_keys is not None and not (spec.matched or spec.not_matched):
        joined, present = touched_with_unmatched_keys(run, phase1)
    else:
        joined = touched_joined_with_source(run, phase1)
    action = action_expression(run.merge, spec.target_alias, spec.source_alias, source_present=present)
    taken = joined.withColumn(ACTION, F.expr(action)).where(F.col(ACTION) != COPY)
    if phase1.duplicate_matches:
        both = F.col(TARGET_PRESENT).isNotNull() & F.col(SOURCE_PRESENT).isNotNull()
        taken = taken.where(both).dropDuplicates([ROW_ID]).union(taken.where(~both))
    return positions_and_output(run, taken, dry_run=dry_run)


def positions_and_output(
    run: MergeRun, taken: DataFrame, *, dry_run: bool
) -> tuple[MergeOutput, VectorUpdate]:
    """The rows clauses take (``taken``, each with its action, file and position) as deletion
    vectors for the removed target rows and new files for the updated and inserted rows."""
    codes = counted_actions(run.merge)
    removing = [*codes["matched_updated"], *codes["matched_deleted"]]
    removing += [*codes["not_matched_by_source_updated"], *codes["not_matched_by_source_deleted"]]
    positions: dict[str, BitMap64] = {}

    def marking(rows: DataFrame) -> int:
        if removing:
            marked = rows.where(F.col(TARGET_PRESENT).isNotNull() & F.col(ACTION).isin(*removing))
            positions.update(collect_positions(marked, FILE, ROW_INDEX))
        return sum(len(p) for p in positions.values())

    if run.plan.change_data and not dry_run:
        # The change rows need the target's old values: the positions are a job of their own.
        files = _output_files(run, marking(taken))
        output = write_output_rows(
            run, taken.repartition(files), copy=False, changes=True, dry_run=False, keep_row_ids=True
        )
    else:
        output = write_output_rows(
            run, taken, copy=False, changes=False, dry_run=dry_run, keep_row_ids=True, marking=marking
        )
    return output, mark_deleted(run.snapshot, positions, dry_run=dry_run)


def _output_files(run: MergeRun, marked: int) -> int:
    """How many files a merge-on-read merge writes: its rows (at most the source's inserts and
    updates, plus the target rows BY SOURCE clauses update) over ``OUTPUT_ROWS_PER_FILE``."""
    return max(1, min(64, (run.plan.source_rows + marked) // OUTPUT_ROWS_PER_FILE + 1))


def touched_joined_with_source(run: MergeRun, phase1: TouchedFiles) -> DataFrame:
    """Every row of the touched files with its source row, plus the unmatched source rows (with inserts).

    A small source is broadcast to the tasks reading the touched files: the target is
    never shuffled, and each new file holds the rows of one old file, so the table keeps
    its clustering. Whether a source row is unmatched is decided by the full ON condition
    against every file that may hold its match (``files_holding_matches``), not only the
    touched ones, and those rows are appended with null targets.
    """
    on = F.expr(run.plan.join_condition)
    touched = phase1.files
    target = aliased_target(run, touched)
    holding = files_holding_matches(run, phase1)
    small = run.plan.broadcast_source
    if not small and (holding is touched or not run.spec.not_matched):
        return target.join(aliased_source(run), on, "full_outer" if run.spec.not_matched else "left_outer")
    joined = target.join(F.broadcast(aliased_source(run)) if small else aliased_source(run), on, "left_outer")
    if not run.spec.not_matched:
        return joined
    unmatched = aliased_source(run).join(matched_target(run, holding), on, "left_anti")
    return joined.union(aliased_target(run, []).join(unmatched, on, "right_outer"))


def files_holding_matches(run: MergeRun, phase1: TouchedFiles) -> list[AddFile]:
    """Files that hold every target row a source row matches.

    With a WHEN MATCHED clause phase 1 touches every file holding a matched row (with
    ``update_only_if_changed`` it names them, touched or not); without one, matched rows are
    copied as they are, so their files need not be touched, and only the data-skipped
    candidates bound where a source row may have its match.
    """
    touched, matched = phase1.files, phase1.matched_files
    if run.spec.matched and run.spec.update_only_if_changed and matched is not None:
        return touched if matched == touched else matched
    return touched if run.spec.matched else run.candidates


def touched_with_unmatched_keys(run: MergeRun, phase1: TouchedFiles) -> tuple[DataFrame, str]:
    """The touched files' rows flagged by phase 1's unmatched keys, and SQL null where a row is unmatched.

    With only NOT MATCHED BY SOURCE clauses, whether a row matched is all a merge needs
    from the source, and phase 1 already found the (few) unmatched keys: no second join
    with the whole source.
    """
    assert phase1.unmatched_keys is not None
    keys = F.broadcast(phase1.unmatched_keys)
    joined = aliased_target(run, phase1.files).join(keys, is_unmatched_key(run), "left_outer")
    return joined, f"CASE WHEN {qualified(UNMATCHED, UNMATCHED_ROW)} IS NULL THEN true END"
