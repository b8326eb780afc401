"""SCD type 1: a run's events folded per key into the table's net changes and the state's new rows.

One aggregation over the events (joined with the stored state of their keys) decides, per
key, which events are late (not newer than the key's stored sequence, or older than the
latest truncate) and the latest of the others: its row is stored (upsert) or its key deleted.
With ``ignore_null_updates`` every column takes its latest non-null value after the key's
last delete instead, and ``__cdc_reset`` says whether the stored row still counts (no delete
or truncate since), so that a null keeps the stored value. A truncate newer than the last one
deletes every stored key whose last event is older than it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.cdc import state as st
from dbt.adapters.deltamerge.cdc.events import (
    EVENT_ID,
    EVENTS_N,
    IS_DELETE,
    IS_TRUNCATE,
    SEQ,
    SEQUENCES_N,
    STATE_DELETED,
    STATE_SEQ,
    Events,
    check_distinct_sequences,
    col,
)
from dbt.adapters.deltamerge.cdc.spec import CdcSpec
from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta.txn import cdc_event_metrics
from dbt.adapters.deltamerge.merge import checkpoint_with_aggregates, fits_in_broadcast

OP, RESET = "__cdc_op", "__cdc_reset"
_WINNER, _LAST_DELETE, _KEY = "__cdc_winner", "__cdc_last_delete", "__cdc_key_"
LATE_N = "__cdc_late_n"


@dataclass(frozen=True)
class Folded:
    """A run's net changes for the table and new rows for the state, with the event counts."""

    changes: DataFrame  # keys, OP ('upsert' / 'delete'), RESET, the stored columns
    state_rows: DataFrame  # the state's columns
    counts: dict[str, int]
    state_row_count: int


def fold(
    spec: CdcSpec,
    events: Events,
    stored: tuple[str, ...],
    state_keys: DataFrame | None,
    *,
    watermark: Any,
    all_state_keys: DataFrame | None,
) -> Folded:
    """Fold ``events`` against the stored state of their keys.

    ``state_keys`` are the state's key rows of the events' keys (any age), None when no stored
    row can matter. ``watermark`` is the stored truncate sequence; ``all_state_keys`` (every key row) is
    needed only when this run's truncate is newer than it.
    """
    new_truncate = events.truncate_seq is not None and (watermark is None or events.truncate_seq > watermark)
    cutoff = events.truncate_seq if new_truncate else watermark
    seq_type = events.frame.schema[SEQ].dataType
    bound = _literal(cutoff, seq_type) if cutoff is not None else None

    def late(seq: Column) -> Column:
        stale = col(STATE_SEQ).isNotNull() & (seq <= col(STATE_SEQ))
        return stale | (seq < bound) if bound is not None else stale

    if spec.ignore_null_updates:
        joined = _with_state(
            spec, events.distinct().where(~col(IS_TRUNCATE)), state_keys, at_most=events.received
        )
        per_key = _per_key(spec, stored, joined.withColumn("__cdc_late", late(col(SEQ))))
    else:
        content = tuple(c for c in events.source_columns if c.lower() not in {k.lower() for k in spec.keys})
        frame = events.frame.where(~col(IS_TRUNCATE))
        per_key = _per_key_narrow(spec, frame, content, state_keys, late, at_most=events.received)
    per_key, totals = checkpoint_with_aggregates(
        per_key,
        "cdc_fold",
        [
            F.sum(EVENTS_N).alias("events"),
            F.sum(LATE_N).alias("late"),
            F.count(F.col(_WINNER)).alias("keys"),
            F.sum((F.col(EVENTS_N) != F.col(SEQUENCES_N)).cast("long")).alias("clashes"),
        ],
    )
    if totals["clashes"]:
        check_distinct_sequences(spec, per_key)
    winners = per_key.where(F.col(_WINNER).isNotNull())
    keyed = winners
    if not spec.ignore_null_updates:
        small = fits_in_broadcast(winners.schema, int(totals["keys"] or 0))
        winners = _with_values(stored, winners, events.frame, small=small)
    truncated = (
        _truncated_keys(spec, all_state_keys, keyed, _literal(cutoff, seq_type))
        if new_truncate and all_state_keys is not None
        else None
    )
    changes = _changes(spec, stored, winners, truncated, new_truncate, _literal(cutoff, seq_type))
    state_rows = _state_rows(spec, keyed, cutoff if new_truncate else None, seq_type)
    received, non_truncate = events.received, int(totals["events"] or 0)
    duplicates = max(0, received - int(events.profile.get("truncates") or 0) - non_truncate)
    late_count = int(totals["late"] or 0)
    counts = cdc_event_metrics(
        received=received, applied=received - duplicates - late_count, late=late_count, duplicates=duplicates
    )
    return Folded(changes, state_rows, counts, int(totals["keys"] or 0) + (1 if new_truncate else 0))


