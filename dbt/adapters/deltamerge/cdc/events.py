"""A run's change events on Spark: framed, checked, de-duplicated, and set against the stored state.

Every event gets its sequence as one struct (compared field by field, so a list of
``sequence_by`` columns orders lexicographically), a delete flag and a truncate flag.
The events are materialized once; a null sequence or two different events of one key
with one sequence fail the run before anything is written (identical events collapse:
``Events.distinct``, or a set per key in SCD 1's fold). ``files_with_event_keys`` and
``keys_semi_join`` find what a run's keys have stored (data skipping by the events' key
ranges); ``rows_by_key_range`` lays a new table out in key ranges.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from dbt.adapters.deltamerge.cdc.spec import CdcSpec
from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta import AddFile, Snapshot
from dbt.adapters.deltamerge.delta.data import WriteRequest
from dbt.adapters.deltamerge.merge import checkpoint_with_aggregates
from dbt.adapters.deltamerge.skipping.files import (
    files_in_key_ranges,
    key_ranges,
    partition_types,
)

SEQ, IS_DELETE, IS_TRUNCATE = "__cdc_seq", "__cdc_is_delete", "__cdc_is_truncate"
# Each event's own id (stable: the frame is materialized), so a winner is found by one value.
EVENT_ID = "__cdc_event_id"
SEQUENCE_LOW = "__cdc_sequence_low"
# Per key: distinct events and distinct sequences among them (a clash when they differ).
EVENTS_N, SEQUENCES_N = "__cdc_events_n", "__cdc_sequences_n"
# Per event (``framed_events(..., count_clashes=True)``): distinct events of its key and sequence.
AT_SEQUENCE_N = "__cdc_at_sequence_n"
# State columns (see ``state.py``) as they appear next to an event after the join.
STATE_SEQ, STATE_DELETED = "__cdc_state_seq", "__cdc_state_deleted"
_EXAMPLES = 5


@dataclass(frozen=True)
class Events:
    """One run's events, materialized, with what the checks found."""

    frame: DataFrame  # every event as received (identical ones not folded yet)
    received: int
    truncate_seq: Any
    profile: dict[str, Any]
    source_columns: tuple[str, ...] = ()

    def distinct(self) -> DataFrame:
        """The events with identical ones folded."""
        return self.frame.dropDuplicates(list(self.source_columns))


def col(name: str) -> Column:
    """A column by its (quoted) name."""
    return F.col(quote_identifier(name))


def framed_events(
    source: DataFrame, spec: CdcSpec, profile: list[Column], *, count_clashes: bool = False
) -> Events:
    """The source's events materialized with sequence and flags; a null sequence fails the run.

    ``count_clashes``: the profile's ``clashes`` also counts the events that share their key and
    sequence with a different event, in the same pass (SCD 2, whose replay has no per-key fold
    to count them in): ``check_distinct_sequences`` of ``sequences_per_key`` then names them only
    when there are any.
    """
    seq = F.struct(*[col(c).alias(c) for c in spec.sequence_by])
    null_seq = " OR ".join(f"{quote_identifier(c)} IS NULL" for c in spec.sequence_by)
    framed = source.select(
        *[col(c) for c in source.columns],
        seq.alias(SEQ),
        _flag(spec.apply_as_deletes).alias(IS_DELETE),
        _flag(spec.apply_as_truncates).alias(IS_TRUNCATE),
        F.monotonically_increasing_id().alias(EVENT_ID),
    )
    clashes: list[Column] = []
    if count_clashes:
        at_sequence = Window.partitionBy(*[col(k) for k in spec.keys], F.col(SEQ))
        distinct_events = F.size(F.collect_set(F.struct(*[col(c) for c in source.columns])).over(at_sequence))
        framed = framed.withColumn(AT_SEQUENCE_N, distinct_events)
        clashes.append(F.sum((F.col(AT_SEQUENCE_N) > 1).cast("long")).alias("clashes"))
    frame, aggregates = checkpoint_with_aggregates(
        framed,
        "cdc_events",
        [
            *clashes,
            F.count(F.lit(1)).alias("received"),
            F.sum(F.expr(null_seq).cast("long")).alias("null_sequences"),
            F.max(F.when(col(IS_TRUNCATE), col(SEQ))).alias("truncate_seq"),
            F.sum(col(IS_TRUNCATE).cast("long")).alias("truncates"),
            # The least value of the sequence's first column: when the stored state holds only
            # smaller ones, no event of the run can be late (``state.older_than``).
            F.min(col(spec.sequence_by[0])).alias(SEQUENCE_LOW),
            *profile,
        ],
    )
    if aggregates["null_sequences"]:
        examples = frame.where(null_seq).select(*[col(k) for k in spec.keys]).limit(_EXAMPLES).collect()
        raise SpecError(
            spec.model,
            [
                f"{aggregates['null_sequences']} event(s) have a null sequence_by "
                f"({', '.join(spec.sequence_by)}), e.g. keys {_keys_text(spec, examples)}; every event "
                "needs a sequence to be applied in order. Nothing was written."
            ],
        )
    return Events(
        frame, int(aggregates["received"]), aggregates["truncate_seq"], aggregates, tuple(source.columns)
    )


