"""CDC apply: a run's change events folded with Spark, then written by the merge engine.

``apply_changes`` is the entry for both SCD types (SCD 2: ``scd2.apply_scd2``). SCD 1:
parse (``CdcSpec``) -> fold (``scd1``; the state of the events' keys read with data skipping
on the keys) -> the state's next commit prepared and recorded -> the table's own write (a
merge with update-only-if-changed, or a CREATE on the first run and ``--full-refresh``) ->
the state's commit. See ``state.py`` for why the record makes the pair crash-safe.
"""

from __future__ import annotations

import dataclasses

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.cdc import state as st
from dbt.adapters.deltamerge.cdc.events import (
    SEQ,
    SEQUENCE_LOW,
    Events,
    files_with_event_keys,
    framed_events,
    keys_semi_join,
    rows_by_key_range,
)
from dbt.adapters.deltamerge.cdc.scd1 import OP, RESET, Folded, fold
from dbt.adapters.deltamerge.cdc.scd2 import apply_scd2
from dbt.adapters.deltamerge.cdc.spec import CdcSpec
from dbt.adapters.deltamerge.common.sql import qualified, quote_identifier
from dbt.adapters.deltamerge.delta import AddFile, Snapshot, after_commit, crash_point
from dbt.adapters.deltamerge.delta.data import WriteRequest, read_files, write_dataframe
from dbt.adapters.deltamerge.delta.log import NO_CHANGE, TableChange
from dbt.adapters.deltamerge.delta.txn import WriteResult, committed_version_of
from dbt.adapters.deltamerge.merge import DEFAULT_SOURCE_ALIAS as S
from dbt.adapters.deltamerge.merge import DEFAULT_TARGET_ALIAS as T_
from dbt.adapters.deltamerge.merge import (
    Assignment,
    MergeBehaviour,
    MergeClause,
    MergeSpec,
    fits_in_broadcast,
    merge_into,
)
from dbt.adapters.deltamerge.skipping.files import (
    as_instant,
    key_profile_aggregates,
)
from dbt.adapters.deltamerge.skipping.stats import comparable


def apply_changes(
    spark: SparkSession,
    source: DataFrame,
    spec: CdcSpec,
    *,
    table: Snapshot | None,
    create: WriteRequest,
    txn: tuple[str, int],
    change: TableChange = NO_CHANGE,
    full_refresh: bool = False,
) -> WriteResult:
    """Apply the events of ``source`` to the table at ``table``.

    With no table, or ``full_refresh``, the table is (re)created with ``create`` from the
    events alone, with the same semantics; otherwise the events are merged in, with ``change``
    (the model's): its ``schema`` the table schema the merge leaves (``on_schema_change``), the
    change data feed or deletion vectors switched on (the merge then marks the rows it removes).
    """
    location = create.location
    stored = spec.stored_columns(source.columns)
    if spec.scd_type == 2:
        return apply_scd2(
            spark,
            source,
            spec,
            stored,
            table=None if full_refresh else table,
            create=create,
            txn=txn,
            change=change,
        )
    if table is not None:
        st.recover(location)
    state = st.load_or_create(spark, st.state_location(location), _state_schema(spec, source))
    fresh = table is None or full_refresh
    events = framed_events(source, spec, key_profile_aggregates(spec.keys))
    folded = _fold(spark, spec, events, stored, state, fresh=fresh)
    record = _prepare_state(spark, spec, folded, state, txn, fresh=fresh)
    crash_point("cdc_state_recorded")
    try:
        if fresh or table is None:
            request = dataclasses.replace(create, txn=txn, extra_metrics=folded.counts)
            upserts = folded.changes.where(F.col(OP) == "upsert").select(
                *[quote_identifier(c) for c in stored]
            )
            rows = rows_by_key_range(upserts, spec, request, folded.state_row_count)
            result = write_dataframe(spark, rows, request)
        else:
            columns = table.schema if change.schema is None else change.schema
            main = _merge_spec(spec, stored, columns, evolve=change.schema is not None)
            result = merge_into(
                spark, folded.changes, table, main, change=change, txn=txn, extra_metrics=folded.counts
            )
    except BaseException:
        if record is not None and committed_version_of(location, *txn) is None:
            st.abandon(record)
        raise
    crash_point("cdc_table_committed")
    if record is not None:
        with after_commit("the commit of CDC apply's state table (the next run completes it)"):
            st.complete(record, table_committed=result.version is not None)
    return result


def _fold(
    spark: SparkSession,
    spec: CdcSpec,
    events: Events,
    stored: tuple[str, ...],
    state: Snapshot,
    *,
    fresh: bool,
) -> Folded:
    """The fold against the stored state of the events' keys (none on the first run or a full refresh)."""
    if fresh or not state.files:
        return fold(spec, events, stored, None, watermark=None, all_state_keys=None)
    candidates = files_with_event_keys(state, spec, events)
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
    return keys_semi_join(rows, keys, spec.keys, broadcast=small)


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
    return None if pending is None else st.write_record(state.location, pending, txn)


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

    matched = [MergeClause("matched", "delete", condition=f"{op} = 'delete'")]
    if values:
        sets = tuple(Assignment(c, assigned(c)) for c in values)
        matched.append(MergeClause("matched", "update", assignments=sets))
    inserted = tuple(Assignment(c, qualified(S, c)) for c in columns)
    upsert = MergeClause("not_matched", "insert", condition=f"{op} = 'upsert'", assignments=inserted)
    return MergeSpec.of(
        spec.model,
        unique_key=spec.keys,
        clauses=[*matched, upsert],
        behaviour=MergeBehaviour(update_only_if_changed=True, copy_on_write=spec.copy_on_write),
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
