"""A snapshot of one Delta table version, read with ``deltalake`` (delta-rs): the source of truth.

delta-rs replays the log and checkpoints, including versions written by other engines,
so every writer here starts from the same state any Delta reader sees. Its version, protocol,
metadata and live files are the snapshot; our replay (``replay.py``) only adds, for that version,
what deltalake does not hand out (deletion vector descriptors, row tracking fields, domains).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError as DeltaLakeError
from deltalake.exceptions import TableNotFoundError
from pyroaring import FrozenBitMap64
from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.errors import DeltaError, NotADeltaTable, UnsupportedTableFeature
from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.log import deletion_vectors
from dbt.adapters.deltamerge.delta.log.clustering import clustering_columns
from dbt.adapters.deltamerge.delta.log.features import (
    KNOWN_FEATURES,
    check_readable,
    check_writable,
    reader_problems,
)
from dbt.adapters.deltamerge.delta.log.mapping import logical_stats, mapping_mode
from dbt.adapters.deltamerge.delta.log.occupied import (
    CREATION_WAIT_SECONDS,
    first_version_appeared,
    has_delta_log,
    may_be_in_flight,
    visible_entries,
)
from dbt.adapters.deltamerge.delta.log.protocol import Protocol, TableMetadata
from dbt.adapters.deltamerge.delta.log.replay import log_state
from dbt.adapters.deltamerge.delta.log.schema import schema_from_json


@dataclass(frozen=True)
class AddFile:
    """A live data file of a snapshot, as its ``add`` action recorded it."""

    path: str
    size: int
    partition_values: dict[str, str | None]
    num_records: int | None = None
    min_values: dict[str, Any] = field(default_factory=dict)
    max_values: dict[str, Any] = field(default_factory=dict)
    null_counts: dict[str, Any] = field(default_factory=dict)
    # Row indexes (0-based positions in the file) its deletion vector deletes: not live rows.
    deleted_rows: FrozenBitMap64 = field(default_factory=FrozenBitMap64)
    # The log's deletion vector descriptor (part of the logical file's identity), and the row
    # tracking fields of its ``add`` (``log_replay``): every ``remove`` of the file repeats them.
    deletion_vector: dict[str, Any] | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None
    # The ``add`` action as the log records it, where the log was replayed here (``log_replay``):
    # a deletion vector written for the file is a new ``add`` of the same file (``row_deletion``).
    logged: Mapping[str, Any] | None = None

    @property
    def live_records(self) -> int | None:
        """Rows of the file a reader returns: its records less those its deletion vector deletes."""
        return None if self.num_records is None else self.num_records - len(self.deleted_rows)

    def remove_action(self, timestamp: int) -> dict[str, object]:
        """The ``remove`` action that logically deletes this file (with its deletion vector, if any:
        a remove without it would name another logical file and leave this one live)."""
        remove: dict[str, object] = {
            "path": self.path,
            "deletionTimestamp": timestamp,
            "dataChange": True,
            "extendedFileMetadata": True,
            "partitionValues": self.partition_values,
            "size": self.size,
        }
        if self.deletion_vector is not None:
            remove["deletionVector"] = self.deletion_vector
        if self.base_row_id is not None:
            remove["baseRowId"] = self.base_row_id
        if self.default_row_commit_version is not None:
            remove["defaultRowCommitVersion"] = self.default_row_commit_version
        return {"remove": remove}


@dataclass(frozen=True)
class Snapshot:
    """One version of a Delta table: its location, protocol, metadata and live files."""

    location: TableLocation
    version: int
    protocol: Protocol
    metadata: TableMetadata
    files: tuple[AddFile, ...]
    # Live metadata domains by name (``domainMetadata`` actions), for tables that support them.
    domains: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # delta-rs's table this snapshot was read from: ``snapshot_after`` reads on from it (only the
    # newer commits) instead of the whole log again. Not part of the snapshot's value.
    log_reader: DeltaTable | None = field(default=None, compare=False, repr=False)

    @property
    def table_path(self) -> str:
        """The table's root path (``location.path``)."""
        return self.location.path

    @property
    def schema(self) -> T.StructType:
        """The table schema as Spark types."""
        return schema_from_json(self.metadata.schema_string)

    @property
    def partition_columns(self) -> list[str]:
        """Partition columns in table order."""
        return list(self.metadata.partition_columns)

    @property
    def clustering(self) -> tuple[str, ...] | None:
        """The clustering columns (logical names) of a clustered table; None when it is not one."""
        return clustering_columns(self.domains, self.schema, self.protocol.writer_features)

    @property
    def size_bytes(self) -> int:
        """Total bytes of live files."""
        return sum(f.size for f in self.files)

    def check_readable(self) -> None:
        """Raise ``UnsupportedTableFeature`` unless every read path reads this version's rows right.

        Asked by every read of data files (the catalog binding, ``read.read_files``, the change
        feed) before it reads: a reader must implement every feature in ``readerFeatures``.
        Deletion vectors are read (``AddFile.deleted_rows``); ``change_feed`` alone refuses them.
        """
        problems = reader_problems(self.protocol, self.metadata.configuration, self.metadata.schema_string)
        check_readable(problems, table=self.table_path)

    @property
    def deleted_files(self) -> int:
        """How many live files carry a deletion vector that deletes rows."""
        return sum(1 for f in self.files if f.deleted_rows)

    def check_writable(self) -> None:
        """Raise ``UnsupportedTableFeature`` unless this writer may write the table (before any file)."""
        check_writable(
            self.protocol, self.metadata.configuration, self.metadata.schema_string, table=self.table_path
        )


