"""SCD type 2: the keys a run touches get their history replayed with the run's events.

As ``docs/configuration.md`` ("CDC apply") says, the stored versions of the run's keys stand for
events (each version for the upsert that opened it at ``__START_AT``; each ``__END_AT`` no version
starts at for a delete) and are replayed, in sequence order, together with the run's events (a run's event
at a sequence the history already has is already applied). The replay is window functions
over the keys, no Python on executors: a delete ends a segment; within a segment an upsert
opens a version when a tracked column differs from the previous upsert's; a version ends at
the next version's start or the delete. The new history is then merged into the table on
(keys, ``__START_AT``) with update-only-if-changed: versions that stay as they were are not
rewritten, versions the replay no longer has are deleted (``apply_scd2``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.cdc.events import (
    IS_DELETE,
    SEQ,
    check_distinct_sequences,
    col,
    files_with_event_keys,
    framed_events,
    keys_semi_join,
    rows_by_key_range,
    sequences_per_key,
)
from dbt.adapters.deltamerge.cdc.scd1 import OP
from dbt.adapters.deltamerge.cdc.spec import END_AT, START_AT, CdcSpec
from dbt.adapters.deltamerge.common.sql import qualified, quote_identifier
from dbt.adapters.deltamerge.delta import Snapshot
from dbt.adapters.deltamerge.delta.data import WriteRequest, read_files, write_dataframe
from dbt.adapters.deltamerge.delta.log import NO_CHANGE, TableChange
from dbt.adapters.deltamerge.delta.txn import WriteResult, cdc_event_metrics
from dbt.adapters.deltamerge.merge import DEFAULT_SOURCE_ALIAS as S
from dbt.adapters.deltamerge.merge import (
    Assignment,
    MergeBehaviour,
    MergeClause,
    MergeSpec,
    checkpoint_with_aggregates,
    fits_in_broadcast,
    merge_into,
)
from dbt.adapters.deltamerge.skipping.files import (
    key_profile_aggregates,
)

_SEGMENT, _NEW, _VERSION, _END = "__cdc_segment", "__cdc_new_version", "__cdc_version", "__cdc_end"


@dataclass(frozen=True)
class Replayed:
    """The merge source (new history rows to upsert, old versions to delete) and the counts."""

    changes: DataFrame  # keys, OP, the stored values, __START_AT, __END_AT
    counts: dict[str, int]


def sequence_column(spec: CdcSpec, seq: Column) -> Column:
    """``__START_AT``'s value for a sequence struct: the column itself for one ``sequence_by``."""
    return seq.getField(spec.sequence_by[0]) if len(spec.sequence_by) == 1 else seq


def as_sequence(spec: CdcSpec, value: Column, seq_type: T.DataType) -> Column:
    """The sequence struct of a ``__START_AT`` / ``__END_AT`` value."""
    if len(spec.sequence_by) == 1:
        assert isinstance(seq_type, T.StructType)
        return F.struct(value.cast(seq_type.fields[0].dataType).alias(spec.sequence_by[0]))
    return value


def replay(
    spec: CdcSpec, run_events: DataFrame, stored: tuple[str, ...], history: DataFrame, received: int
) -> Replayed:
    """The new history of the run's keys and the merge rows that turn ``history`` into it."""
    keys = list(spec.keys)
    values = [c for c in stored if c.lower() not in {k.lower() for k in keys}]
    seq_type = run_events.schema[SEQ].dataType
    past = _history_events(spec, history, values, seq_type)
    known = past.select(*[col(k) for k in keys], col(SEQ))
    fresh = run_events.select(*[col(k) for k in keys], *[col(c) for c in values], col(SEQ), col(IS_DELETE))
    fresh = _join(fresh, known, [*keys, SEQ], "left_anti")
    events, totals = checkpoint_with_aggregates(
        fresh.withColumn("__cdc_run", F.lit(True)).unionByName(past.withColumn("__cdc_run", F.lit(False))),
        "cdc_replay",
        [F.sum(F.col("__cdc_run").cast("long")).alias("applied")],
    )
    new_history = _versions(spec, events.drop("__cdc_run"), values, seq_type)
    old = history.select(*[col(k) for k in keys], col(START_AT))
    gone = _join(
        old, new_history.select(*[col(k) for k in keys], col(START_AT)), [*keys, START_AT], "left_anti"
    )
    deletes = gone.select(
        *[col(k) for k in keys],
        F.lit("delete").alias(OP),
        *[F.lit(None).cast(new_history.schema[c].dataType).alias(c) for c in values],
        col(START_AT),
        F.lit(None).cast(new_history.schema[END_AT].dataType).alias(END_AT),
    )
    upserts = new_history.select(
        *[col(k) for k in keys],
        F.lit("upsert").alias(OP),
        *[col(c) for c in values],
        col(START_AT),
        col(END_AT),
    )
    applied = int(totals["applied"] or 0)
    counts = cdc_event_metrics(received=received, applied=applied, late=max(0, received - applied))
    return Replayed(upserts.unionByName(deletes), counts)


