"""Running a merge: plan -> execute -> commit (``docs/architecture.md``, "The merge engine").

``merge_into`` is the three steps, one call each. ``prepare`` checks the table's features,
applies the definition changes the merge carries (schema evolution, the change data feed),
resolves and checks the clause set, and plans: the source is materialized once
(``localCheckpoint``), in the same pass that profiles its keys for data skipping, so every
phase sees the same rows, and ``plan.plan_merge`` decides everything before the target is
read. ``execute`` runs the plan's executor: insert-only (``execute/insert_only.py``; into a
table without files the source is written in one pass, with no materialization) or classic
(``execute/touched.py`` finds the files, ``execute/classic.py`` rewrites them, or marks the
rows a merge-on-read merge removes; ``execute/one_join.py`` runs such a merge in one join when it
can). ``commit``
(``commit.py``) makes one MERGE commit. ``dry_run_merge`` runs the same plan with the output
sent to Spark's ``noop`` sink and describes it (``dry_run.py``).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from dbt.adapters.deltamerge.delta import Snapshot
from dbt.adapters.deltamerge.delta.log import NO_CHANGE, TableChange, changed, definition_actions
from dbt.adapters.deltamerge.delta.txn import WriteResult
from dbt.adapters.deltamerge.merge.check import check_expressions
from dbt.adapters.deltamerge.merge.commit import commit_merge, executed_metrics
from dbt.adapters.deltamerge.merge.dry_run import DryRun, describe
from dbt.adapters.deltamerge.merge.execute.classic import mark_touched_rows, rewrite_touched_files
from dbt.adapters.deltamerge.merge.execute.frames import MergeRun
from dbt.adapters.deltamerge.merge.execute.insert_only import insert_unmatched
from dbt.adapters.deltamerge.merge.execute.one_join import mark_rows_in_one_join
from dbt.adapters.deltamerge.merge.execute.output import Executed, MergeOutput
from dbt.adapters.deltamerge.merge.execute.touched import find_touched_files
from dbt.adapters.deltamerge.merge.keys import keyed_spec
from dbt.adapters.deltamerge.merge.plan import MergePlan, plan_merge
from dbt.adapters.deltamerge.merge.pruning import prepare_pruning, profile_aggregates
from dbt.adapters.deltamerge.merge.resolve import resolve
from dbt.adapters.deltamerge.merge.scope import evolved_spec, scoped_spec, timed_spec, uses_current_time
from dbt.adapters.deltamerge.merge.source import checkpoint_with_aggregates
from dbt.adapters.deltamerge.merge.spec import MergeSpec


@dataclass(frozen=True)
class Prepared:
    """A planned merge: the version it reads, its plan, and the source frame the plan runs on."""

    read: Snapshot
    plan: MergePlan
    source: DataFrame
    started: float
    # Delta's materializeSourceTimeMs: the source computed once and profiled (0 when written as read).
    materialized_ms: int = 0


def merge_into(
    spark: SparkSession,
    source_df: DataFrame,
    snapshot: Snapshot,
    spec: MergeSpec,
    *,
    change: TableChange = NO_CHANGE,
    txn: tuple[str, int] | None = None,
    extra_metrics: Mapping[str, int] | None = None,
) -> WriteResult:
    """Merge ``source_df`` into the table at ``snapshot`` as one MERGE commit (none if nothing changes).

    ``change`` is the table's definition change that rides in the merge's commit (its parts with
    commits of their own are the caller's): with a new ``schema`` (schema evolution) ``*`` actions
    take only the columns the source has (an update keeps the others, an insert writes null); the
    change data feed or deletion vectors switched on (this merge already writes them).
    ``extra_metrics`` join Delta's in the commit (CDC apply's event counts).
    """
    prepared = prepare(spark, source_df, snapshot, spec, change=change)
    executed = execute(spark, prepared, dry_run=False)
    metrics = executed_metrics(
        prepared.plan,
        executed,
        execution_ms=_since(prepared.started),
        materialize_ms=prepared.materialized_ms,
    )
    metrics.update(extra_metrics or {})
    return commit_merge(prepared.read, prepared.plan, executed, metrics=metrics, txn=txn)


def dry_run_merge(
    spark: SparkSession,
    source_df: DataFrame,
    snapshot: Snapshot,
    spec: MergeSpec,
    *,
    change: TableChange = NO_CHANGE,
) -> DryRun:
    """What ``merge_into`` would do: both phases run with the output computed and discarded.

    Spark's ``noop`` sink computes every output row (a failing cast still fails), so the plan,
    row counts and touched files are the real run's; no file is written, nothing is committed.
    """
    prepared = prepare(spark, source_df, snapshot, spec, change=change)
    executed = execute(spark, prepared, dry_run=True)
    metrics = executed_metrics(
        prepared.plan,
        executed,
        execution_ms=_since(prepared.started),
        materialize_ms=prepared.materialized_ms,
    )
    changes_definition = bool(definition_actions(prepared.read, prepared.plan.snapshot))
    return describe(prepared.plan, executed, metrics, changes_definition=changes_definition)


def prepare(
    spark: SparkSession,
    source_df: DataFrame,
    snapshot: Snapshot,
    spec: MergeSpec,
    *,
    change: TableChange,
) -> Prepared:
    """Plan a merge: features checked, the definition change applied, clauses scoped to the side
    they see, checked and resolved, the source profiled (and the statement's instant taken)."""
    started = time.monotonic()
    snapshot.check_writable()
    target = changed(snapshot, change)
    lenient = change.schema is not None
    # Schema evolution's new columns are not the target's yet when Delta resolves the user's SQL
    # (``srcVal`` is the source's, though UPDATE * adds it to the target).
    seen = snapshot.schema if spec.schema_evolution else target.schema
    if spec.schema_evolution:  # each key as Delta resolves it: the table's, else the source's
        spec = keyed_spec(spec, target=snapshot.schema, source=source_df.schema)
    spec = scoped_spec(spec, target=seen.names, source=source_df.schema.names)
    before = {name.lower() for name in seen.names}
    spec = evolved_spec(spec, [name for name in target.schema.names if name.lower() not in before])
    types = check_expressions(spark, spec, seen, source_df)
    merge = resolve(spec, target=target.schema, source=source_df.schema, lenient_star=lenient, types=types)
    if spec.is_insert_only and not target.files:
        # Into a table without files the source is profiled while it is written (one pass, one
        # query: the source and the clauses see one current time, as in Delta).
        plan = plan_merge(spec, merge, target, source_schema=source_df.schema, source_rows=0, pruning=None)
        return Prepared(snapshot, plan, source_df, started)
    timed = uses_current_time(spec)
    # The source's rows carry the current time of the query that computes them (Spark evaluates
    # it once per query), so the clauses get the very instant the source saw, on a Connect session
    # too (where the checkpoint is computed apart from the query observing it).
    computed = (
        source_df.withColumn(_NOW_NAME, F.expr("unix_micros(current_timestamp())")) if timed else source_df
    )
    aggregates = [
        *profile_aggregates(spec, target.schema),
        *([F.max(_NOW_NAME).alias(_NOW_NAME)] if timed else []),
    ]
    source, profile = checkpoint_with_aggregates(computed, "merge_source", aggregates)
    source = source.drop(_NOW_NAME) if timed else source
    materialized_ms = _since(started)
    if timed and profile[_NOW_NAME] is not None:
        # The clauses run in later queries: they get the instant the source's query saw.
        instant = _EPOCH + dt.timedelta(microseconds=int(profile[_NOW_NAME]))
        spec = timed_spec(spec, instant, str(spark.conf.get("spark.sql.session.timeZone")))
        merge = resolve(
            spec, target=target.schema, source=source_df.schema, lenient_star=lenient, types=types
        )
    pruning = prepare_pruning(spark, spec, target, profile)
    rows = int(profile["n"])
    plan = plan_merge(spec, merge, target, source_schema=source.schema, source_rows=rows, pruning=pruning)
    return Prepared(snapshot, plan, source, started, materialized_ms)


_NOW_NAME = "_merge_now_micros"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def execute(spark: SparkSession, prepared: Prepared, *, dry_run: bool) -> Executed:
    """Run the plan's executor; with ``dry_run`` its output goes to Spark's ``noop`` sink."""
    plan = prepared.plan
    if plan.executor == "insert_into_empty":
        return _insert_into_empty(spark, prepared, dry_run=dry_run)
    if plan.executor == "empty_source":  # nothing to match, insert or update: nothing read
        return Executed([], MergeOutput(), 0, 0, plan.source_rows, plan.pruning)
    run = MergeRun(spark, plan, prepared.source)
    started = time.monotonic()
    if plan.executor == "insert_only":
        out = insert_unmatched(run, dry_run=dry_run)
        return Executed([], out, 0, _since(started), plan.source_rows, plan.pruning)
    if plan.executor == "one_join":
        out, vectors, scan_ms = mark_rows_in_one_join(run, dry_run=dry_run)
        rewrite_ms = _since(started) - scan_ms
        return Executed(vectors.removed, out, scan_ms, rewrite_ms, plan.source_rows, plan.pruning, vectors)
    phase1 = find_touched_files(run)
    scan_ms, started = _since(started), time.monotonic()
    if plan.executor == "classic_mark_deleted":
        out, vectors = mark_touched_rows(run, phase1, dry_run=dry_run)
        rewrite_ms = _since(started)
        return Executed(vectors.removed, out, scan_ms, rewrite_ms, plan.source_rows, plan.pruning, vectors)
    out = rewrite_touched_files(run, phase1, dry_run=dry_run)
    return Executed(phase1.files, out, scan_ms, _since(started), plan.source_rows, plan.pruning)


def _insert_into_empty(spark: SparkSession, prepared: Prepared, *, dry_run: bool) -> Executed:
    """Insert-only into a table with no files: one pass over the source, profiled while written.

    The profile gives the source's row count and the data skipping by which the commit's
    conflict check judges files a concurrent writer added.
    """
    plan = prepared.plan
    profile = Observation("merge_source")
    observed = prepared.source.observe(profile, *profile_aggregates(plan.spec, plan.snapshot.schema))
    started = time.monotonic()
    out = insert_unmatched(MergeRun(spark, plan, observed), dry_run=dry_run)
    rewrite_ms = _since(started)
    values = profile.get
    pruning = prepare_pruning(spark, plan.spec, plan.snapshot, values)
    return Executed([], out, 0, rewrite_ms, int(values["n"]), pruning)


def _since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