def load_snapshot(where: TableLocation, version: int | None = None) -> Snapshot | None:
    """The snapshot at ``version`` (latest if None) of the table at ``where``; None when no Delta
    table exists there.

    Raises:
        NotADeltaTable: the location holds files but no Delta log.
    """
    table_path = where.path
    options = where.deltalake_options()
    try:
        # delta-rs lists the log itself: no listing of ours first (one request less on a store).
        table = DeltaTable(table_path, version=version, storage_options=options)
    except TableNotFoundError:
        if has_delta_log(where):  # created since delta-rs listed: read it once more
            try:
                return _snapshot_of(DeltaTable(table_path, version=version, storage_options=options), where)
            except DeltaLakeError as error:
                raise _unreadable(where, error) from error
        entries = visible_entries(where)
        if not entries:
            return None
        in_flight = may_be_in_flight(entries)  # another writer creating the table: its version 0 soon
        if in_flight and first_version_appeared(where):
            return load_snapshot(where, version)
        shown = ", ".join(entries[:5]) + (" ..." if len(entries) > 5 else "")
        waited = f" (no first version came in {CREATION_WAIT_SECONDS:.0f} s)" if in_flight else ""
        raise NotADeltaTable(
            f"{table_path} holds files but no _delta_log{waited} ({len(entries)} entries: {shown}). "
            "Refusing to write a Delta table over them; nothing was deleted. Move them away, "
            "choose another location, or convert them with the convert_to_delta operation."
        ) from None
    except DeltaLakeError as error:
        raise _unreadable(where, error) from error
    except OSError as error:  # the store failed (credentials, bucket, network): say it as ours do
        has_delta_log(where)  # raises naming the store, the bucket and the operation
        raise DeltaError(f"The Delta log at {table_path} cannot be read: {error}") from error
    return _snapshot_of(table, where)


def snapshot_after(current: Snapshot | None, location: TableLocation, version: int) -> Snapshot:
    """The snapshot at ``version``, a version this process just committed on top of ``current``:
    read on from ``current``'s delta-rs table (only the commits after it), else from the log."""
    reader = current.log_reader if current is not None else None
    if reader is None or current is None or current.version >= version:
        found = load_snapshot(location, version)
        assert found is not None, f"version {version} of {location.path} was committed"
        return found
    # ``current`` keeps its own values; its reader now belongs to the new snapshot.
    object.__setattr__(current, "log_reader", None)
    try:
        reader.load_as_version(version)  # forward: lists and reads only the newer commits
    except (DeltaLakeError, OSError):  # read it whole instead: the version is committed
        return snapshot_after(None, location, version)
    return _snapshot_of(reader, location)


def _unreadable(table: TableLocation, error: Exception) -> DeltaError:
    """Why deltalake refused a log: the features its protocol lists that no reader here knows, if any."""
    protocol = _newest_protocol(table)
    if protocol is not None:
        unknown = reader_problems(protocol, {})
        unknown += [
            f"writer feature '{name}'"
            for name in sorted(set(protocol.writer_features or ()) - KNOWN_FEATURES)
            if name not in (protocol.reader_features or ())
        ]
        if unknown:
            return UnsupportedTableFeature(
                f"Delta table at {table} uses features dbt-deltamerge does not know: "
                + "; ".join(unknown)
                + ". Nothing was read or written."
            )
    return DeltaError(f"The Delta log at {table} cannot be read: {error}")


