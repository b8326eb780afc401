"""One commit path for every write: files written, then committed now (``commit_files``) or prepared.

``commit_files`` commits the removes, adds and change files of a write with its leading actions
(a new ``metaData``, ``protocol``), checks conflicts against concurrent writers by the write's
read set, checkpoints when due, and returns a ``WriteResult``. A ``PendingCommit`` is a commit
prepared but not made yet: its files are written, its actions kept as plain data. CDC apply
prepares its state table's commit before the table's own commit and records it
(``cdc/state.py``), so that a run killed between the two can be completed by the next one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from dbt.adapters.deltamerge.delta.errors import UnsupportedTableFeature
from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.log.features import check_removable
from dbt.adapters.deltamerge.delta.log.iceberg_compat import (
    compat_problems,
    compat_v2,
    iceberg_enabled,
    registration,
)
from dbt.adapters.deltamerge.delta.log.identity import advanced_schema
from dbt.adapters.deltamerge.delta.log.mapping import mapping_mode, physical_names
from dbt.adapters.deltamerge.delta.log.protocol import Protocol
from dbt.adapters.deltamerge.delta.log.schema import schema_from_json, schema_to_json
from dbt.adapters.deltamerge.delta.log.snapshot import AddFile, Snapshot, snapshot_after
from dbt.adapters.deltamerge.delta.log.stats import stats_to_json
from dbt.adapters.deltamerge.delta.paths import local_path
from dbt.adapters.deltamerge.delta.stores import Stores
from dbt.adapters.deltamerge.delta.txn.actions import ChangeFile, CommitActions, WrittenFile, add_actions
from dbt.adapters.deltamerge.delta.txn.commit import (
    DEFAULT_CHECKPOINT_INTERVAL,
    CommitInfo,
    clean_expired_logs,
    commit,
    maybe_checkpoint,
    now_ms,
)
from dbt.adapters.deltamerge.delta.txn.conflicts import ReadSet
from dbt.adapters.deltamerge.delta.txn.stamps import CommitStamps


@dataclass(frozen=True)
class PendingCommit:
    """The actions (but ``commitInfo`` and ``txn``) of a commit at ``read_version + 1`` or later."""

    table: TableLocation
    read_version: int
    operation: str
    actions: list[dict[str, Any]] = field(default_factory=list)
    parameters: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of_files(
        cls,
        snapshot: Snapshot,
        *,
        operation: str,
        leading: Sequence[dict[str, object]],
        written: list[WrittenFile],
        removed: Sequence[AddFile],
        changes: Sequence[ChangeFile] = (),
        parameters: dict[str, Any] | None = None,
        metrics: dict[str, int] | None = None,
    ) -> PendingCommit:
        """The commit on ``snapshot`` that removes ``removed`` and adds ``written`` and ``changes``."""
        stamp = now_ms()
        actions = [
            *leading,
            *[f.remove_action(stamp) for f in removed],
            *add_actions(written, _effective(snapshot, leading)[1]),
            *[c.cdc_action() for c in changes],
        ]
        # Round-trip through JSON: the record on disk and the commit must be the same data.
        plain = [json.loads(stats_to_json(a)) for a in actions]
        return cls(
            snapshot.location,
            snapshot.version,
            operation,
            plain,
            dict(parameters or {}),
            dict(metrics or {}),
        )

    def written_paths(self) -> list[str]:
        """The files this commit would add (data and change data), as local paths."""
        return [
            local_path(self.table.path, str(a[kind]["path"]))
            for a in self.actions
            for kind in ("add", "cdc")
            if kind in a
        ]

    def removed_paths(self) -> list[str]:
        """The table-relative paths of the files this commit removes."""
        return [str(a["remove"]["path"]) for a in self.actions if "remove" in a]

    def to_json(self) -> dict[str, Any]:
        """Plain data for a JSON record."""
        return {
            "table_path": self.table.path,
            "read_version": self.read_version,
            "operation": self.operation,
            "actions": self.actions,
            "parameters": self.parameters,
            "metrics": self.metrics,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], stores: Stores) -> PendingCommit:
        """The commit ``to_json`` described, its table reached through ``stores``."""
        return cls(
            TableLocation.of(str(data["table_path"]), stores),
            int(data["read_version"]),
            str(data["operation"]),
            list(data["actions"]),
            dict(data["parameters"]),
            {str(k): int(v) for k, v in data["metrics"].items()},
        )


@dataclass(frozen=True)
class WriteResult:
    """The committed version (None if nothing was committed) and Delta's metrics."""

    version: int | None
    operation: str
    metrics: dict[str, int]
    snapshot: Snapshot


@dataclass(frozen=True)
class CommitOptions:
    """How one commit is made, beside what it changes (delta-rs' ``CommitProperties``): its
    ``commitInfo`` (operation, parameters, metrics, ``txn``), what the transaction ``read`` (the
    conflict rules' input; None: a rewrite read the whole table, a blind append nothing), and
    whether it changes data (``data_change=False``: its adds and removes rearrange rows without
    changing them, REORG and OPTIMIZE)."""

    info: CommitInfo
    read: ReadSet | None = None
    data_change: bool = True


