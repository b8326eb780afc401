"""A Delta version's data changes as an Iceberg snapshot: its manifests and manifest list written.

A version's adds go into one new manifest (``added``); a manifest holding a file the version
removes is rewritten with that file ``deleted`` and the others ``existing``; the others are
carried over untouched, so converting a commit costs what it changed, not the table's history.
When a snapshot would list more than ``MAX_MANIFESTS`` manifests, those of the current partition
spec are merged into one. A rebuild (``full``) deletes every live file of the parent and adds
the version's. File names are drawn from the snapshot id (and whether it is a rebuild), so every
writer converting the version names them alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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
from pyiceberg.table.snapshots import Operation, Snapshot, Summary

from dbt.adapters.deltamerge.delta.paths import local_path
from dbt.adapters.deltamerge.delta.uniform.files import data_file
from dbt.adapters.deltamerge.delta.uniform.version import (
    DELTA_TIMESTAMP,
    DELTA_VERSION,
    DeltaVersion,
    metadata_folder,
    snapshot_id,
)

# Iceberg's own ``commit.manifest.min-count-to-merge``: appends write no manifest but their own
# until a snapshot would list this many, then the manifests are merged into one.
MAX_MANIFESTS = 100


def write_snapshot(
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
    removed = {local_path(change.root, path) for path in change.removed}
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
