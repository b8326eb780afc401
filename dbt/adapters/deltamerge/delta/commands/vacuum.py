"""VACUUM: delete files no retained version references, as Delta's ``VacuumCommand`` does.

A version is retained when it is the latest or was committed within the retention
period, so time travel to it keeps working. Files any retained version references
(its live files, and the files and change data added since) are never deleted; nor is
any file modified within the retention period, which may belong to a writer that has
not committed yet. What goes: files removed before the retained versions, data files
of attempts that never committed (crashed or failed writers), and their staging.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from dbt.adapters.deltamerge.delta.errors import DeltaError
from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.log.iceberg_compat import ICEBERG_METADATA_FOLDER, iceberg_enabled
from dbt.adapters.deltamerge.delta.log.properties import DEFAULT_RETENTION_HOURS
from dbt.adapters.deltamerge.delta.log.snapshot import load_snapshot
from dbt.adapters.deltamerge.delta.log.vector_files import vector_file
from dbt.adapters.deltamerge.delta.txn.commit import latest_version, read_commit

# Folders vacuum never touches: the log, and the catalog binding's hard-link folders (binding.py).
_KEEP = ("_delta_log", "_deltamerge_catalog")
# Hidden folders whose files vacuum does clean: change data, staging of unfinished writes.
_OWNED = ("_change_data", "_deltamerge_staging")
_CONVERT_STAGING = ".deltamerge_convert_"


@dataclass(frozen=True)
class VacuumResult:
    """What a vacuum deleted (or would delete, for a dry run)."""

    table: TableLocation
    oldest_retained_version: int
    files: tuple[str, ...]
    bytes: int
    dry_run: bool


def vacuum(
    table: TableLocation,
    *,
    retain_hours: float = DEFAULT_RETENTION_HOURS,
    dry_run: bool = False,
    enforce_retention: bool = True,
    now_ms: int | None = None,
) -> VacuumResult:
    """Delete (or list, ``dry_run``) the files of ``table`` no retained version needs."""
    if retain_hours < 0:
        raise DeltaError(f"VACUUM: retain_hours must not be negative, got {retain_hours}")
    if enforce_retention and retain_hours < DEFAULT_RETENTION_HOURS:
        raise DeltaError(
            f"VACUUM: retain_hours {retain_hours} is below the safe default of {DEFAULT_RETENTION_HOURS:.0f} "
            "hours: time travel to older versions and writers still running may lose files. Pass "
            "enforce_retention: false to confirm."
        )
    latest = latest_version(table)
    current = load_snapshot(table) if latest >= 0 else None
    if current is None:
        raise DeltaError(f"VACUUM: no Delta table at {table}")
    # VACUUM deletes files: a feature it does not know could lose data (vacuumProtocolCheck asks
    # this writer check of every vacuum). Deletion vector files are kept while referenced.
    current.check_writable()
    cutoff = (now_ms if now_ms is not None else int(time.time() * 1000)) - int(retain_hours * 3_600_000)
    oldest = _oldest_retained(table, latest, cutoff)
    referenced = _referenced(table, oldest, latest)
    uniform = iceberg_enabled(current.metadata.configuration)
    shown = _iceberg_version(table) if uniform else None
    if shown is not None and 0 <= shown < oldest:
        # The Iceberg side is behind (a conversion failed): its readers still read that version's files.
        referenced |= _referenced(table, shown, shown)
    doomed = [
        (relative, size)
        for relative, size, modified in _files(table, keep_iceberg=uniform)
        if relative not in referenced and modified < cutoff
    ]
    if not dry_run:
        for relative, _ in doomed:
            table.store.delete_file(os.path.join(table.path, relative), missing_ok=True)
        _remove_empty_folders(table)
    return VacuumResult(table, oldest, tuple(r for r, _ in doomed), sum(s for _, s in doomed), dry_run)


def _oldest_retained(table: TableLocation, latest: int, cutoff: int) -> int:
    oldest = latest
    for version in range(latest - 1, -1, -1):
        try:
            actions = read_commit(table, version)
        except FileNotFoundError:  # log files cleaned up before: only later versions can be read
            break
        info: dict[str, Any] = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        if int(info.get("timestamp", 0)) < cutoff:
            break
        oldest = version
    return oldest


def _referenced(table: TableLocation, oldest: int, latest: int) -> set[str]:
    snapshot = load_snapshot(table, oldest)
    assert snapshot is not None
    paths = {unquote(f.path) for f in snapshot.files}
    vectors = [f.deletion_vector for f in snapshot.files if f.deletion_vector]
    for version in range(oldest, latest + 1):
        for action in read_commit(table, version):
            for kind in ("add", "cdc"):
                if kind in action:
                    paths.add(unquote(action[kind]["path"]))
            if action.get("add", {}).get("deletionVector"):
                vectors.append(action["add"]["deletionVector"])
    # Deletion vector files of retained versions (a vector deleted would bring its rows back).
    paths.update(p for p in (vector_file(v) for v in vectors) if p is not None)
    return {os.path.normpath(os.path.relpath(p, table.path) if os.path.isabs(p) else p) for p in paths}


def _iceberg_version(table: TableLocation) -> int | None:
    """The Delta version a UniForm table's Iceberg side shows (None: none written, or unreadable)."""
    from dbt.adapters.deltamerge.delta.uniform import iceberg_state  # pyiceberg: UniForm tables only

    try:
        state = iceberg_state(table)
    except Exception:
        return None
    return state.delta_version if state is not None else None


def _files(table: TableLocation, *, keep_iceberg: bool = False) -> list[tuple[str, int, int]]:
    """Files vacuum may delete: data and change data files, and our own leftovers.

    Hidden names (``_``/``.``) are left alone, as Delta's vacuum does, except the
    change data folder, our staging folder and a crashed conversion's staging; so is a UniForm
    table's Iceberg metadata (``keep_iceberg``: its ``metadata/`` folder).
    """
    found = []
    for folder, dirs, names in table.store.walk(table.path):
        relative_folder = os.path.relpath(folder, table.path)
        ours = relative_folder.split(os.sep)[0] in _OWNED or relative_folder.startswith(_CONVERT_STAGING)
        if folder == table.path:
            dirs[:] = [d for d in dirs if d in _OWNED or d.startswith(_CONVERT_STAGING) or not _hidden(d)]
            dirs[:] = [d for d in dirs if not (keep_iceberg and d == ICEBERG_METADATA_FOLDER)]
        elif not ours:
            dirs[:] = [d for d in dirs if not _hidden(d)]
        for name in names:
            if _hidden(name) and not ours:
                continue
            full = os.path.join(folder, name)
            size, mtime = table.store.size_and_mtime(full)
            relative = os.path.normpath(os.path.relpath(full, table.path))
            found.append((relative, size, int(mtime * 1000)))
    return found


def _hidden(name: str) -> bool:
    return (name.startswith("_") and "=" not in name) or name.startswith(".")


def _remove_empty_folders(table: TableLocation) -> None:
    store = table.store
    for folder, _, _ in sorted(store.walk(table.path), key=lambda entry: -len(entry[0])):
        relative = os.path.relpath(folder, table.path)
        if folder != table.path and relative.split(os.sep)[0] not in _KEEP and not store.list_names(folder):
            store.remove_empty_dir(folder)