def sequences_per_key(spec: CdcSpec, events: Events) -> DataFrame:
    """Per key, its distinct events (``EVENTS_N``) and their distinct sequences (``SEQUENCES_N``):
    a clash where they differ (``check_distinct_sequences``)."""
    return (
        events.distinct()
        .groupBy(*[col(k) for k in spec.keys])
        .agg(F.count(F.lit(1)).alias(EVENTS_N), F.count_distinct(F.col(SEQ)).alias(SEQUENCES_N))
    )


def check_distinct_sequences(spec: CdcSpec, per_key: DataFrame) -> None:
    """Fail naming the keys where two different events share a sequence (``EVENTS_N`` vs ``SEQUENCES_N``)."""
    clashes = per_key.where(F.col(EVENTS_N) != F.col(SEQUENCES_N)).limit(_EXAMPLES).collect()
    if clashes:
        raise SpecError(
            spec.model,
            [
                "two different events of one key have the same sequence_by "
                f"({', '.join(spec.sequence_by)}) for keys {_keys_text(spec, clashes)}: their order is "
                "unknown. Make the sequence unique per key (add a tie-breaker column to sequence_by). "
                "Nothing was written."
            ],
        )


def _flag(condition: str | None) -> Column:
    return F.coalesce(F.expr(condition), F.lit(False)) if condition else F.lit(False)


def _keys_text(spec: CdcSpec, rows: list[Any]) -> str:
    return "; ".join(", ".join(f"{k}={row[k]!r}" for k in spec.keys) for row in rows)


# A new table's files hold about this many rows each, in key order (data skipping on the keys).
ROWS_PER_FILE = 250_000


def keys_semi_join(
    rows: DataFrame, keys: DataFrame, names: tuple[str, ...], *, broadcast: bool = True
) -> DataFrame:
    """``rows`` whose key (null-safely) is among ``keys``' rows."""
    renamed = keys.select(*[F.col(quote_identifier(k)).alias(f"__cdc_k{i}") for i, k in enumerate(names)])
    condition = None
    for i, k in enumerate(names):
        part = F.col(quote_identifier(k)).eqNullSafe(F.col(f"__cdc_k{i}"))
        condition = part if condition is None else condition & part
    return rows.join(F.broadcast(renamed) if broadcast else renamed, condition, "left_semi")


def rows_by_key_range(rows: DataFrame, spec: CdcSpec, request: WriteRequest, count: int) -> DataFrame:
    """A new table's rows in key ranges, one per file, so later runs skip files by key.

    A partitioned table keeps Spark's order: ranges would scatter every task over the partitions.
    """
    if request.partition_by:
        return rows
    files = max(1, count // ROWS_PER_FILE)
    return rows.repartitionByRange(files, *[F.col(quote_identifier(k)) for k in spec.keys])


def files_with_event_keys(snapshot: Snapshot, spec: CdcSpec, events: Events) -> list[AddFile]:
    """The files of ``snapshot`` (the table or its state) that may hold a key of this run's events."""
    ranges = key_ranges(events.profile, spec.keys, snapshot.schema)
    return files_in_key_ranges(snapshot.files, ranges, partition_types(snapshot))
