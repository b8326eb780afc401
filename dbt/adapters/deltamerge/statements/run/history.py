"""A Delta table's history: its commits' timestamps, the version a timestamp names, ``DESCRIBE
HISTORY`` / ``DESCRIBE DETAIL`` with Delta's columns, and ``RESTORE`` as one commit.

A commit's timestamp is Delta's: its in-commit timestamp where the table writes them, else its
log file's modification time, made strictly increasing (``DeltaHistoryManager``). ``TIMESTAMP AS
OF t`` is the last version committed at or before ``t``. A version is available while the log
can rebuild it (its commits from version 0, or from a checkpoint) and every file it reads is still
there: one VACUUM removed is refused naming the version, never read with rows missing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any
from urllib.parse import unquote

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta import DeltaError, Snapshot, TableLocation, load_snapshot, local_path
from dbt.adapters.deltamerge.delta.log import log_state
from dbt.adapters.deltamerge.delta.txn import (
    CommitActions,
    CommitInfo,
    CommitOptions,
    WriteResult,
    commit_files,
    read_commit,
)
from dbt.adapters.deltamerge.statements.parse.history import AsOf


class TimeTravelError(DeltaError):
    """A version or timestamp the table cannot be read at."""


def commit_times(table: TableLocation) -> list[tuple[int, int]]:
    """``(version, timestamp in ms)`` of every commit the log holds, oldest first."""
    store = table.store
    names = store.list_names(table.log_folder)
    versions = sorted(int(n[:20]) for n in names if len(n) == 25 and n.endswith(".json") and n[:20].isdigit())
    times: list[tuple[int, int]] = []
    for version in versions:
        path = table.commit_file(version)
        with store.open_input(path) as handle:
            first = json.loads(handle.readline() or b"{}")
        stamp = (first.get("commitInfo") or {}).get("inCommitTimestamp")
        millis = int(stamp) if stamp is not None else int(store.size_and_mtime(path)[1] * 1000)
        if times and millis <= times[-1][1]:
            millis = times[-1][1] + 1  # Delta's monotonic commit timestamps
        times.append((version, millis))
    return times


def earliest_version(table: TableLocation, times: Sequence[tuple[int, int]]) -> int:
    """The oldest version the log can rebuild: 0 with its commit, else the oldest checkpoint's."""
    if times and times[0][0] == 0:
        return 0
    names = table.store.list_names(table.log_folder)
    checkpoints = [int(n[:20]) for n in names if ".checkpoint" in n and n[:20].isdigit()]
    return min(checkpoints, default=times[0][0] if times else 0)


def resolve_version(spark: SparkSession, table: TableLocation, to: AsOf, name: str) -> int:
    """The version ``to`` names, refused in Delta's words when the log does not hold it."""
    times = commit_times(table)
    if not times:
        raise TimeTravelError(f"{name} has no Delta log at {table}")
    earliest, latest = earliest_version(table, times), times[-1][0]
    if to.version is not None:
        if not earliest <= to.version <= latest:
            raise TimeTravelError(
                f"[DELTA_VERSION_NOT_FOUND] Cannot time travel Delta table to version {to.version}. "
                f"Available versions: [{earliest}, {latest}]."
            )
        return to.version
    assert to.timestamp is not None
    micros = spark.sql(f"SELECT unix_micros(CAST(({to.timestamp}) AS TIMESTAMP))").first()
    if micros is None or micros[0] is None:
        raise TimeTravelError(f"TIMESTAMP AS OF {to.timestamp}: the expression is not a timestamp")
    wanted = int(micros[0]) // 1000
    usable = [(v, ms) for v, ms in times if v >= earliest]
    if wanted < usable[0][1]:
        raise TimeTravelError(
            f"[DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION] The provided timestamp ({to.timestamp}) is "
            f"before the earliest version available to this table ({_shown(usable[0][1])}). Please use "
            f"a timestamp after {_shown(usable[0][1])}."
        )
    if wanted > usable[-1][1]:
        raise TimeTravelError(
            f"[DELTA_TIMESTAMP_GREATER_THAN_COMMIT] The provided timestamp ({to.timestamp}) is after the "
            f"latest version available to this table ({name}). Please use a timestamp before or at "
            f"{_shown(usable[-1][1])}."
        )
    return max(v for v, ms in usable if ms <= wanted)