def _with_state(spec: CdcSpec, events: DataFrame, state_keys: DataFrame | None, *, at_most: int) -> DataFrame:
    """Each event row with its key's stored sequence and tombstone flag (null when the key is new).

    ``state_keys``: the state's rows of the events' keys, any age (their latest counts); None
    when nothing stored can matter (a first run, or every stored sequence is older). There is
    a stored row for at most ``at_most`` keys (the events' count): broadcast when that is small.
    """
    if state_keys is None:
        return events.select(
            "*",
            F.lit(None).cast(events.schema[SEQ].dataType).alias(STATE_SEQ),
            F.lit(None).cast("boolean").alias(STATE_DELETED),
        )
    stored = st.latest(state_keys, spec.keys).select(
        *[col(k).alias(f"{_KEY}{i}") for i, k in enumerate(spec.keys)],
        col(st.SEQ).alias(STATE_SEQ),
        col(st.DELETED).alias(STATE_DELETED),
    )
    on = [col(k).eqNullSafe(F.col(f"{_KEY}{i}")) for i, k in enumerate(spec.keys)]
    condition = on[0]
    for part in on[1:]:
        condition = condition & part
    small = fits_in_broadcast(stored.schema, at_most)
    joined = events.join(F.broadcast(stored) if small else stored, condition, "left")
    return joined.drop(*[f"{_KEY}{i}" for i in range(len(spec.keys))])


def _per_key_narrow(
    spec: CdcSpec,
    events: DataFrame,
    content: tuple[str, ...],
    state_keys: DataFrame | None,
    late: Callable[[Column], Column],
    *,
    at_most: int,
) -> DataFrame:
    """One row per key of the events: counts and the winning event's sequence, flag and id.

    Only narrow values move: one row per (key, sequence) with two hashes of the events'
    ``content`` (identical events hash alike; different hashes are a clash), joined with the
    key's stored state when there is any to read, then one aggregation per key. The winner's
    whole row is joined back by its id (``_with_values``).
    """
    keys = [col(k) for k in spec.keys]
    hashed = [x for c in content for x in (col(c).isNull(), col(c))]
    h1, h2 = F.xxhash64(*hashed), F.hash(*hashed)
    by_sequence = events.groupBy(*keys, col(SEQ)).agg(
        F.min(h1).alias("__cdc_h1"),
        F.max(h1).alias("__cdc_h1_"),
        F.min(h2).alias("__cdc_h2"),
        F.max(h2).alias("__cdc_h2_"),
        F.max(col(IS_DELETE)).alias(IS_DELETE),
        F.min(col(EVENT_ID)).alias(EVENT_ID),
    )
    joined = _with_state(spec, by_sequence, state_keys, at_most=at_most)
    is_late = late(col(SEQ))
    clash = (F.col("__cdc_h1") != F.col("__cdc_h1_")) | (F.col("__cdc_h2") != F.col("__cdc_h2_"))
    winner = F.struct(col(SEQ).alias("seq"), col(IS_DELETE).alias("del"), col(EVENT_ID).alias("id"))
    return joined.groupBy(*keys).agg(
        (F.count(F.lit(1)) + F.sum(clash.cast("long"))).alias(EVENTS_N),
        F.count(F.lit(1)).alias(SEQUENCES_N),
        F.sum(is_late.cast("long")).alias(LATE_N),
        F.max(F.when(~is_late, winner)).alias(_WINNER),
        F.first(col(STATE_SEQ), ignorenulls=True).alias(STATE_SEQ),
        F.first(col(STATE_DELETED), ignorenulls=True).alias(STATE_DELETED),
    )


def _with_values(stored: tuple[str, ...], winners: DataFrame, events: DataFrame, *, small: bool) -> DataFrame:
    """The winners with their events' stored columns, joined by event id."""
    ids = winners.select(F.col(_WINNER).getField("id").alias(EVENT_ID), *winners.columns)
    wanted = [col(c) for c in stored if c.lower() not in {k.lower() for k in ids.columns}]
    rows = events.select(col(EVENT_ID), *wanted)
    return rows.join(F.broadcast(ids) if small else ids, EVENT_ID).drop(EVENT_ID)


