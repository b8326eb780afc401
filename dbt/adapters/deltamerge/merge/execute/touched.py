"""Phase 1 of the classic executor: the target files a merge must rewrite.

A file is touched when it holds a row a WHEN MATCHED clause may change, or an unmatched
row a NOT MATCHED BY SOURCE clause's condition selects. Delta's multiple-match rule is
enforced here, as Delta's ``findTouchedFiles`` counts: a target row matched (by the ON
condition) by several source rows is an error whatever the clauses' conditions, unless the
only matched clause is an unconditional delete.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dbt.adapters.deltamerge.common.errors import EngineError
from dbt.adapters.deltamerge.common.sql import qualified, quote_identifier
from dbt.adapters.deltamerge.delta import AddFile, local_path, table_path_of
from dbt.adapters.deltamerge.merge.execute.actions import matched_action_expression
from dbt.adapters.deltamerge.merge.execute.frames import (
    COPY,
    FILE,
    ROW_ID,
    SOURCE_MATCHES,
    UNMATCHED,
    UNMATCHED_ROW,
    MergeRun,
    aliased_target,
    is_unmatched_key,
    joinable_source,
)
from dbt.adapters.deltamerge.merge.pruning import matches_by_key_alone
from dbt.adapters.deltamerge.merge.source import checkpoint_with_aggregates, fits_in_broadcast
from dbt.adapters.deltamerge.merge.spec import MergeSpec

MULTIPLE_MATCHES = (
    "[DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE] "
    "Cannot perform Merge as multiple source rows matched and attempted to modify the same target row "
    "in the Delta table in possibly conflicting ways."
)


class MultipleMatchesError(EngineError):
    """Delta's error: several source rows match one target row."""


@dataclass(frozen=True)
class TouchedFiles:
    """Phase 1's result: the files phase 2 rewrites, and what phase 1 learnt on the way."""

    files: list[AddFile]
    # A target row was matched by several source rows (only an unconditional delete allows it).
    duplicate_matches: bool = False
    # The target keys (ON is the join keys' equality) no source row matches, when small enough to broadcast.
    unmatched_keys: DataFrame | None = None
    # With update_only_if_changed: the files holding a matched row (touched or not).
    matched_files: list[AddFile] | None = None


def find_touched_files(run: MergeRun) -> TouchedFiles:
    """Phase 1: files holding a matched row (or an unmatched row a NOT MATCHED BY SOURCE clause changes)."""
    if not run.candidates:
        return TouchedFiles([])
    target = aliased_target(run, run.candidates)
    check = run.plan.multiple_match_check
    if check == "repeated_source_keys" and run.spec.not_matched_by_source and matches_by_key_alone(run.spec):
        return _touched_by_counted_keys(run, target)
    joins_every_match = check == "per_target_row" or _source_repeats_a_key(run)
    matches = _files_with_matches(run, target) if joins_every_match else None
    hit, duplicate_matches, matched_files = matches or (set(), False, None)
    unmatched_keys = None
    if run.spec.not_matched_by_source:
        changed, unmatched_keys = _files_with_unmatched_changes(run, target)
        hit |= changed
    files = [f for f in run.candidates if local_path(run.snapshot.table_path, f.path) in hit]
    return TouchedFiles(files, duplicate_matches, unmatched_keys, matched_files)


def _files_with_matches(run: MergeRun, target: DataFrame) -> tuple[set[str], bool, list[AddFile] | None]:
    """Files holding a matched row that changes, whether a row matched twice, files holding any match."""
    # Delta's error when a target row is matched more than once (unless an unconditional delete).
    spec = run.spec
    joined = joinable_source(run).join(target, F.expr(run.plan.join_condition), "inner")
    if run.plan.broadcast_source:
        # A small source makes few pairs: hashed by file once, neither grouping below needs an
        # exchange of its own (each is a stage, and a Spark job, of its own with adaptive execution).
        joined = joined.repartition(FILE)
    # Every pair counts for the rule; a file is touched by a pair a clause may take (Delta's
    # ``matchedPredicate``) and, with update_only_if_changed, by a row whose values change.
    touching = touching_pairs_condition(spec)
    changes = (
        F.max((F.expr(matched_action_expression(run.merge)) != COPY).cast("int"))
        if spec.update_only_if_changed
        else F.max(F.coalesce(F.expr(touching), F.lit(False)).cast("int"))
        if touching is not None
        else F.lit(1)
    )
    per_row = joined.groupBy(FILE, ROW_ID).agg(F.count(F.lit(1)).alias("n"), changes.alias("changes"))
    per_file = (
        per_row.groupBy(FILE).agg(F.max("n").alias("most"), F.max("changes").alias("changes")).collect()
    )
    duplicate_matches = any(r["most"] > 1 for r in per_file)
    if duplicate_matches and not spec.is_only_one_unconditional_delete:
        raise MultipleMatchesError(multiple_matches_message(run, joined))
    matched_files = None
    if spec.update_only_if_changed:
        matched = {table_path_of(r[FILE]) for r in per_file}
        matched_files = [f for f in run.candidates if local_path(run.snapshot.table_path, f.path) in matched]
    changed = {table_path_of(r[FILE]) for r in per_file if r["changes"]} if spec.matched else set()
    return changed, duplicate_matches, matched_files