def _shown(millis: int) -> str:
    return datetime.fromtimestamp(millis / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def snapshot_at(table: TableLocation, version: int, name: str) -> Snapshot:
    """The table at ``version``, refused when VACUUM removed a file it reads."""
    snapshot = load_snapshot(table, version)
    if snapshot is None:
        raise TimeTravelError(f"{name} has no Delta table at {table}")
    missing = [f.path for f in snapshot.files if not table.store.exists(local_path(table.path, f.path))]
    if missing:
        raise TimeTravelError(
            f"Version {version} of {name} cannot be read: {len(missing)} of its data files were removed "
            f"(VACUUM), for example {missing[0]}. Versions are readable while their files are kept "
            "(delta.deletedFileRetentionDuration)."
        )
    return snapshot


HISTORY_SCHEMA = T.StructType.fromJson(
    {
        "type": "struct",
        "fields": [
            {"name": n, "type": t, "nullable": True, "metadata": {}}
            for n, t in (
                ("version", "long"),
                ("timestamp", "timestamp"),
                ("userId", "string"),
                ("userName", "string"),
                ("operation", "string"),
                ("operationParameters", {"type": "map", "keyType": "string", "valueType": "string",
                                         "valueContainsNull": True}),
                ("clusterId", "string"),
                ("readVersion", "long"),
                ("isolationLevel", "string"),
                ("isBlindAppend", "boolean"),
                ("operationMetrics", {"type": "map", "keyType": "string", "valueType": "string",
                                      "valueContainsNull": True}),
                ("userMetadata", "string"),
                ("engineInfo", "string"),
            )
        ],
    }
)  # fmt: skip


def history_frame(spark: SparkSession, table: TableLocation, limit: int | None) -> DataFrame:
    """``DESCRIBE HISTORY``: one row per commit the log holds, newest first (Delta's columns)."""
    rows: list[tuple[Any, ...]] = []
    for version, millis in reversed(commit_times(table)):
        if limit is not None and len(rows) >= limit:
            break
        actions = read_commit(table, version)
        info: dict[str, Any] = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        rows.append(
            (
                version,
                datetime.fromtimestamp(millis / 1000, tz=timezone.utc),
                info.get("userId"),
                info.get("userName"),
                info.get("operation"),
                {str(k): _text(v) for k, v in (info.get("operationParameters") or {}).items()},
                info.get("clusterId"),
                info.get("readVersion"),
                info.get("isolationLevel"),
                info.get("isBlindAppend"),
                {str(k): _text(v) for k, v in (info.get("operationMetrics") or {}).items()},
                info.get("userMetadata"),
                info.get("engineInfo"),
            )
        )
    return spark.createDataFrame(rows, HISTORY_SCHEMA)


def _text(value: Any) -> str | None:
    return None if value is None else value if isinstance(value, str) else json.dumps(value)


DETAIL_SCHEMA = (
    "format string, id string, name string, description string, location string, createdAt timestamp, "
    "lastModified timestamp, partitionColumns array<string>, clusteringColumns array<string>, "
    "numFiles long, sizeInBytes long, properties map<string, string>, minReaderVersion int, "
    "minWriterVersion int, tableFeatures array<string>"
)


def detail_frame(spark: SparkSession, snapshot: Snapshot, name: str) -> DataFrame:
    """``DESCRIBE DETAIL``: the table's one row (Delta's columns)."""
    times = commit_times(snapshot.location)
    created = snapshot.metadata.created_time
    protocol = snapshot.protocol
    features = sorted({*(protocol.reader_features or ()), *(protocol.writer_features or ())})
    row = (
        "delta",
        snapshot.metadata.id,
        f"spark_catalog.{name}",
        snapshot.metadata.description,
        snapshot.table_path if snapshot.location.store.object_store else "file:" + snapshot.table_path,
        datetime.fromtimestamp(created / 1000, tz=timezone.utc) if created else None,
        datetime.fromtimestamp(times[-1][1] / 1000, tz=timezone.utc) if times else None,
        list(snapshot.partition_columns),
        list(snapshot.clustering or ()),
        len(snapshot.files),
        snapshot.size_bytes,
        dict(snapshot.metadata.configuration),
        protocol.min_reader_version,
        protocol.min_writer_version,
        features,
    )
    return spark.createDataFrame([row], DETAIL_SCHEMA)


def restore(current: Snapshot, target: Snapshot, to: AsOf) -> WriteResult:
    """``RESTORE`` to ``target``: one commit re-adding its files the table no longer has and removing
    the files it did not have (``dataChange`` true), its metadata again; Delta's metrics. A table
    with a writer feature this engine does not write is refused naming it, before anything."""
    current.check_writable()
    keep = {_logical(f) for f in target.files}
    now = {_logical(f) for f in current.files}
    removed = [f for f in current.files if _logical(f) not in keep]
    restored = [f for f in target.files if _logical(f) not in now]
    logged = log_state(target.location, target.version).adds if restored else {}
    readded = [{"add": {**logged[unquote(f.path)], "dataChange": True}} for f in restored]
    leading: list[dict[str, object]] = []
    if target.metadata != current.metadata:
        leading.append(target.metadata.to_action())
    metrics = {
        "numRestoredFiles": len(restored),
        "restoredFilesSize": sum(f.size for f in restored),
        "numRemovedFiles": len(removed),
        "removedFilesSize": sum(f.size for f in removed),
        "numOfFilesAfterRestore": len(target.files),
        "tableSizeAfterRestore": target.size_bytes,
    }
    parameters: dict[str, Any] = {"version": target.version, "timestamp": to.timestamp}
    info = CommitInfo("RESTORE", operation_parameters=parameters, operation_metrics=metrics)
    return commit_files(
        current,
        CommitActions(leading=leading, removed=removed, readded=readded),
        CommitOptions(info),
    )


def _logical(file: Any) -> tuple[str, str | None]:
    """A logical file: its path and deletion vector (PROTOCOL.md: the pair names it)."""
    vector = file.deletion_vector
    return file.path, json.dumps(vector, sort_keys=True) if vector else None
