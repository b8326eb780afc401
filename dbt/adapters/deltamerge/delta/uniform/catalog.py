"""A UniForm table in an Iceberg REST catalog: registered once, kept current after each commit.

The table's Delta properties say where it is registered (``log.iceberg_compat.REGISTERED_IN``: the
catalog's name in the profile, ``REGISTERED_AS``: ``namespace.name``), so every commit of it, by any
path (a model, a SQL statement, OPTIMIZE, RESTORE), keeps the catalog current. The first publish
registers the Iceberg metadata file (the REST spec's register-table); each later one is a table
commit of what the catalog lacks: the new schemas and specs, the new snapshots (ours, already
written beside the log: the catalog records them, the data is not copied), ``main`` pointed at the
latest, expired snapshots removed, the properties. Its requirements (the table's uuid, ``main``'s
snapshot, the current schema and spec as the catalog had them) make the commit fail if anyone
committed between our read and our write: a writer of ours reloads and goes on (the catalog ends at
the latest Delta version); a table the catalog holds that is not this one, or a snapshot there no
Delta version of this table made, is never overwritten: the publish is refused, naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyiceberg.exceptions import CommitFailedException, NoSuchTableError, TableAlreadyExistsError
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRefType
from pyiceberg.table.update import (
    AddPartitionSpecUpdate,
    AddSchemaUpdate,
    AddSnapshotUpdate,
    AssertCurrentSchemaId,
    AssertDefaultSpecId,
    AssertRefSnapshotId,
    AssertTableUUID,
    RemoveSnapshotsUpdate,
    SetCurrentSchemaUpdate,
    SetDefaultSpecUpdate,
    SetPropertiesUpdate,
    SetSnapshotRefUpdate,
    TableRequirement,
    TableUpdate,
)

from dbt.adapters.deltamerge.delta.uniform.version import DELTA_VERSION

_ROUNDS = 20


class CatalogConflict(RuntimeError):
    """The catalog holds something under the table's name that this table's log did not make."""


def publish(client: Any, identifier: tuple[str, str], metadata: TableMetadata, location: str) -> int:
    """Make the catalog's ``identifier`` show ``metadata`` (ours, written at ``location``): register
    it, or commit what the catalog lacks; return the Delta version the catalog shows after (a
    concurrent writer of ours may have published a newer one)."""
    ours = _delta_version(metadata)
    for _ in range(_ROUNDS):
        try:
            theirs = client.load_table(identifier)
        except NoSuchTableError:
            client.create_namespace_if_not_exists(identifier[:-1])
            try:
                client.register_table(identifier, location)
            except TableAlreadyExistsError:
                continue  # registered meanwhile: read it and catch it up
            return ours
        _check_ours(theirs.metadata, metadata, identifier)
        shown = _delta_version(theirs.metadata)
        if shown >= ours:
            return shown
        requirements, updates = catch_up(theirs.metadata, metadata)
        try:
            client.commit_table(theirs, requirements, updates)
        except CommitFailedException:
            continue  # someone committed between the read and the commit: read again
        return ours
    raise RuntimeError(
        f"the catalog's {'.'.join(identifier)} did not settle after {_ROUNDS} concurrent commits"
    )


def catch_up(
    theirs: TableMetadata, ours: TableMetadata
) -> tuple[tuple[TableRequirement, ...], tuple[TableUpdate, ...]]:
    """The requirements and updates that take the catalog's metadata (``theirs``) to ``ours``
    (built with the REST spec's own field names)."""
    known_schemas = {s.schema_id for s in theirs.schemas}
    known_specs = {s.spec_id for s in theirs.partition_specs}
    known_snapshots = {s.snapshot_id for s in theirs.snapshots}
    updates: list[TableUpdate] = [
        AddSchemaUpdate(schema=s) for s in ours.schemas if s.schema_id not in known_schemas
    ]
    if theirs.current_schema_id != ours.current_schema_id:
        updates.append(SetCurrentSchemaUpdate.model_validate({"schema-id": ours.current_schema_id}))
    updates.extend(
        AddPartitionSpecUpdate(spec=s) for s in ours.partition_specs if s.spec_id not in known_specs
    )
    if theirs.default_spec_id != ours.default_spec_id:
        updates.append(SetDefaultSpecUpdate.model_validate({"spec-id": ours.default_spec_id}))
    new = sorted(
        (s for s in ours.snapshots if s.snapshot_id not in known_snapshots),
        key=lambda s: s.sequence_number or 0,
    )
    updates.extend(AddSnapshotUpdate(snapshot=s) for s in new)
    current = ours.current_snapshot_id
    if current is not None and theirs.current_snapshot_id != current:
        main = {"ref-name": MAIN_BRANCH, "type": SnapshotRefType.BRANCH, "snapshot-id": current}
        updates.append(SetSnapshotRefUpdate.model_validate(main))
    expired = sorted(known_snapshots - {s.snapshot_id for s in ours.snapshots})
    if expired:
        updates.append(RemoveSnapshotsUpdate.model_validate({"snapshot-ids": expired}))
    changed = {k: v for k, v in ours.properties.items() if theirs.properties.get(k) != v}
    if changed:
        updates.append(SetPropertiesUpdate(updates=changed))
    requirements: tuple[TableRequirement, ...] = (
        AssertTableUUID(uuid=theirs.table_uuid),
        AssertRefSnapshotId.model_validate({"ref": MAIN_BRANCH, "snapshot-id": theirs.current_snapshot_id}),
        AssertCurrentSchemaId.model_validate({"current-schema-id": theirs.current_schema_id}),
        AssertDefaultSpecId.model_validate({"default-spec-id": theirs.default_spec_id}),
    )
    return requirements, tuple(updates)


def unpublish(client: Any, identifier: tuple[str, str], table_uuid: str | None = None) -> bool:
    """Drop ``identifier`` from the catalog (its files stay: no purge); False when absent. With
    ``table_uuid``, only if the catalog's table is that one (another table of that name stays)."""
    try:
        if table_uuid is not None and str(client.load_table(identifier).metadata.table_uuid) != table_uuid:
            return False
        client.drop_table(identifier)
    except NoSuchTableError:
        return False
    return True


def _check_ours(theirs: TableMetadata, ours: TableMetadata, identifier: tuple[str, str]) -> None:
    name = ".".join(identifier)
    if theirs.table_uuid != ours.table_uuid:
        raise CatalogConflict(
            f"the catalog's {name} is another table (uuid {theirs.table_uuid}, this one's "
            f"{ours.table_uuid}): not overwritten; drop it there or register this model under another name"
        )
    made = {s.snapshot_id for s in ours.snapshots}
    current = theirs.current_snapshot_id
    if current is not None and current not in made and DELTA_VERSION not in (_summary(theirs, current) or {}):
        raise CatalogConflict(
            f"the catalog's {name} has snapshot {current}, which no Delta version of this table made "
            "(another writer committed to it through the catalog): not overwritten"
        )


def _summary(metadata: TableMetadata, snapshot_id: int) -> Mapping[str, str] | None:
    snapshot = metadata.snapshot_by_id(snapshot_id)
    return snapshot.summary.additional_properties if snapshot and snapshot.summary else None


def _delta_version(metadata: TableMetadata) -> int:
    return int(metadata.properties.get(DELTA_VERSION, "-1"))