def touching_pairs_condition(spec: MergeSpec) -> str | None:
    """SQL true on the matched pairs that touch their file, None for all of them: with only WHEN
    MATCHED clauses, all conditional, a pair none of them selects leaves its file alone (Delta's
    ``matchedPredicate``). Delta's multiple-match rule counts every pair, whatever the conditions."""
    if spec.is_matched_only and all(c.condition for c in spec.matched):
        return " OR ".join(f"({c.condition})" for c in spec.matched)
    return None


def _source_repeats_a_key(run: MergeRun) -> bool:
    """Whether the source repeats a join key (then Delta's multiple-match check must join every row).

    Without WHEN MATCHED clauses matched rows are copied unchanged, so the join with the
    whole source is needed only for that check; on the join keys, distinct source keys
    rule it out far more cheaply.
    """
    keys = [F.col(quote_identifier(k)) for k in run.spec.join_keys]
    return bool(run.source.groupBy(*keys).count().where("count > 1").limit(1).collect())


def _files_with_unmatched_changes(run: MergeRun, target: DataFrame) -> tuple[set[str], DataFrame | None]:
    """Files holding an unmatched row a BY SOURCE clause selects, and the unmatched keys if kept."""
    conditions = [c.condition for c in run.spec.not_matched_by_source]
    if all(conditions):
        target = target.where(" OR ".join(f"({c})" for c in conditions))
    if matches_by_key_alone(run.spec):
        return _files_holding_unmatched_keys(run, target)
    unmatched = target.join(joinable_source(run), F.expr(run.plan.join_condition), "left_anti")
    return {table_path_of(r[FILE]) for r in unmatched.select(FILE).distinct().collect()}, None


def _files_holding_unmatched_keys(run: MergeRun, target: DataFrame) -> tuple[set[str], DataFrame | None]:
    """Files holding a target key no source row matches, found without shuffling file names.

    Only when the key alone decides whether a row matches (``matches_by_key_alone``): phase 2
    then flags the touched files' rows by these keys instead of joining the source again.
    The anti-join shuffles keys only (and, joining a broadcast source, carries each row's
    file); the (usually few) keys are kept for phase 2.
    """
    alias = run.spec.target_alias
    rows, counted = checkpoint_with_aggregates(
        target.join(joinable_source(run), F.expr(run.plan.join_condition), "left_anti")
        .select(*[F.col(qualified(alias, k)).alias(k) for k in run.spec.join_keys], *_file_if_free(run))
        .distinct(),
        "unmatched_keys",
        [F.count(F.lit(1)).alias("n")],
    )
    return _files_and_keys(run, rows, int(counted["n"]), target)


def _file_if_free(run: MergeRun) -> list[str]:
    """The file column, when the key join can carry it for free (a broadcast source: no shuffle).

    A shuffled join would move every target row's file name (a long string), which costs
    more than scanning the target again for the few unmatched keys' files.
    """
    return [FILE] if run.plan.broadcast_source else []


