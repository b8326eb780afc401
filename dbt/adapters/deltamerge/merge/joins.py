"""Phase 2's joins: the rows of the touched files with what the source says about each.

Every row of a touched file comes out once (with its source row, or without one), plus
the unmatched source rows when the merge inserts.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dbt.adapters.deltamerge.delta.snapshot import AddFile
from dbt.adapters.deltamerge.merge.names import UNMATCHED, UNMATCHED_ROW
from dbt.adapters.deltamerge.merge.run import (
    MergeRun,
    aliased_source,
    aliased_target,
    is_unmatched_key,
    matched_target,
)
from dbt.adapters.deltamerge.merge.touched import TouchedFiles
from dbt.adapters.deltamerge.sql import qualified


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
