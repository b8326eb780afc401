"""CDC apply: a run's change events folded with Spark, then written by the merge engine.

Parse (``CdcSpec``) -> fold (``scd1``; the state of the events' keys read with data
skipping) -> the state's next commit prepared and recorded -> the table's own write
(a merge with update-only-if-changed, or a CREATE on the first run and ``--full-refresh``)
-> the state's commit. See ``state.py`` for why the record makes the pair crash-safe.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.cdc import state as st
from dbt.adapters.deltamerge.cdc.events import (
    EVENTS_N,
    SEQ,
    SEQUENCE_LOW,
    SEQUENCES_N,
    Events,
    check_distinct_sequences,
    framed_events,
)
from dbt.adapters.deltamerge.cdc.scd1 import OP, RESET, Folded, fold
from dbt.adapters.deltamerge.cdc.scd2 import replay
from dbt.adapters.deltamerge.cdc.spec import END_AT, START_AT, CdcSpec
from dbt.adapters.deltamerge.common.sql import qualified, quote_identifier
from dbt.adapters.deltamerge.delta.commit import committed_version_of
from dbt.adapters.deltamerge.delta.faults import crash_point
from dbt.adapters.deltamerge.delta.read import read_files
from dbt.adapters.deltamerge.delta.snapshot import AddFile, Snapshot
from dbt.adapters.deltamerge.delta.transaction import WriteResult
from dbt.adapters.deltamerge.delta.write import WriteRequest, write_dataframe
from dbt.adapters.deltamerge.merge.pipeline import merge_into
from dbt.adapters.deltamerge.merge.pruning import prepare_pruning, profile_aggregates
from dbt.adapters.deltamerge.merge.source import fits_in_broadcast
from dbt.adapters.deltamerge.merge.spec import DEFAULT_SOURCE_ALIAS as S
from dbt.adapters.deltamerge.merge.spec import DEFAULT_TARGET_ALIAS as T_
from dbt.adapters.deltamerge.merge.spec import MergeSpec
from dbt.adapters.deltamerge.skipping.files import as_instant
from dbt.adapters.deltamerge.skipping.stats import comparable

# A new table's files hold about this many rows each, in key order (data skipping on the keys).
ROWS_PER_FILE = 250_000

PlanSchema = Callable[[MergeSpec, Snapshot, T.StructType], "T.StructType | None"]


def apply_changes(
    spark: SparkSession,
    source: DataFrame,
    spec: CdcSpec,
    *,
    table: Snapshot | None,
    create: WriteRequest,
    txn: tuple[str, int],
    plan_schema: PlanSchema,
    full_refresh: bool = False,
) -> WriteResult:
    """Apply the events of ``source`` to the table at ``table``.

    With no table, or ``full_refresh``, the table is (re)created with ``create`` from the
    events alone, with the same semantics; otherwise the events are merged in.
    """
    table_path = create.table_path
    stored = spec.stored_columns(source.columns)
    if spec.scd_type == 2:
        return _apply_scd2(
            spark, source, spec, stored, table=None if full_refresh else table, create=create, txn=txn
        )
    if table is not None:
        st.recover(table_path)
    state = st.load_or_create(spark, st.state_path(table_path), _state_schema(spec, source))
    fresh = table is None or full_refresh
    skip_spec = _state_skipping_spec(spec)
    events = framed_events(source, spec, profile_aggregates(skip_spec))
    folded = _fold(spark, spec, events, stored, state, skip_spec, fresh=fresh)
    record = _prepare_state(spark, spec, folded, state, txn, fresh=fresh)
    crash_point("cdc_state_recorded")
    try:
        if fresh or table is None:
            request = dataclasses.replace(create, txn=txn, extra_metrics=folded.counts)
            upserts = folded.changes.where(F.col(OP) == "upsert").select(
                *[quote_identifier(c) for c in stored]
            )
            result = write_dataframe(spark, _by_key(upserts, spec, request, folded.state_row_count), request)
        else:
            main = _merge_spec(spec, stored, table.schema, evolve=False)
            evolved = plan_schema(main, table, folded.changes.select(*map(quote_identifier, stored)).schema)
            if evolved is not None:
                main = _merge_spec(spec, stored, evolved, evolve=True)
            result = merge_into(
                spark, folded.changes, table, main, schema=evolved, txn=txn, extra_metrics=folded.counts
            )
    except BaseException:
        if record is not None and committed_version_of(table_path, *txn) is None:
            st.abandon(record)
        raise
    crash_point("cdc_table_committed")
    if record is not None:
        st.complete(record, table_committed=result.version is not None)
    return result


def _apply_scd2(
    spark: SparkSession,
    source: DataFrame,
    spec: CdcSpec,
    stored: tuple[str, ...],
    *,
    table: Snapshot | None,
    create: WriteRequest,
    txn: tuple[str, int],
) -> WriteResult:
    """SCD 2: replay the run's keys' history with its events, then merge (or create) the versions."""
    skip_spec = _state_skipping_spec(spec)
    events = framed_events(source, spec, profile_aggregates(skip_spec))
    keys = [quote_identifier(k) for k in spec.keys]
    check_distinct_sequences(
        spec,
        events.distinct()
        .groupBy(*keys)
        .agg(F.count(F.lit(1)).alias(EVENTS_N), F.count_distinct(SEQ).alias(SEQUENCES_N)),
    )
    if table is None:
        history = spark.createDataFrame([], _history_schema(spec, events.frame.schema, stored))
    else:
        candidates = prepare_pruning(spark, skip_spec, table, events.profile).keep(table.files)
        touched_keys = events.frame.select(*keys).distinct()
        small = fits_in_broadcast(touched_keys.schema, events.received)
        history = _semi_join(read_files(spark, table, candidates), touched_keys, spec.keys, broadcast=small)
    replayed = replay(spec, events.distinct(), stored, history, events.received)
    columns = [*stored, START_AT, END_AT]
    if table is None:
        request = dataclasses.replace(create, txn=txn, extra_metrics=replayed.counts)
        rows = replayed.changes.where(F.col(OP) == "upsert").select(*map(quote_identifier, columns))
        return write_dataframe(spark, _by_key(rows, spec, request, events.received), request)
    values = [c for c in stored if c.lower() not in {k.lower() for k in spec.keys}]
    config = {
        "unique_key": [*spec.keys, START_AT],
        "when_matched": [
            {"condition": f"{qualified(S, OP)} = 'delete'", "action": "delete"},
            {"action": "update", "set": {c: qualified(S, c) for c in (*values, END_AT)}},
        ],
        "when_not_matched": [
            {
                "condition": f"{qualified(S, OP)} = 'upsert'",
                "action": "insert",
                "values": {c: qualified(S, c) for c in columns},
            }
        ],
        "update_only_if_changed": True,
        "change_data_feed": spec.change_data_feed,
    }
    main = MergeSpec.from_config(spec.model, config)
    return merge_into(spark, replayed.changes, table, main, txn=txn, extra_metrics=replayed.counts)


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


def _semi_join(
    rows: DataFrame, keys: DataFrame, names: tuple[str, ...], *, broadcast: bool = True
) -> DataFrame:
    """``rows`` whose key (null-safely) is among ``keys``' rows."""
    renamed = keys.select(*[F.col(quote_identifier(k)).alias(f"__cdc_k{i}") for i, k in enumerate(names)])
    condition = None
    for i, k in enumerate(names):
        part = F.col(quote_identifier(k)).eqNullSafe(F.col(f"__cdc_k{i}"))
        condition = part if condition is None else condition & part
    return rows.join(F.broadcast(renamed) if broadcast else renamed, condition, "left_semi")