def _history_events(spec: CdcSpec, history: DataFrame, values: list[str], seq_type: T.DataType) -> DataFrame:
    """Stored versions as events: an upsert at each start, a delete at each end no version starts at."""
    keys = list(spec.keys)
    upserts = history.select(
        *[col(k) for k in keys],
        *[col(c) for c in values],
        as_sequence(spec, col(START_AT), seq_type).alias(SEQ),
        F.lit(False).alias(IS_DELETE),
    )
    ends = history.where(col(END_AT).isNotNull()).select(*[col(k) for k in keys], col(END_AT).alias(_END))
    starts = history.select(*[col(k) for k in keys], col(START_AT).alias(_END))
    deletes = _join(ends, starts, [*keys, _END], "left_anti").select(
        *[col(k) for k in keys],
        *[F.lit(None).cast(history.schema[c].dataType).alias(c) for c in values],
        as_sequence(spec, col(_END), seq_type).alias(SEQ),
        F.lit(True).alias(IS_DELETE),
    )
    return upserts.unionByName(deletes)


def _versions(spec: CdcSpec, events: DataFrame, values: list[str], seq_type: T.DataType) -> DataFrame:
    """The versions the events replay into: keys, values, ``__START_AT``, ``__END_AT``."""
    keys = [col(k) for k in spec.keys]
    by_key = Window.partitionBy(*keys).orderBy(col(SEQ))
    before = by_key.rowsBetween(Window.unboundedPreceding, -1)
    events = events.withColumn(_SEGMENT, F.coalesce(F.sum(col(IS_DELETE).cast("int")).over(before), F.lit(0)))
    upserts = events.where(~col(IS_DELETE))
    in_segment = Window.partitionBy(*keys, F.col(_SEGMENT)).orderBy(col(SEQ))
    if spec.ignore_null_updates:
        so_far = in_segment.rowsBetween(Window.unboundedPreceding, 0)
        upserts = upserts.select(
            *[col(k) for k in spec.keys],
            *[F.last(col(c), ignorenulls=True).over(so_far).alias(c) for c in values],
            col(SEQ),
            col(IS_DELETE),
            F.col(_SEGMENT),
        )
    tracked = spec.tracked_columns(values)
    first = F.lag(col(SEQ)).over(in_segment).isNull()
    changed = [~col(c).eqNullSafe(F.lag(col(c)).over(in_segment)) for c in tracked]
    opens = first
    for change in changed:
        opens = opens | change
    upserts = upserts.withColumn(_NEW, opens)
    running = by_key.rowsBetween(Window.unboundedPreceding, 0)
    upserts = upserts.withColumn(_VERSION, F.sum(F.col(_NEW).cast("int")).over(running))
    bounds = (
        upserts.where(F.col(_NEW))
        .select(*keys, col(SEQ), F.lit(False).alias(IS_DELETE))
        .unionByName(events.where(col(IS_DELETE)).select(*keys, col(SEQ), col(IS_DELETE)))
    )
    bounds = bounds.withColumn(_END, F.lead(col(SEQ)).over(by_key)).where(~col(IS_DELETE))
    latest = F.max(F.struct(col(SEQ).alias("s"), *[col(c).alias(c) for c in values])).alias("__cdc_last")
    per_version = upserts.groupBy(*keys, F.col(_VERSION)).agg(F.min(col(SEQ)).alias("__cdc_start"), latest)
    bounds = bounds.select(*keys, col(SEQ).alias("__cdc_start"), F.col(_END))
    joined = _join(per_version, bounds, [*spec.keys, "__cdc_start"], "inner")
    return joined.select(
        *keys,
        *[F.col("__cdc_last").getField(c).alias(c) for c in values],
        sequence_column(spec, F.col("__cdc_start")).alias(START_AT),
        sequence_column(spec, F.col(_END)).alias(END_AT),
    )