def commit_files(
    target: Snapshot | TableLocation, actions: CommitActions, options: CommitOptions
) -> WriteResult:
    """Commit ``actions`` to ``target`` (the version the transaction read, or a new table's
    location) as ``options`` say; the table's properties after the commit decide checkpoints."""
    current = target if isinstance(target, Snapshot) else None
    location = target.location if isinstance(target, Snapshot) else target
    info, read = options.info, options.read
    stamp = now_ms()
    leading = _with_identity_marks(location, current, list(actions.leading), actions.written)
    if any("metaData" in a for a in leading) and info.is_blind_append:
        info = replace(info, is_blind_append=False)
    protocol, properties, domains = _effective(current, leading)
    _check_compat(location, leading, properties)
    if actions.removed and options.data_change:
        check_removable(properties, table=location.path)  # rearranging rows is no change of them
    logged = [
        *leading,
        *[_stored(f.remove_action(stamp), current) for f in actions.removed],
        *add_actions(actions.written, properties),
        *actions.readded,
        *[c.cdc_action() for c in actions.changes],
    ]
    if not options.data_change:
        logged = [_no_data_change(a) for a in logged]
    if read is None and current is not None and not info.is_blind_append:
        # Without a narrower read set, a rewrite read the whole table (Delta's `true` read predicate).
        read = ReadSet(
            files_read=frozenset(f.path for f in current.files),
            removed=frozenset(f.path for f in actions.removed),
        )
    if read is not None and current is not None and mapping_mode(current.metadata.configuration) != "none":
        read = replace(read, mapped_schema=current.schema)
    version = commit(
        location,
        read_version=current.version if current else -1,
        actions=logged,
        info=info,
        read=read,
        stamps=CommitStamps.for_table(protocol, properties, domains),
    )
    interval = int(properties.get("delta.checkpointInterval", DEFAULT_CHECKPOINT_INTERVAL))
    if maybe_checkpoint(location, version, interval):
        clean_expired_logs(location, properties)
    snapshot = snapshot_after(current, location, version)
    if iceberg_enabled(snapshot.metadata.configuration):
        # A UniForm table's Iceberg side (pyiceberg: loaded by such tables only); never fails the commit.
        from dbt.adapters.deltamerge.delta.uniform import sync_after_commit

        sync_after_commit(location, snapshot)
    if current is not None and registration(current.metadata.configuration) != registration(properties):
        from dbt.adapters.deltamerge.delta.uniform import unregister_moved  # registered elsewhere now

        unregister_moved(location, current, snapshot)
    return WriteResult(version, info.operation, dict(info.operation_metrics), snapshot)


def _effective(
    current: Snapshot | None, leading: Sequence[dict[str, Any]]
) -> tuple[Protocol | None, Mapping[str, str], Mapping[str, Mapping[str, Any]]]:
    """The protocol, properties and domains the table has once ``leading`` actions are committed."""
    protocol = current.protocol if current else None
    properties: Mapping[str, str] = current.metadata.configuration if current else {}
    for action in leading:
        if "protocol" in action:
            protocol = Protocol.from_action(action["protocol"])
        if "metaData" in action:
            properties = dict(action["metaData"].get("configuration") or {})
    return protocol, properties, current.domains if current else {}


def _check_compat(
    location: TableLocation, leading: Sequence[dict[str, Any]], properties: Mapping[str, str]
) -> None:
    """Refuse a new definition of an IcebergCompatV2 table that breaks its rules (a column of a type
    Iceberg lacks, added by schema evolution): nothing is committed."""
    for action in leading:
        if "metaData" in action and compat_v2(properties):
            problems = compat_problems(properties, str(action["metaData"].get("schemaString") or ""))
            if problems:
                raise UnsupportedTableFeature(
                    f"Delta table at {location}: " + "; ".join(problems) + ". Nothing was committed."
                )


def _with_identity_marks(
    table: TableLocation,
    current: Snapshot | None,
    leading: list[dict[str, Any]],
    written: Sequence[WrittenFile],
) -> list[dict[str, Any]]:
    """``leading`` with the ``metaData`` recording the identity marks ``written`` advance (``identity``)."""
    metadata = next((a["metaData"] for a in leading if "metaData" in a), None)
    if metadata is None and current is None:
        return leading
    schema_string = metadata["schemaString"] if metadata is not None else current.metadata.schema_string  # type: ignore[union-attr]
    if "delta.identity." not in schema_string or not written:
        return leading  # no identity column (the common case): no schema parsed on the commit path
    schema = schema_from_json(schema_string)
    paths = [local_path(table.path, f.path) for f in written]
    advanced = advanced_schema(schema, table.store, paths, physical_names(schema))
    if advanced is None:
        return leading
    if metadata is not None:
        changed = {**metadata, "schemaString": schema_to_json(advanced)}
        return [{"metaData": changed} if "metaData" in a else a for a in leading]
    assert current is not None
    new = replace(current.metadata, schema_string=schema_to_json(advanced))
    return [*leading, new.to_action()]


def _no_data_change(action: dict[str, Any]) -> dict[str, Any]:
    for kind in ("add", "remove"):
        if kind in action:
            return {kind: {**action[kind], "dataChange": False}}
    return action


def _stored(remove: dict[str, Any], current: Snapshot | None) -> dict[str, Any]:
    """A ``remove`` as the log keeps it: with column mapping, partition values by physical name
    (deltalake hands them back by logical name)."""
    if current is None or mapping_mode(current.metadata.configuration) == "none":
        return remove
    names = physical_names(current.schema)
    body = remove["remove"]
    values = {names.get(k, k): v for k, v in body["partitionValues"].items()}
    return {"remove": {**body, "partitionValues": values}}