def _files_and_keys(
    run: MergeRun, rows: DataFrame, count: int, target: DataFrame
) -> tuple[set[str], DataFrame | None]:
    """The files of unmatched target rows (materialized keys), and their keys if small.

    When the rows carry their file, naming the files reads the few materialized rows;
    otherwise the keys are broadcast (or shuffled) back over ``target`` to find them.
    """
    keys = [quote_identifier(k) for k in run.spec.join_keys]
    unmatched = rows.select(*keys).distinct().withColumn(UNMATCHED_ROW, F.lit(True)).alias(UNMATCHED)
    small = fits_in_broadcast(unmatched.schema, count)
    located = rows
    if FILE not in rows.columns:
        located = target.join(
            F.broadcast(unmatched) if small else unmatched, is_unmatched_key(run), "left_semi"
        )
    files = {table_path_of(r[FILE]) for r in located.select(FILE).distinct().collect()}
    return files, unmatched if small else None


def _touched_by_counted_keys(run: MergeRun, target: DataFrame) -> TouchedFiles:
    """Phase 1 of a merge whose ON is the join keys' and that has no WHEN MATCHED clause, in one key join.

    The source is grouped by key (how many source rows have each key) and joined to the
    target's keys: a target row with no source key is unmatched (a NOT MATCHED BY SOURCE
    clause may change it), one whose key several source rows have breaks Delta's
    multiple-match rule. Both come out of the same join, so the source is shuffled once;
    the (usually few) unmatched keys are kept for phase 2 and name their files as in
    ``_files_holding_unmatched_keys``.
    """
    spec = run.spec
    counted = (
        run.source.groupBy(*[F.col(quote_identifier(k)) for k in spec.join_keys])
        .agg(F.count(F.lit(1)).alias(SOURCE_MATCHES))
        .alias(spec.source_alias)
    )
    joined = target.join(
        F.broadcast(counted) if run.plan.broadcast_source else counted,
        F.expr(run.plan.join_condition),
        "left_outer",
    )
    conditions = [c.condition for c in spec.not_matched_by_source]
    selected = F.expr(" OR ".join(f"({c})" for c in conditions)) if all(conditions) else F.lit(True)
    matches = F.col(qualified(spec.source_alias, SOURCE_MATCHES))
    keys, found = checkpoint_with_aggregates(
        joined.where((matches.isNull() & selected) | (matches > 1))
        .select(
            *[F.col(qualified(spec.target_alias, k)).alias(k) for k in spec.join_keys],
            matches,
            *_file_if_free(run),
        )
        .distinct(),
        "unmatched_keys",
        [
            F.count(F.when(F.col(SOURCE_MATCHES).isNull(), 1)).alias("n"),
            F.max(SOURCE_MATCHES).alias("most"),
        ],
    )
    if (found["most"] or 0) > 1:
        raise MultipleMatchesError(_repeated_keys_message(run, keys))
    unmatched = keys.where(F.col(SOURCE_MATCHES).isNull()).drop(SOURCE_MATCHES)
    hit, unmatched_keys = _files_and_keys(run, unmatched, int(found["n"]), target.where(selected))
    files = [f for f in run.candidates if local_path(run.snapshot.table_path, f.path) in hit]
    return TouchedFiles(files, unmatched_keys=unmatched_keys)


def _repeated_keys_message(run: MergeRun, keys: DataFrame) -> str:
    names = run.spec.join_keys
    repeated = keys.where(F.col(SOURCE_MATCHES) > 1).limit(5).collect()
    examples = "; ".join(", ".join(f"{k}={r[i]!r}" for i, k in enumerate(names)) for r in repeated)
    return (
        f"{MULTIPLE_MATCHES} Target rows matched more than once (by {list(names)}): {examples}. "
        "De-duplicate the model's result on its unique_key, or make the ON condition stricter."
    )


def multiple_matches_message(run: MergeRun, joined: DataFrame, read: Collection[str] | None = None) -> str:
    """Delta's error text, with up to five target rows matched more than once: by their join keys,
    else by the first three target columns the join read (``read``: those it read, default all)."""
    names = [f.name for f in run.snapshot.schema.fields if read is None or f.name in read]
    keys = list(run.spec.join_keys) or names[:3]
    columns = [F.col(f"{quote_identifier(run.spec.target_alias)}.{quote_identifier(k)}") for k in keys]
    dupes = joined.groupBy(ROW_ID, *columns).count().where("count > 1").limit(5).collect()
    examples = "; ".join(", ".join(f"{k}={r[i + 1]!r}" for i, k in enumerate(keys)) for r in dupes)
    return (
        f"{MULTIPLE_MATCHES} Target rows matched more than once (by {list(keys)}): {examples}. "
        "De-duplicate the model's result on its unique_key, or make the ON condition stricter."
    )