def _per_key(spec: CdcSpec, stored: tuple[str, ...], joined: DataFrame) -> DataFrame:
    """One row per key (``ignore_null_updates``): event counts, per-column latest values, state."""
    keys = [col(k) for k in spec.keys]
    values = [c for c in stored if c.lower() not in {k.lower() for k in spec.keys}]
    live = ~F.col("__cdc_late")
    aggregates: list[Column] = [
        F.count(F.lit(1)).alias(EVENTS_N),
        F.count_distinct(col(SEQ)).alias(SEQUENCES_N),
        F.sum(F.col("__cdc_late").cast("long")).alias(LATE_N),
        F.max(F.when(live, F.struct(col(SEQ).alias("seq"), col(IS_DELETE).alias("del")))).alias(_WINNER),
        F.first(col(STATE_SEQ), ignorenulls=True).alias(STATE_SEQ),
        F.first(col(STATE_DELETED), ignorenulls=True).alias(STATE_DELETED),
    ]
    if spec.ignore_null_updates:
        last_delete = F.max(F.when(live & col(IS_DELETE), col(SEQ))).over(Window.partitionBy(*keys))
        joined = joined.withColumn(_LAST_DELETE, last_delete)
        after = live & ~col(IS_DELETE) & (F.col(_LAST_DELETE).isNull() | (col(SEQ) > F.col(_LAST_DELETE)))
        aggregates.append(F.max(F.col(_LAST_DELETE)).alias(_LAST_DELETE))
        for name in values:
            latest = F.when(
                after & col(name).isNotNull(), F.struct(col(SEQ).alias("s"), col(name).alias("v"))
            )
            aggregates.append(F.max(latest).getField("v").alias(name))
    else:
        whole = F.struct(col(SEQ).alias("seq"), *[col(c).alias(c) for c in values])
        aggregates.append(F.max(F.when(live, whole)).alias("__cdc_latest"))
    per_key = joined.groupBy(*keys).agg(*aggregates)
    if not spec.ignore_null_updates:
        per_key = per_key.select("*", *[F.col("__cdc_latest").getField(c).alias(c) for c in values]).drop(
            "__cdc_latest"
        )
    return per_key


def _changes(
    spec: CdcSpec,
    stored: tuple[str, ...],
    winners: DataFrame,
    truncated: DataFrame | None,
    new_truncate: bool,
    cutoff: Column,
) -> DataFrame:
    """The table's net changes: one row per key to upsert or delete."""
    op = F.when(F.col(_WINNER).getField("del"), F.lit("delete")).otherwise(F.lit("upsert"))
    reset = F.lit(False)
    if spec.ignore_null_updates:
        # The stored row no longer counts after a delete in this run, or a truncate that removed it.
        reset = F.col(_LAST_DELETE).isNotNull()
        if new_truncate:
            was_live = F.col(STATE_SEQ).isNotNull() & ~F.coalesce(F.col(STATE_DELETED), F.lit(False))
            reset = reset | (was_live & (F.col(STATE_SEQ) < cutoff))
    changes = winners.select(
        *[col(c) for c in stored if c.lower() in {k.lower() for k in spec.keys}],
        op.alias(OP),
        reset.alias(RESET),
        *[col(c) for c in stored if c.lower() not in {k.lower() for k in spec.keys}],
    )
    if truncated is not None:
        missing = [
            F.lit(None).cast(changes.schema[c].dataType).alias(c)
            for c in changes.columns
            if c not in (OP, RESET) and c.lower() not in {k.lower() for k in spec.keys}
        ]
        deletes = truncated.select(
            *[col(k) for k in spec.keys], F.lit("delete").alias(OP), F.lit(True).alias(RESET), *missing
        )
        changes = changes.unionByName(deletes)
    return changes


def _truncated_keys(spec: CdcSpec, all_keys: DataFrame, winners: DataFrame, cutoff: Column) -> DataFrame:
    """Stored live keys whose last event is older than the new truncate and that no event of this run sets."""
    older = all_keys.where(~col(st.DELETED) & (col(st.SEQ) < cutoff)).select(*[col(k) for k in spec.keys])
    touched = winners.select(*[col(k) for k in spec.keys])
    on = [older[quote_identifier(k)].eqNullSafe(touched[quote_identifier(k)]) for k in spec.keys]
    condition = on[0]
    for part in on[1:]:
        condition = condition & part
    return older.join(touched, condition, "left_anti")


def _state_rows(spec: CdcSpec, winners: DataFrame, truncate_seq: Any, seq_type: T.DataType) -> DataFrame:
    """The state's new rows: each set key's last sequence and tombstone flag, and a new truncate's.

    Keys a truncate removed need no row: the truncate's sequence makes their older events late.
    """
    now = F.current_timestamp()
    rows = winners.select(
        F.lit(st.KEY_ROW).alias(st.ROW),
        *[col(k) for k in spec.keys],
        F.col(_WINNER).getField("seq").alias(st.SEQ),
        F.col(_WINNER).getField("del").alias(st.DELETED),
        now.alias(st.APPLIED_AT),
    )
    if truncate_seq is not None:
        watermark = rows.sparkSession.range(1).select(
            F.lit(st.TRUNCATE_ROW).alias(st.ROW),
            *[F.lit(None).cast(rows.schema[k].dataType).alias(k) for k in spec.keys],
            _literal(truncate_seq, seq_type).alias(st.SEQ),
            F.lit(False).alias(st.DELETED),
            now.alias(st.APPLIED_AT),
        )
        rows = rows.unionByName(watermark)
    return rows


def _literal(value: Any, data_type: T.DataType) -> Column:
    """A sequence value (a Row of the sequence struct) as a typed struct literal."""
    if value is None:
        return F.lit(None).cast(data_type)
    assert isinstance(data_type, T.StructType)
    return F.struct(*[F.lit(value[i]).cast(f.dataType).alias(f.name) for i, f in enumerate(data_type.fields)])
