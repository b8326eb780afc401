"""CDC apply's state: a companion Delta table the table's consumers never see.

It lives at ``<table>/_deltamerge_cdc`` (Delta readers, Spark and VACUUM skip folders that
start with ``_``) and holds, per key, the sequence of the last event applied and whether
that event deleted the key (a tombstone), plus rows with truncates' sequences. A run only
appends a small file of its keys' new rows (a key's newest row is its state, see ``latest``),
sorted by key so that data skipping finds a batch's keys; small files are compacted.

The table and its state change in two commits, kept consistent by a write-ahead record:
the state's next commit is written (files and actions) and recorded under ``_pending``
before the table commits with the run's ``txn``; the state commits with the same ``txn``
afterwards. A run that finds a record whose ``txn`` the table holds completes it (the
commit is idempotent by ``txn``); a record whose table commit never happened is dropped
once its run's process has ended (same host; its files are deleted) or, from another host, a
day after it was written.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta import AddFile, DeltaError, Snapshot, TableLocation, load_snapshot
from dbt.adapters.deltamerge.delta.data import (
    WriteRequest,
    align_to_schema,
    read_files,
    write_dataframe,
    write_files,
)
from dbt.adapters.deltamerge.delta.txn import (
    CommitInfo,
    PendingCommit,
    ReadSet,
    commit,
    committed_version_of,
    write_metrics,
)
from dbt.adapters.deltamerge.skipping.stats import comparable

STATE_FOLDER = "_deltamerge_cdc"
ROW, SEQ, DELETED, APPLIED_AT = "__cdc_row", "__cdc_seq", "__cdc_deleted", "__cdc_applied_at"
KEY_ROW, TRUNCATE_ROW = "key", "truncate"
_STALE_RECORD_SECONDS = 24 * 3600
# State files hold about ROWS_PER_FILE rows in key order; appended files with fewer than half
# as many are compacted once COMPACT_AT of them have gathered.
ROWS_PER_FILE = 250_000
COMPACT_AT = 16


def state_location(table: TableLocation) -> TableLocation:
    """Where the state of ``table`` lives: a Delta table inside it."""
    return table.inner(STATE_FOLDER)


def state_schema(keys: Sequence[T.StructField], sequence: T.DataType) -> T.StructType:
    """The state table's columns: the keys, the row kind, the sequence, the tombstone flag, when."""
    return T.StructType(
        [
            T.StructField(ROW, T.StringType()),
            *[T.StructField(k.name, k.dataType) for k in keys],
            T.StructField(SEQ, sequence),
            T.StructField(DELETED, T.BooleanType()),
            T.StructField(APPLIED_AT, T.TimestampType()),
        ]
    )


def load_or_create(spark: SparkSession, location: TableLocation, schema: T.StructType) -> Snapshot:
    """The state table, created empty when missing (a commit of its own: it holds no state yet)."""
    snapshot = load_snapshot(location)
    if snapshot is not None:
        return snapshot
    empty = spark.createDataFrame([], schema)
    request = WriteRequest(location=location, mode="create_or_replace")
    return write_dataframe(spark, empty, request).snapshot


def latest(rows: DataFrame, keys: Sequence[str]) -> DataFrame:
    """One row per state key: its latest (highest) sequence and that event's flag.

    The state only grows by appends (a key's applied sequence only rises), so the newest row
    of a key is the one with the highest sequence.
    """
    latest_row = F.max(
        F.struct(F.col(SEQ).alias("s"), F.col(DELETED).alias("d"), F.col(APPLIED_AT).alias("a"))
    )
    return (
        rows.groupBy(F.col(ROW), *[F.col(quote_identifier(k)) for k in keys])
        .agg(latest_row.alias("__cdc_latest"))
        .select(
            F.col(ROW),
            *[F.col(quote_identifier(k)) for k in keys],
            F.col("__cdc_latest.s").alias(SEQ),
            F.col("__cdc_latest.d").alias(DELETED),
            F.col("__cdc_latest.a").alias(APPLIED_AT),
        )
    )


def truncate_watermark(spark: SparkSession, snapshot: Snapshot) -> Any:
    """The sequence of the latest truncate applied (None if none).

    Only files whose statistics say they may hold a truncate row are read (``truncate`` sorts
    after ``key``, so a file of key rows only has ``key`` as its maximum row kind).
    """
    files = [f for f in snapshot.files if _may_hold_truncate(f)]
    if not files:
        return None
    rows = (
        read_files(spark, snapshot, files)
        .where(F.col(ROW) == TRUNCATE_ROW)
        .agg(F.max(F.col(SEQ)).alias("w"))
        .collect()
    )
    return rows[0]["w"] if rows else None


def newest_start(files: Sequence[AddFile], sequence: T.StructType) -> Any:
    """The highest stored value of the sequence's first column in ``files``, from their statistics.

    Sequences compare field by field, so an event whose first field is above it is newer than
    every row of ``files`` (it cannot be late). None when a file has no such statistic.

    >>> seq = T.StructType([T.StructField("at", T.LongType())])
    >>> files = [AddFile("a", 1, {}, 10, {}, {SEQ: {"at": 5}}), AddFile("b", 1, {}, 10, {}, {SEQ: {"at": 7}})]
    >>> newest_start(files, seq), newest_start([*files, AddFile("c", 1, {}, 10)], seq)
    (7, None)
    """
    first = sequence.fields[0].name
    highs = [h for file in files if (h := (file.max_values.get(SEQ) or {}).get(first)) is not None]
    if not highs or len(highs) < len(files) or not all(comparable(h, highs[0]) for h in highs):
        return None
    return max(highs)