def _newest_protocol(table: TableLocation) -> Protocol | None:
    """The newest ``protocol`` action in the log's commit files (newest first), if any."""
    log = table.log_folder
    commits = [n for n in table.store.list_names(log) if n.endswith(".json") and n[:20].isdigit()]
    for name in sorted(commits, reverse=True):
        for line in table.store.read_bytes(os.path.join(log, name)).decode("utf-8").splitlines():
            action = json.loads(line) if line.strip() else {}
            if "protocol" in action:
                return Protocol.from_action(action["protocol"])
    return None


def _snapshot_of(table: DeltaTable, location: TableLocation) -> Snapshot:
    proto = table.protocol()
    meta = table.metadata()
    protocol = Protocol(
        proto.min_reader_version,
        proto.min_writer_version,
        tuple(proto.reader_features) if proto.reader_features is not None else None,
        tuple(proto.writer_features) if proto.writer_features is not None else None,
    )
    metadata = TableMetadata(
        id=str(meta.id),
        schema_string=table.schema().to_json(),
        partition_columns=tuple(meta.partition_columns),
        configuration=dict(meta.configuration),
        created_time=meta.created_time,
        name=meta.name,
        description=meta.description,
    )
    files = _files_of(table)
    if mapping_mode(metadata.configuration) != "none":
        files = tuple(_logical(f, schema_from_json(metadata.schema_string)) for f in files)
    if not set(protocol.writer_features or ()) & _LOGGED_DETAILS:
        return Snapshot(location, table.version(), protocol, metadata, files, log_reader=table)
    state = log_state(location, table.version())
    detailed = tuple(_with_log_details(f, state.adds, location) for f in files)
    domains = {name: dict(action) for name, action in state.domains.items()}
    return Snapshot(location, table.version(), protocol, metadata, detailed, domains, log_reader=table)


def _logical(file: AddFile, schema: T.StructType) -> AddFile:
    """``file`` with statistics by the schema's names (deltalake hands them by physical name)."""
    return replace(
        file,
        min_values=logical_stats(file.min_values, schema),
        max_values=logical_stats(file.max_values, schema),
        null_counts=logical_stats(file.null_counts, schema),
    )


# Writer features whose writers need what only the log records of each file, or its domains.
_LOGGED_DETAILS = {"deletionVectors", "rowTracking", "domainMetadata"}


def _with_log_details(file: AddFile, adds: Mapping[str, Mapping[str, Any]], table: TableLocation) -> AddFile:
    """``file`` with its deletion vector (descriptor, rows) and row tracking fields from the log's ``add``."""
    add = adds.get(unquote(file.path))
    if add is None:
        raise DeltaError(f"Delta table at {table}: the log replay lost live file {file.path}")
    vector = add.get("deletionVector")
    return replace(
        file,
        deleted_rows=deletion_vectors.load(table, vector, file.path) if vector else FrozenBitMap64(),
        deletion_vector=dict(vector) if vector is not None else None,
        base_row_id=add.get("baseRowId"),
        default_row_commit_version=add.get("defaultRowCommitVersion"),
        logged=dict(add),
    )


def partition_value_text(value: Any) -> str | None:
    """A partition value as the Delta log serializes it (delta-rs hands them back typed).

    >>> partition_value_text(dt.date(2026, 1, 2)), partition_value_text(True), partition_value_text(None)
    ('2026-01-02', 'true', None)
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return value.isoformat(sep=" ", timespec="microseconds")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _files_of(table: DeltaTable) -> tuple[AddFile, ...]:
    actions = pa.table(table.get_add_actions(flatten=False))
    names = set(actions.column_names)
    rows = actions.to_pylist()
    return tuple(
        AddFile(
            path=row["path"],
            size=row["size_bytes"],
            partition_values={k: partition_value_text(v) for k, v in (row["partition"] or {}).items()}
            if "partition" in names
            else {},
            num_records=row.get("num_records"),
            min_values=row.get("min") or {},
            max_values=row.get("max") or {},
            null_counts=row.get("null_count") or {},
        )
        for row in rows
    )
