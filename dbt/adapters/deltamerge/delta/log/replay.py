"""The log's own record of each live file and metadata domain, for what ``deltalake`` does not hand back.

``deltalake`` replays the log for every snapshot (``snapshot.load_snapshot``) but gives neither a
file's deletion vector descriptor, nor its ``baseRowId`` / ``defaultRowCommitVersion``, nor the
table's ``domainMetadata``. A writer needs all three: a ``remove`` of a file with a deletion
vector must carry that descriptor (the logical file is ``(path, dv id)``; a remove without it
would leave the file live), a ``remove`` on a row-tracking table carries the add's row id fields,
and new row ids start above the ``delta.rowTracking`` high-water mark.

The replay follows PROTOCOL.md ("Action Reconciliation"): the newest complete checkpoint at or
below the version (classic, multi-part, or UUID-named v2 with its sidecars, JSON or parquet),
then the JSON commits after it, the newest action for a path or domain winning.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import pyarrow.parquet as pq

from dbt.adapters.deltamerge.delta.errors import DeltaError
from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.stores import Store

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(
    r"^(\d{20})\.checkpoint(?:\.(\d{10})\.(\d{10})|\.([0-9a-fA-F-]{36}))?\.(parquet|json)$"
)


def read_commit(table: TableLocation, version: int) -> list[dict[str, Any]]:
    """The actions of one commit file."""
    text = table.store.read_bytes(table.commit_file(version)).decode("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def latest_version(table: TableLocation) -> int:
    """The highest committed version on disk (-1 when none), by listing the log."""
    names = table.store.list_names(table.log_folder)
    versions = [int(n[:20]) for n in names if len(n) == 25 and n.endswith(".json") and n[:20].isdigit()]
    return max(versions, default=-1)


@dataclass(frozen=True)
class LogState:
    """Each live file's newest ``add`` action (by decoded path) and each live metadata domain."""

    adds: dict[str, dict[str, Any]]
    domains: dict[str, dict[str, Any]]


def log_state(table: TableLocation, version: int) -> LogState:
    """The live ``add`` actions and domain metadata of ``version``, as the log records them."""
    store, log = table.store, table.log_folder
    names = store.list_names(log)
    checkpoint_version, parts = _newest_checkpoint(names, version)
    adds: dict[str, dict[str, Any] | None] = {}
    domains: dict[str, dict[str, Any] | None] = {}
    commits = sorted(int(m.group(1)) for n in names if (m := _COMMIT.match(n)))
    for number in reversed([v for v in commits if checkpoint_version < v <= version]):
        _reconcile(_json_actions(store, table.commit_file(number)), adds, domains)
    if checkpoint_version >= 0:
        _reconcile(_checkpoint_actions(store, log, parts), adds, domains)
    elif commits[:1] != [0]:
        raise DeltaError(
            f"The Delta log at {table} has neither version 0 nor a checkpoint at or below {version}"
        )
    return LogState(
        {p: a for p, a in adds.items() if a is not None}, {d: a for d, a in domains.items() if a is not None}
    )


def _reconcile(
    actions: Iterable[dict[str, Any]],
    adds: dict[str, dict[str, Any] | None],
    domains: dict[str, dict[str, Any] | None],
) -> None:
    """Record the actions of one commit (or checkpoint), newer ones having been recorded first.

    Within one commit a path may be removed and added with two deletion vectors (a DELETE that
    gives a file a vector): the add is the live logical file, so adds are taken before removes.
    """
    listed = list(actions)
    for action in listed:
        if action.get("add"):
            adds.setdefault(unquote(action["add"]["path"]), action["add"])
        elif action.get("domainMetadata"):
            domain = action["domainMetadata"]
            domains.setdefault(domain["domain"], None if domain.get("removed") else domain)
    for action in listed:
        if action.get("remove"):
            adds.setdefault(unquote(action["remove"]["path"]), None)


def _newest_checkpoint(names: list[str], version: int) -> tuple[int, list[str]]:
    """The newest checkpoint at or below ``version`` with every part present: (version, files)."""
    found: dict[tuple[int, str], list[str]] = {}
    for name in names:
        match = _CHECKPOINT.match(name)
        if match and int(match.group(1)) <= version:
            number, total, uuid = match.group(1, 3, 4)
            key = (int(number), f"multi-{total}" if total else (uuid or "classic"))
            found.setdefault(key, []).append(name)
    complete = [
        (key, files)
        for key, files in found.items()
        if not key[1].startswith("multi-") or len(files) == int(key[1][len("multi-") :])
    ]
    if not complete:
        return -1, []
    key, files = max(complete, key=lambda item: item[0][0])
    return key[0], sorted(files)


def _json_actions(store: Store, path: str) -> Iterator[dict[str, Any]]:
    for line in store.read_bytes(path).decode("utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


def _checkpoint_actions(store: Store, log: str, parts: list[str]) -> Iterator[dict[str, Any]]:
    """Every action of a checkpoint, its v2 sidecars' included."""
    for name in parts:
        actions = (
            _json_actions(store, os.path.join(log, name))
            if name.endswith(".json")
            else _parquet_actions(store, os.path.join(log, name))
        )
        for action in actions:
            if action.get("sidecar"):
                yield from _parquet_actions(
                    store, os.path.join(log, "_sidecars", unquote(action["sidecar"]["path"]))
                )
            else:
                yield action


def _parquet_actions(store: Store, path: str) -> Iterator[dict[str, Any]]:
    wanted = ("add", "remove", "domainMetadata", "sidecar")
    names = store.parquet_schema(path).names
    with store.open_input(path) as handle:
        table = pq.read_table(handle, columns=[c for c in wanted if c in names])
    for row in table.to_pylist():
        for kind, value in row.items():
            if value is not None:
                yield {kind: _plain(value)}


def _plain(value: Any) -> Any:
    """A checkpoint's struct as the JSON action it stands for: maps (key/value pairs) as dicts,
    absent (null) fields left out."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list) and all(isinstance(v, tuple) and len(v) == 2 for v in value) and value:
        return {k: _plain(v) for k, v in value}
    return value
