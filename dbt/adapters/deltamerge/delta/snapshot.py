"""A snapshot of one Delta table version, read with ``deltalake`` (delta-rs).

delta-rs replays the log and checkpoints, including versions written by other engines,
so every writer here starts from the same state any Delta reader sees.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable
from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta import storage
from dbt.adapters.deltamerge.delta.errors import NotADeltaTable
from dbt.adapters.deltamerge.delta.protocol import Protocol, TableMetadata, check_writable
from dbt.adapters.deltamerge.delta.schema import schema_from_json


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

    def remove_action(self, timestamp: int) -> dict[str, object]:
        """The ``remove`` action that logically deletes this file."""
        return {
            "remove": {
                "path": self.path,
                "deletionTimestamp": timestamp,
                "dataChange": True,
                "extendedFileMetadata": True,
                "partitionValues": self.partition_values,
                "size": self.size,
            }
        }


@dataclass(frozen=True)
class Snapshot:
    """One version of a Delta table: protocol, metadata and live files."""

    table_path: str
    version: int
    protocol: Protocol
    metadata: TableMetadata
    files: tuple[AddFile, ...]

    @property
    def schema(self) -> T.StructType:
        """The table schema as Spark types."""
        return schema_from_json(self.metadata.schema_string)

    @property
    def partition_columns(self) -> list[str]:
        """Partition columns in table order."""
        return list(self.metadata.partition_columns)

    @property
    def size_bytes(self) -> int:
        """Total bytes of live files."""
        return sum(f.size for f in self.files)

    def check_writable(self) -> None:
        """Raise ``UnsupportedTableFeature`` unless this writer may write the table (before any file)."""
        check_writable(
            self.protocol, self.metadata.configuration, self.metadata.schema_string, table=self.table_path
        )


def has_delta_log(table_path: str) -> bool:
    """Whether ``table_path`` holds a Delta table (a non-empty ``_delta_log``)."""
    log = os.path.join(table_path, "_delta_log")
    return any(n.endswith(".json") or n.endswith(".checkpoint.parquet") for n in storage.list_names(log))


def visible_entries(table_path: str) -> list[str]:
    """Entries of a folder that a table would be written over (hidden ones excluded)."""
    return sorted(n for n in storage.list_names(table_path) if not n.startswith((".", "_")))


def load_snapshot(table_path: str, version: int | None = None) -> Snapshot | None:
    """The snapshot at ``version`` (latest if None); None when no Delta table exists there.

    Raises:
        NotADeltaTable: the location holds files but no Delta log.
    """
    if not has_delta_log(table_path):
        entries = visible_entries(table_path)
        if entries:
            shown = ", ".join(entries[:5]) + (" ..." if len(entries) > 5 else "")
            raise NotADeltaTable(
                f"{table_path} holds files but no _delta_log ({len(entries)} entries: {shown}). "
                "Refusing to write a Delta table over them; nothing was deleted. Move them away, "
                "choose another location, or convert them with the convert_to_delta operation."
            )
        return None
    table = DeltaTable(table_path, version=version)
    return _snapshot_of(table, table_path)


def _snapshot_of(table: DeltaTable, table_path: str) -> Snapshot:
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
    return Snapshot(table_path, table.version(), protocol, metadata, _files_of(table))


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
