"""One Delta version as one Iceberg metadata file: its snapshot, manifests and manifest list.

Everything written is a function of the Delta log (and of the Iceberg metadata of the version
before): the snapshot id is drawn from the table's uuid and the Delta version, the files are named
for them, timestamps are the Delta commit's. Two writers converting the same version write files
of the same content under the same names, and the first one's stays (``fileio``).

A version's adds go into one new manifest (``added``); a manifest holding a file the version
removes is rewritten with that file ``deleted`` and the others ``existing``; the others are
carried over untouched, so converting a commit costs what it changed, not the table's history.
When a snapshot would list more than ``MAX_MANIFESTS`` manifests they are merged into one.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyiceberg.io import FileIO
from pyiceberg.manifest import (
    DataFile,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    write_manifest,
    write_manifest_list,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import MetadataLogEntry, TableMetadataV2
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRef, SnapshotRefType
from pyiceberg.table.snapshots import Operation, Snapshot, SnapshotLogEntry, Summary
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.log.iceberg_compat import ICEBERG_CONFIG_PREFIX, ICEBERG_METADATA_FOLDER
from dbt.adapters.deltamerge.delta.uniform.files import data_file, file_uri
from dbt.adapters.deltamerge.delta.uniform.schema import (
    PARTITION_FIELD_START,
    iceberg_schema,
    name_mapping,
    partition_spec,
    same_schema,
    same_spec,
)

MAX_MANIFESTS = 16
# Metadata files a metadata file lists as its predecessors (Iceberg's default).
MAX_METADATA_LOG = 100
DELTA_VERSION = "delta-version"
DELTA_TIMESTAMP = "delta-timestamp"
_NAME_MAPPING = "schema.name-mapping.default"


@dataclass(frozen=True)
class DeltaVersion:
    """What one Delta version holds and changed, as the Iceberg side needs it.

    ``adds``/``removed`` are the commit's (paths as the log spells them); with ``full`` the adds
    are every live file of the version and the Iceberg snapshot replaces whatever was there.
    """

    version: int
    timestamp_ms: int
    root: str  # the table's location: a local path or an object-store URI
    table_id: str  # Delta's metaData.id
    schema: T.StructType
    partition_columns: list[str]
    configuration: Mapping[str, str]
    adds: Sequence[Mapping[str, Any]] = ()
    removed: frozenset[str] = frozenset()
    full: bool = False


@dataclass(frozen=True)
class Converted:
    """The new metadata, the file it goes to, and whether the version changed data (a snapshot)."""

    metadata: TableMetadataV2
    location: str
    snapshot: bool = field(default=True)


def metadata_folder(root: str) -> str:
    """Where a table's Iceberg metadata lives (``<table>/metadata``, as Delta's converter writes it)."""
    return f"{root.rstrip('/')}/{ICEBERG_METADATA_FOLDER}"


def metadata_name(table_uuid: str, version: int) -> str:
    """The metadata file of Delta version ``version``: ``v<N>-<uuid>.metadata.json`` (a uuid of the
    table's and the version, so every writer names it alike).

    >>> metadata_name("9a1b4c1e-0000-4000-8000-000000000000", 3)
    'v3-44189ded-0790-53d1-81aa-90e373a07547.metadata.json'
    """
    return f"v{version}-{uuid.uuid5(uuid.UUID(table_uuid), str(version))}.metadata.json"


def snapshot_id(table_uuid: str, version: int) -> int:
    """Iceberg's snapshot id of Delta version ``version``: positive, 63 bits, the same for every writer."""
    digest = hashlib.sha256(f"{table_uuid}:{version}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & ((1 << 63) - 1) or 1


def convert(
    previous: TableMetadataV2 | None, previous_location: str | None, change: DeltaVersion, io: FileIO
) -> Converted:
    """The Iceberg metadata after Delta version ``change.version``, its manifests written."""
    table_uuid = str(previous.table_uuid) if previous is not None else change.table_id
    schemas, schema = _schemas(previous, change.schema)
    specs, spec = _specs(previous, change.schema, change.partition_columns, schema)
    location = f"{metadata_folder(change.root)}/{metadata_name(table_uuid, change.version)}"
    snapshots = list(previous.snapshots) if previous is not None else []
    current = (
        previous.snapshot_by_id(previous.current_snapshot_id)
        if previous and previous.current_snapshot_id
        else None
    )
    changes_data = change.full or bool(change.adds) or bool(change.removed)
    current_id = current.snapshot_id if current is not None else None
    sequence = previous.last_sequence_number if previous is not None else 0
    if changes_data:
        sequence += 1
        made = _snapshot(
            change, table_uuid, current, schema, {s.spec_id: s for s in specs}, spec, sequence, io
        )
        snapshots.append(made)
        current_id = made.snapshot_id
    refs = (
        {
            MAIN_BRANCH: SnapshotRef.model_validate(
                {"snapshot_id": current_id, "snapshot_ref_type": SnapshotRefType.BRANCH}
            )
        }
        if current_id
        else {}
    )
    log = list(previous.metadata_log) if previous is not None else []
    if previous is not None and previous_location is not None:
        log.append(
            MetadataLogEntry.model_validate(
                {"metadata_file": previous_location, "timestamp_ms": previous.last_updated_ms}
            )
        )
    snapshot_log = list(previous.snapshot_log) if previous is not None else []
    if changes_data:
        snapshot_log.append(
            SnapshotLogEntry.model_validate({"snapshot_id": current_id, "timestamp_ms": change.timestamp_ms})
        )
    metadata = TableMetadataV2.model_validate(
        dict(
            location=change.root,
            table_uuid=uuid.UUID(table_uuid),
            last_updated_ms=max(change.timestamp_ms, previous.last_updated_ms if previous else 0),
            last_column_id=max([schema.highest_field_id, previous.last_column_id if previous else 0]),
            schemas=schemas,
            current_schema_id=schema.schema_id,
            partition_specs=specs,
            default_spec_id=spec.spec_id,
            last_partition_id=max(
                [PARTITION_FIELD_START - 1, *(f.field_id for s in specs for f in s.fields)]
            ),
            properties=_properties(change),
            current_snapshot_id=current_id,
            snapshots=snapshots,
            snapshot_log=snapshot_log,
            metadata_log=log[-MAX_METADATA_LOG:],
            sort_orders=[UNSORTED_SORT_ORDER],
            default_sort_order_id=UNSORTED_SORT_ORDER.order_id,
            refs=refs,
            last_sequence_number=sequence,
        )
    )
    return Converted(metadata, location, changes_data)


def _schemas(previous: TableMetadataV2 | None, delta_schema: T.StructType) -> tuple[list[Schema], Schema]:
    if previous is None:
        schema = iceberg_schema(delta_schema, 0)
        return [schema], schema
    now = iceberg_schema(delta_schema, 0)
    for known in previous.schemas:
        if same_schema(known, now):
            return list(previous.schemas), known
    schema = iceberg_schema(delta_schema, max(s.schema_id for s in previous.schemas) + 1)
    return [*previous.schemas, schema], schema


def _specs(
    previous: TableMetadataV2 | None, delta_schema: T.StructType, columns: list[str], schema: Schema
) -> tuple[list[PartitionSpec], PartitionSpec]:
    now = partition_spec(delta_schema, columns, 0)
    if previous is None:
        return [now], now
    for known in previous.partition_specs:
        if [(f.source_id, f.name) for f in known.fields] == [(f.source_id, f.name) for f in now.fields]:
            return list(previous.partition_specs), known
    start = (
        max([PARTITION_FIELD_START - 1, *(f.field_id for s in previous.partition_specs for f in s.fields)])
        + 1
    )
    renumbered = partition_spec(delta_schema, columns, max(s.spec_id for s in previous.partition_specs) + 1)
    fields = [f.model_copy(update={"field_id": start + i}) for i, f in enumerate(renumbered.fields)]
    spec = PartitionSpec(*fields, spec_id=renumbered.spec_id)
    assert not same_spec(spec, now) or not fields
    return [*previous.partition_specs, spec], spec


def _properties(change: DeltaVersion) -> dict[str, str]:
    """The Iceberg table's properties: the Delta version it shows, the name mapping, and those the
    Delta table passes on (``delta.universalFormat.config.iceberg.<key>``)."""
    passed = {
        key[len(ICEBERG_CONFIG_PREFIX) :]: str(value)
        for key, value in change.configuration.items()
        if key.startswith(ICEBERG_CONFIG_PREFIX)
    }
    return {
        **passed,
        DELTA_VERSION: str(change.version),
        DELTA_TIMESTAMP: str(change.timestamp_ms),
        _NAME_MAPPING: name_mapping(change.schema).model_dump_json(),
    }


def _snapshot(
    change: DeltaVersion,
    table_uuid: str,
    parent: Snapshot | None,
    schema: Schema,
    specs: Mapping[int, PartitionSpec],
    spec: PartitionSpec,
    sequence: int,
    io: FileIO,
) -> Snapshot:
    """The snapshot of a version that changed data: its manifests and manifest list written."""
    made_id = snapshot_id(table_uuid, change.version)
    folder = metadata_folder(change.root)
    added = [
        data_file(a, root=change.root, schema=change.schema, iceberg=schema, spec=spec) for a in change.adds
    ]
    carried, rewritten, deleted = _carried(change, parent, io)
    manifests: list[ManifestFile] = []
    tag = "f" if change.full else "m"  # a rebuild's files are not an incremental step's of the same version
    names = (f"{folder}/{made_id}-{tag}{i}.avro" for i in range(1 << 30))
    if len(carried) + len(rewritten) + 1 > MAX_MANIFESTS:
        # Merge those of the current spec into one (a manifest holds files of one spec).
        merged = [
            e for m in carried if m.partition_spec_id == spec.spec_id for e in m.fetch_manifest_entry(io)
        ]
        merged += [e for m, entries in rewritten if m.partition_spec_id == spec.spec_id for e in entries]
        carried = [m for m in carried if m.partition_spec_id != spec.spec_id]
        rewritten = [(m, e) for m, e in rewritten if m.partition_spec_id != spec.spec_id]
        if merged:
            manifests.append(_write(io, next(names), schema, spec, made_id, existing=merged, deleted=deleted))
    for manifest, entries in rewritten:
        own = specs[manifest.partition_spec_id]
        manifests.append(_write(io, next(names), schema, own, made_id, existing=entries, deleted=deleted))
    if added:
        manifests.append(_write(io, next(names), schema, spec, made_id, added=added))
    manifests = [*carried, *manifests]
    manifest_list = f"{folder}/snap-{made_id}-{tag}.avro"
    with write_manifest_list(
        format_version=2,
        output_file=io.new_output(manifest_list),
        snapshot_id=made_id,
        parent_snapshot_id=parent.snapshot_id if parent is not None else None,
        sequence_number=sequence,
        avro_compression="deflate",
    ) as writer:
        writer.add_manifests(manifests)
    removed_count = len(deleted)
    operation = (
        Operation.APPEND if not removed_count else (Operation.OVERWRITE if added else Operation.DELETE)
    )
    summary = Summary(
        operation,
        **{
            DELTA_VERSION: str(change.version),
            DELTA_TIMESTAMP: str(change.timestamp_ms),
            "added-data-files": str(len(added)),
            "deleted-data-files": str(removed_count),
            "added-records": str(sum(f.record_count for f in added)),
        },
    )
    return Snapshot.model_validate(
        dict(
            snapshot_id=made_id,
            parent_snapshot_id=parent.snapshot_id if parent is not None else None,
            sequence_number=sequence,
            timestamp_ms=change.timestamp_ms,
            manifest_list=manifest_list,
            summary=summary,
            schema_id=schema.schema_id,
        )
    )


def _carried(
    change: DeltaVersion, parent: Snapshot | None, io: FileIO
) -> tuple[list[ManifestFile], list[tuple[ManifestFile, list[ManifestEntry]]], set[str]]:
    """The parent's manifests kept as they are, the entries of those to rewrite, and the paths
    this version deletes (Iceberg's spelling)."""
    if parent is None:
        return [], [], set()
    manifests = parent.manifests(io)
    if change.full:  # every live file of the parent is deleted, the version's are added
        every = [(m, m.fetch_manifest_entry(io, discard_deleted=True)) for m in manifests]
        return [], every, {e.data_file.file_path for _, entries in every for e in entries}
    removed = {file_uri(change.root, path) for path in change.removed}
    if not removed:
        return list(manifests), [], set()
    carried, rewritten = [], []
    found: set[str] = set()
    for manifest in manifests:
        entries = manifest.fetch_manifest_entry(io, discard_deleted=True)
        paths = {e.data_file.file_path for e in entries}
        if paths & removed:
            rewritten.append((manifest, entries))
            found |= paths & removed
        else:
            carried.append(manifest)
    return carried, rewritten, found


def _write(
    io: FileIO,
    path: str,
    schema: Schema,
    spec: PartitionSpec,
    made_id: int,
    *,
    added: Sequence[DataFile] = (),
    existing: Sequence[ManifestEntry] = (),
    deleted: set[str] | frozenset[str] = frozenset(),
) -> ManifestFile:
    """One manifest: ``added`` files, then ``existing`` entries (those in ``deleted`` as deleted)."""
    with write_manifest(
        format_version=2,
        spec=spec,
        schema=schema,
        output_file=io.new_output(path),
        snapshot_id=made_id,
        avro_compression="deflate",
    ) as writer:
        for file in added:
            writer.add(
                ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=made_id, data_file=file)
            )
        for entry in existing:
            if entry.data_file.file_path in deleted:
                writer.delete(entry)
            else:
                writer.existing(entry)
    return writer.to_manifest_file()
