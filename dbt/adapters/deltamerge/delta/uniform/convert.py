"""One Delta version as one Iceberg metadata file: its snapshot, manifests and manifest list.

Everything written is a function of the Delta log (and of the Iceberg metadata of the version
before): the snapshot id is drawn from the table's uuid and the Delta version, the files are named
for them, timestamps are the Delta commit's. Two writers converting the same version write files
of the same content under the same names, and the first one's stays (``fileio``).

A version that changed data gets a snapshot (``manifests``); one that changed only metadata is a
metadata file without one. Snapshots older than the Delta table's file retention (the lesser of
``delta.logRetentionDuration`` and ``delta.deletedFileRetentionDuration``, as Delta's converter
bounds Iceberg's history) leave the metadata: Iceberg time travel reaches as far back as Delta's
does once VACUUM ran, and the metadata file stays the size of that window, not of the history.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from pyiceberg.io import FileIO
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import MetadataLogEntry, TableMetadataV2
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRef, SnapshotRefType
from pyiceberg.table.snapshots import SnapshotLogEntry
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.log.iceberg_compat import ICEBERG_CONFIG_PREFIX
from dbt.adapters.deltamerge.delta.log.properties import interval_ms
from dbt.adapters.deltamerge.delta.uniform.manifests import write_snapshot
from dbt.adapters.deltamerge.delta.uniform.schema import (
    PARTITION_FIELD_START,
    iceberg_schema,
    name_mapping,
    partition_spec,
    same_schema,
    same_spec,
)
from dbt.adapters.deltamerge.delta.uniform.version import (
    DELTA_TIMESTAMP,
    DELTA_VERSION,
    DeltaVersion,
    metadata_folder,
    metadata_name,
)

# Metadata files a metadata file lists as its predecessors (Iceberg's default).
MAX_METADATA_LOG = 100
_NAME_MAPPING = "schema.name-mapping.default"


@dataclass(frozen=True)
class Converted:
    """The new metadata, the file it goes to, and whether the version changed data (a snapshot)."""

    metadata: TableMetadataV2
    location: str
    snapshot: bool = field(default=True)


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
        made = write_snapshot(
            change, table_uuid, current, schema, {s.spec_id: s for s in specs}, spec, sequence, io
        )
        snapshots.append(made)
        current_id = made.snapshot_id
    oldest = change.timestamp_ms - retention_ms(change.configuration)
    snapshots = [s for s in snapshots if s.timestamp_ms >= oldest or s.snapshot_id == current_id]
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
    kept = {s.snapshot_id for s in snapshots}
    snapshot_log = [entry for entry in snapshot_log if entry.snapshot_id in kept]
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


def retention_ms(configuration: Mapping[str, str]) -> int:
    """How far back the Iceberg side keeps snapshots: the lesser of the Delta table's log and file
    retentions (30 days, 7 days by default; Delta's converter's ``history.expire.max-snapshot-age-ms``)."""
    return min(
        interval_ms(configuration, "delta.logRetentionDuration", "interval 30 days"),
        interval_ms(configuration, "delta.deletedFileRetentionDuration", "interval 1 week"),
    )


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
