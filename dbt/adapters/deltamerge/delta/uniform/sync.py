"""Keeping a UniForm table's Iceberg side at its latest Delta version, after every commit.

The Iceberg side shows Delta version N when ``metadata/version-hint.text`` names the metadata
file of N (``v<N>-<uuid>``). After a commit, the writer converts every Delta version after the
one shown, each into its own snapshot (Iceberg time travel to the snapshot of version N gives
version N's rows), then points the hint at the last. A side more than ``MAX_PENDING`` versions
behind, or one whose commits the log no longer keeps, is rebuilt from the latest version's files
(one snapshot replacing every file), as Delta's converter does.

Concurrent writers: every file is created only if absent and is the same whoever writes it
(``convert``); the hint is the one file replaced. A writer that pointed the hint re-reads the
Delta log after: if a newer version landed meanwhile (whose writer may have pointed the hint
before this one did), it converts on. So once the writers are done the hint names the latest
version. A conversion that fails leaves the Delta commit as it is (``sync_after_commit``): the
next commit, or ``dbt run-operation iceberg_sync``, catches up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pyiceberg.serializers import FromInputFile, ToOutputFile
from pyiceberg.table.metadata import TableMetadataV2

from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.log.replay import latest_version, log_state, read_commit
from dbt.adapters.deltamerge.delta.log.snapshot import Snapshot, load_snapshot
from dbt.adapters.deltamerge.delta.uniform.convert import Converted, convert
from dbt.adapters.deltamerge.delta.uniform.fileio import StoreFileIO
from dbt.adapters.deltamerge.delta.uniform.version import DELTA_VERSION, DeltaVersion, metadata_folder

HINT = "version-hint.text"
# Versions converted one by one before the side is rebuilt from the latest (Delta's
# ``spark.databricks.delta.iceberg.maxPendingCommits``).
MAX_PENDING = 100
_MAX_ROUNDS = 50
_METADATA_FILE = re.compile(r"^v(\d+)-[0-9a-f-]{36}\.metadata\.json$")


@dataclass(frozen=True)
class IcebergState:
    """The Iceberg metadata the hint names, and where it is."""

    metadata: TableMetadataV2
    location: str

    @property
    def delta_version(self) -> int:
        return int(self.metadata.properties.get(DELTA_VERSION, "-1"))


def iceberg_state(table: TableLocation) -> IcebergState | None:
    """The Iceberg side as readers find it (None: not written yet). Without a hint (a writer
    stopped between a metadata file and the hint), the newest metadata file of ours."""
    folder = metadata_folder(table.path)
    store = table.store
    io = StoreFileIO(store)
    hint = f"{folder}/{HINT}"
    name: str | None = None
    if store.exists(hint):
        name = store.read_bytes(hint).decode("utf-8").strip() + ".metadata.json"
    elif store.is_dir(folder):
        versions = [(int(m.group(1)), n) for n in store.list_names(folder) if (m := _METADATA_FILE.match(n))]
        name = max(versions)[1] if versions else None
    if name is None:
        return None
    location = f"{folder}/{name}"
    metadata = FromInputFile.table_metadata(io.new_input(location))
    assert isinstance(metadata, TableMetadataV2)
    return IcebergState(metadata, location)


def sync_iceberg(table: TableLocation, latest: Snapshot) -> int:
    """Convert every Delta version up to ``latest`` (and any committed meanwhile), point the hint
    at the last; return the Delta version the Iceberg side shows after."""
    io = StoreFileIO(table.store)
    state = iceberg_state(table)
    for _ in range(_MAX_ROUNDS):
        shown = state.delta_version if state is not None else -1
        if shown > latest.version:
            return shown  # another writer converted a newer version than this one read
        if shown < latest.version:
            state = _convert_up_to(table, latest, state, io)
        assert state is not None
        if _hint(table) != _name(state):
            _point(table, state)
        if latest_version(table) > latest.version:  # committed meanwhile: its writer may have
            newest = load_snapshot(table)  # pointed the hint before this one did
            assert newest is not None
            latest = newest
        elif _hint(table) == _name(state):
            return state.delta_version
        else:
            state = iceberg_state(table)  # another writer pointed it since: go on from what it names
    raise RuntimeError(f"the Iceberg side did not settle after {_MAX_ROUNDS} rounds of concurrent commits")


def _convert_up_to(
    table: TableLocation, latest: Snapshot, state: IcebergState | None, io: StoreFileIO
) -> IcebergState:
    shown = state.delta_version if state is not None else -1
    versions = range(shown + 1, latest.version + 1)
    commits = (
        [_commit_actions(table, v) for v in versions]
        if state is not None and len(versions) <= MAX_PENDING
        else None
    )
    if commits is None or any(c is None for c in commits):
        return _written(_full(table, latest, state, io), io)
    for version, actions in zip(versions, commits, strict=True):
        assert actions is not None
        snapshot = latest if version == latest.version else load_snapshot(table, version)
        assert snapshot is not None and state is not None
        change = _incremental(table, snapshot, actions)
        state = _written(convert(state.metadata, state.location, change, io), io)
    assert state is not None
    return state


def _full(table: TableLocation, latest: Snapshot, state: IcebergState | None, io: StoreFileIO) -> Converted:
    adds = list(log_state(table, latest.version).adds.values())
    change = DeltaVersion(
        version=latest.version,
        timestamp_ms=_timestamp(_commit_actions(table, latest.version) or [], latest),
        root=table.path,
        table_id=latest.metadata.id,
        schema=latest.schema,
        partition_columns=list(latest.partition_columns),
        configuration=latest.metadata.configuration,
        adds=adds,
        full=True,
    )
    return convert(state.metadata if state else None, state.location if state else None, change, io)


def _incremental(table: TableLocation, snapshot: Snapshot, actions: list[dict[str, Any]]) -> DeltaVersion:
    return DeltaVersion(
        version=snapshot.version,
        timestamp_ms=_timestamp(actions, snapshot),
        root=table.path,
        table_id=snapshot.metadata.id,
        schema=snapshot.schema,
        partition_columns=list(snapshot.partition_columns),
        configuration=snapshot.metadata.configuration,
        adds=[a["add"] for a in actions if "add" in a],
        removed=frozenset(str(a["remove"]["path"]) for a in actions if "remove" in a),
    )


def _commit_actions(table: TableLocation, version: int) -> list[dict[str, Any]] | None:
    """The actions of a commit (None: the log no longer keeps its file)."""
    try:
        return read_commit(table, version)
    except FileNotFoundError:
        return None


def _timestamp(actions: list[dict[str, Any]], snapshot: Snapshot) -> int:
    """The commit's time as every writer reads it: its in-commit timestamp, else ``commitInfo``'s."""
    for action in actions:
        info = action.get("commitInfo")
        if isinstance(info, dict):
            stamp = info.get("inCommitTimestamp", info.get("timestamp"))
            if isinstance(stamp, int):
                return stamp
    return int(snapshot.metadata.created_time or 0)


def _written(converted: Converted, io: StoreFileIO) -> IcebergState:
    """``converted``'s metadata file created unless present; the state is the file's content (a
    second writer's file, if it was first, is the one kept and read on)."""
    output = io.new_output(converted.location)
    ToOutputFile.table_metadata(converted.metadata, output)
    if output.written:  # type: ignore[attr-defined]
        return IcebergState(converted.metadata, converted.location)
    kept = FromInputFile.table_metadata(io.new_input(converted.location))
    assert isinstance(kept, TableMetadataV2)
    return IcebergState(kept, converted.location)


def _name(state: IcebergState) -> str:
    """What the hint says to name ``state``'s metadata file: its name without the suffix."""
    return state.location.rsplit("/", 1)[1].removesuffix(".metadata.json")


def _hint(table: TableLocation) -> str | None:
    path = f"{metadata_folder(table.path)}/{HINT}"
    return table.store.read_bytes(path).decode("utf-8").strip() if table.store.exists(path) else None


def _point(table: TableLocation, state: IcebergState) -> None:
    """Point ``version-hint.text`` at ``state``'s metadata file."""
    table.store.replace(f"{metadata_folder(table.path)}/{HINT}", _name(state).encode("utf-8"))