def _fold(
    spark: SparkSession,
    spec: CdcSpec,
    events: Events,
    stored: tuple[str, ...],
    state: Snapshot,
    skip_spec: MergeSpec,
    *,
    fresh: bool,
) -> Folded:
    """The fold against the stored state of the events' keys (none on the first run or a full refresh)."""
    if fresh or not state.files:
        return fold(spec, events, stored, None, watermark=None, all_state_keys=None)
    candidates = prepare_pruning(spark, skip_spec, state, events.profile).keep(state.files)
    key_rows = F.col(st.ROW) == st.KEY_ROW
    return fold(
        spec,
        events,
        stored,
        _state_rows_that_matter(spark, spec, events, state, candidates),
        watermark=st.truncate_watermark(spark, state),
        # Every stored key, needed only when the run's truncate is newer than the stored one.
        all_state_keys=st.latest(read_files(spark, state, state.files).where(key_rows), spec.keys)
        if events.truncate_seq is not None
        else None,
    )


def _state_rows_that_matter(
    spark: SparkSession, spec: CdcSpec, events: Events, state: Snapshot, candidates: list[AddFile]
) -> DataFrame | None:
    """The state's key rows of the events' keys that can make one of their events late.

    Only events whose sequence does not start above the newest stored one (file statistics)
    can be late, so only their keys' rows are read; none when every event is newer (events in
    order, the usual case). With ``ignore_null_updates`` a truncate in the run needs every
    event key's row (was the key live?).
    """
    sequence = events.frame.schema[SEQ].dataType
    assert isinstance(sequence, T.StructType)
    first, low = sequence.fields[0].name, events.profile[SEQUENCE_LOW]
    if isinstance(sequence.fields[0].dataType, T.TimestampType):
        low = as_instant(low)  # statistics hold instants
    wanted = events.frame
    if not (spec.ignore_null_updates and events.truncate_seq is not None):
        high = st.newest_start(candidates, sequence)
        if high is not None and comparable(high, low):
            if high < low:
                return None
            kind = sequence.fields[0].dataType
            if not isinstance(kind, T.TimestampNTZType):  # a wall-clock literal would shift by time zone
                wanted = wanted.where(F.col(quote_identifier(first)) <= F.lit(high).cast(kind))
    keys = wanted.select(*[quote_identifier(k) for k in spec.keys]).distinct()
    small = fits_in_broadcast(keys.schema, events.received)
    rows = read_files(spark, state, candidates).where(F.col(st.ROW) == st.KEY_ROW)
    return _semi_join(rows, keys, spec.keys, broadcast=small)