def _join(left: DataFrame, right: DataFrame, names: list[str], how: str) -> DataFrame:
    """``left`` joined with ``right`` on null-safe equality of ``names`` (``right``'s copies dropped).

    ``right``'s join columns are renamed first: both sides often derive from one frame, and
    Spark would otherwise resolve both sides of the condition to the same column.
    """
    renamed = {name: f"__cdc_right_{i}" for i, name in enumerate(names)}
    right = right.select(*[col(c).alias(renamed[c]) if c in renamed else col(c) for c in right.columns])
    condition = col(names[0]).eqNullSafe(F.col(renamed[names[0]]))
    for name in names[1:]:
        condition = condition & col(name).eqNullSafe(F.col(renamed[name]))
    joined = left.join(right, condition, how)
    return joined if how in ("left_anti", "left_semi") else joined.drop(*renamed.values())


def apply_scd2(
    spark: SparkSession,
    source: DataFrame,
    spec: CdcSpec,
    stored: tuple[str, ...],
    *,
    table: Snapshot | None,
    create: WriteRequest,
    txn: tuple[str, int],
    change: TableChange = NO_CHANGE,
) -> WriteResult:
    """SCD 2: replay the run's keys' history with its events, then merge (or create) the versions."""
    events = framed_events(source, spec, key_profile_aggregates(spec.keys), count_clashes=True)
    if events.profile["clashes"]:  # counted with the events: no job of its own when there are none
        check_distinct_sequences(spec, sequences_per_key(spec, events))
        raise AssertionError(f"{events.profile['clashes']} events share a sequence, none named (a bug)")
    if table is None:
        history = spark.createDataFrame([], _history_schema(spec, events.frame.schema, stored))
    else:
        candidates = files_with_event_keys(table, spec, events)
        touched_keys = events.frame.select(*[quote_identifier(k) for k in spec.keys]).distinct()
        small = fits_in_broadcast(touched_keys.schema, events.received)
        rows = read_files(spark, table, candidates)
        history = keys_semi_join(rows, touched_keys, spec.keys, broadcast=small)
    replayed = replay(spec, events.distinct(), stored, history, events.received)
    columns = [*stored, START_AT, END_AT]
    if table is None:
        request = dataclasses.replace(create, txn=txn, extra_metrics=replayed.counts)
        rows = replayed.changes.where(F.col(OP) == "upsert").select(*map(quote_identifier, columns))
        return write_dataframe(spark, rows_by_key_range(rows, spec, request, events.received), request)
    values = [c for c in stored if c.lower() not in {k.lower() for k in spec.keys}]
    upsert = f"{qualified(S, OP)} = 'upsert'"
    main = MergeSpec.of(
        spec.model,
        unique_key=[*spec.keys, START_AT],
        clauses=[
            MergeClause("matched", "delete", condition=f"{qualified(S, OP)} = 'delete'"),
            MergeClause("matched", "update", assignments=_assigned([*values, END_AT])),
            MergeClause("not_matched", "insert", condition=upsert, assignments=_assigned(columns)),
        ],
        behaviour=MergeBehaviour(update_only_if_changed=True, copy_on_write=spec.copy_on_write),
    )
    counts = replayed.counts
    return merge_into(spark, replayed.changes, table, main, change=change, txn=txn, extra_metrics=counts)


def _assigned(columns: Sequence[str]) -> tuple[Assignment, ...]:
    """Each column set from the source's column of the same name."""
    return tuple(Assignment(c, qualified(S, c)) for c in columns)


def _history_schema(spec: CdcSpec, events: T.StructType, stored: tuple[str, ...]) -> T.StructType:
    seq = events[SEQ].dataType
    assert isinstance(seq, T.StructType)
    at = seq.fields[0].dataType if len(spec.sequence_by) == 1 else seq
    return T.StructType(
        [
            *[T.StructField(events[c].name, events[c].dataType) for c in stored],
            T.StructField(START_AT, at),
            T.StructField(END_AT, at),
        ]
    )