def _may_hold_truncate(file: AddFile) -> bool:
    highest = file.max_values.get(ROW)
    return highest is None or str(highest) >= TRUNCATE_ROW


def prepare(
    spark: SparkSession,
    snapshot: Snapshot,
    rows: DataFrame,
    *,
    new_rows: int,
    replace: bool,
    retention_hours: float,
) -> PendingCommit | None:
    """The state's next commit: ``rows`` appended (or, with ``replace``, instead of every file).

    Appended files are small; once ``COMPACT_AT`` of them have gathered they are rewritten
    into one, with each key's latest row, tombstones older than the retention dropped.
    """
    keys = [f.name for f in snapshot.schema.fields if f.name not in (ROW, SEQ, DELETED, APPLIED_AT)]
    small = [] if replace else [f for f in snapshot.files if (f.num_records or 0) < ROWS_PER_FILE // 2]
    removed = list(snapshot.files) if replace else (small if len(small) >= COMPACT_AT else [])
    total = new_rows
    if removed and not replace:
        horizon = F.timestamp_seconds(F.lit(int(time.time() - retention_hours * 3600)))
        rows = latest(rows.unionByName(read_files(spark, snapshot, removed)), keys).where(
            ~(F.col(DELETED) & (F.col(APPLIED_AT) < horizon))
        )
        total += sum(f.num_records or 0 for f in removed)
    if not total and not removed:
        return None
    rows = align_to_schema(rows, snapshot.schema, what=f"CDC state at {snapshot.table_path}")
    ordered = rows.repartitionByRange(
        max(1, total // ROWS_PER_FILE), F.col(ROW), *[F.col(quote_identifier(k)) for k in keys]
    )
    written = write_files(ordered, snapshot.location, [], snapshot.metadata.configuration)
    if not written and not removed:
        return None
    return PendingCommit.of_files(
        snapshot,
        operation="WRITE",
        leading=[],
        written=written,
        removed=removed,
        parameters={"mode": "Overwrite" if replace else "Append"},
        metrics=write_metrics(written, removed),
    )


@dataclass(frozen=True)
class Record:
    """The write-ahead record of one run's next state commit."""

    path: str
    pending: PendingCommit
    txn: tuple[str, int]


def write_record(state: TableLocation, pending: PendingCommit, txn: tuple[str, int]) -> Record:
    """Record ``pending`` (its files are written) before the table commits with ``txn``."""
    folder = os.path.join(state.path, "_pending")
    state.store.make_dirs(folder)
    app_id, version = txn
    path = os.path.join(folder, f"{_safe(app_id)}-{version}.json")
    body = {
        "app_id": app_id,
        "txn_version": version,
        "created": time.time(),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "pending": pending.to_json(),
    }
    state.store.put_if_absent(path, json.dumps(body).encode("utf-8"))
    return Record(path, pending, txn)


def complete(record: Record, *, table_committed: bool) -> None:
    """Commit the recorded state change (with the run's ``txn`` if the table committed); drop the record."""
    store = record.pending.table.store
    if not store.exists(record.path):
        raise DeltaError(
            f"CDC state of the table at {os.path.dirname(os.path.dirname(record.path))}: this run's state "
            "record was dropped as stale by another run before the state could commit. Re-run the model "
            "with --full-refresh to rebuild the table and its state from the events."
        )
    _commit_state(record.pending, record.txn if table_committed else None)
    store.delete_file(record.path, missing_ok=True)


def abandon(record: Record | None) -> None:
    """The table did not commit: drop the record and the state files it names."""
    if record is None:
        return
    store = record.pending.table.store
    for path in record.pending.written_paths():
        store.delete_file(path, missing_ok=True)
    store.delete_file(record.path, missing_ok=True)


def recover(table: TableLocation) -> int:
    """Complete the records whose table commit happened; drop stale ones. How many were completed."""
    folder = os.path.join(state_location(table).path, "_pending")
    completed = 0
    for name in sorted(table.store.list_names(folder)):
        path = os.path.join(folder, name)
        body = json.loads(table.store.read_bytes(path).decode("utf-8"))
        txn = (str(body["app_id"]), int(body["txn_version"]))
        pending = PendingCommit.from_json(body["pending"], table.stores)
        if committed_version_of(table, *txn) is None:
            gone = _writer_gone(body)
            # Asked again: the writer may have committed just before it ended.
            if gone is None or committed_version_of(table, *txn) is None:
                if gone:
                    abandon(Record(path, pending, txn))
                elif gone is None:
                    table.store.delete_file(path, missing_ok=True)
                continue
        _commit_state(pending, txn)
        table.store.delete_file(path, missing_ok=True)
        completed += 1
    return completed


def _writer_gone(body: dict[str, Any]) -> bool | None:
    """Whether the run that wrote a record ended: True (its process on this host is gone),
    None (another host's record a day old: dropped, its files left for VACUUM), False (it may
    still commit)."""
    if body.get("host") != socket.gethostname():
        return None if time.time() - float(body["created"]) > _STALE_RECORD_SECONDS else False
    if body.get("pid") == os.getpid():
        return False
    try:
        os.kill(int(body["pid"]), 0)
    except ProcessLookupError:
        return True
    except (OSError, ValueError, KeyError):
        return False
    return False


def _commit_state(pending: PendingCommit, txn: tuple[str, int] | None) -> None:
    removed = frozenset(pending.removed_paths())
    # An append reads nothing it could conflict with; a compaction or replacement read what it removes.
    info = CommitInfo(
        pending.operation, pending.parameters, pending.metrics, is_blind_append=not removed, txn=txn
    )
    commit(
        pending.table,
        read_version=pending.read_version,
        actions=pending.actions,
        info=info,
        read=ReadSet(files_read=removed, removed=removed) if removed else None,
    )


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)