def _prepare_state(
    spark: SparkSession, spec: CdcSpec, folded: Folded, state: Snapshot, txn: tuple[str, int], *, fresh: bool
) -> st.Record | None:
    """Write the state's next commit and its record; None when the state does not change."""
    pending = st.prepare(
        spark,
        state,
        folded.state_rows,
        new_rows=folded.state_row_count,
        replace=fresh,
        retention_hours=spec.tombstone_retention_hours,
    )
    return None if pending is None else st.write_record(state.table_path, pending, txn)


def _merge_spec(spec: CdcSpec, stored: tuple[str, ...], target: T.StructType, *, evolve: bool) -> MergeSpec:
    """The table's merge: delete or upsert each key of the net changes, only where values change."""
    names = {f.name.lower() for f in target.fields}
    keys = {k.lower() for k in spec.keys}
    columns = [c for c in stored if evolve or c.lower() in names]
    values = [c for c in columns if c.lower() not in keys]
    op = qualified(S, OP)

    def assigned(column: str) -> str:
        new = qualified(S, column)
        if not spec.ignore_null_updates:
            return new
        return f"CASE WHEN {qualified(S, RESET)} THEN {new} ELSE coalesce({new}, {qualified(T_, column)}) END"

    matched: list[dict[str, Any]] = [{"condition": f"{op} = 'delete'", "action": "delete"}]
    if values:
        matched.append({"action": "update", "set": {c: assigned(c) for c in values}})
    config = {
        "unique_key": list(spec.keys),
        "when_matched": matched,
        "when_not_matched": [
            {
                "condition": f"{op} = 'upsert'",
                "action": "insert",
                "values": {c: qualified(S, c) for c in columns},
            }
        ],
        "update_only_if_changed": True,
        "change_data_feed": spec.change_data_feed,
    }
    return MergeSpec.from_config(spec.model, config)


def _by_key(rows: DataFrame, spec: CdcSpec, request: WriteRequest, count: int) -> DataFrame:
    """A new table's rows in key ranges, one per file, so later runs skip files by key.

    A partitioned table keeps Spark's order: ranges would scatter every task over the partitions.
    """
    if request.partition_by:
        return rows
    files = max(1, count // ROWS_PER_FILE)
    return rows.repartitionByRange(files, *[F.col(quote_identifier(k)) for k in spec.keys])


def _state_skipping_spec(spec: CdcSpec) -> MergeSpec:
    """A merge on the keys alone: its profile of the events' keys skips state files."""
    return MergeSpec.from_config(
        spec.model, {"unique_key": list(spec.keys), "when_not_matched": [{"action": "insert"}]}
    )


def _state_schema(spec: CdcSpec, source: DataFrame) -> T.StructType:
    by_lower = {f.name.lower(): f for f in source.schema.fields}
    keys = [by_lower[k.lower()] for k in spec.keys if k.lower() in by_lower]
    sequence = T.StructType(
        [
            T.StructField(by_lower[c.lower()].name, by_lower[c.lower()].dataType)
            for c in spec.sequence_by
            if c.lower() in by_lower
        ]
    )
    return st.state_schema(keys, sequence)
