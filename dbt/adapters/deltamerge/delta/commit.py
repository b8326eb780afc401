"""Writing commits: ``_delta_log/<version>.json``, created atomically, never overwritten.

One code path for every action type. A version file is written to a temporary name and
hard-linked to its final name: ``link`` fails when the name exists, so of two writers
racing for a version exactly one wins (put-if-absent), and a reader never sees a
partial file. The loser re-reads what won and either retries at the next version (a
blind append, when nothing it depends on changed) or raises ``ConcurrentModification``.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from dbt.adapters.deltamerge.__version__ import version as _VERSION
from dbt.adapters.deltamerge.delta.conflicts import ReadSet, check_winner
from dbt.adapters.deltamerge.delta.errors import ConcurrentModification
from dbt.adapters.deltamerge.delta.faults import crash_point
from dbt.adapters.deltamerge.delta.stats import stats_to_json

DEFAULT_CHECKPOINT_INTERVAL = 10
# Delta retries a conflict-free commit practically forever; lost races here are rare and cheap.
MAX_COMMIT_ATTEMPTS = 1000


def log_dir(table_path: str) -> str:
    """The ``_delta_log`` folder of a table."""
    return os.path.join(table_path, "_delta_log")


def version_file(table_path: str, version: int) -> str:
    """Path of the commit file for ``version``.

    >>> version_file("/t", 3)
    '/t/_delta_log/00000000000000000003.json'
    """
    return os.path.join(log_dir(table_path), f"{version:020d}.json")


def now_ms() -> int:
    """Milliseconds since the epoch, as Delta timestamps are."""
    return int(time.time() * 1000)


@dataclass(frozen=True)
class CommitInfo:
    """The ``commitInfo`` action of one commit."""

    operation: str
    operation_parameters: dict[str, Any] = field(default_factory=dict)
    operation_metrics: dict[str, int] = field(default_factory=dict)
    is_blind_append: bool = False
    # (appId, version) of the application transaction (a dbt model's run) this commit completes.
    txn: tuple[str, int] | None = None

    def to_action(self, *, timestamp: int, read_version: int | None) -> dict[str, object]:
        """The JSON object; Delta records parameters and metrics as strings."""
        info: dict[str, object] = {
            "timestamp": timestamp,
            "operation": self.operation,
            "operationParameters": {
                k: v if isinstance(v, str) else json.dumps(v) for k, v in self.operation_parameters.items()
            },
            "isolationLevel": "WriteSerializable",
            "isBlindAppend": self.is_blind_append,
            "operationMetrics": {k: str(v) for k, v in self.operation_metrics.items()},
            "engineInfo": f"dbt-deltamerge/{_VERSION}",
            "txnId": str(uuid.uuid4()),
        }
        if read_version is not None:
            info["readVersion"] = read_version
        return {"commitInfo": info}


def encode_actions(actions: Sequence[dict[str, Any]]) -> bytes:
    """Newline-delimited JSON, one action per line (``add.stats`` is already a string)."""
    return "".join(stats_to_json(a) + "\n" for a in actions).encode("utf-8")


def put_if_absent(path: str, data: bytes) -> bool:
    """Create ``path`` with ``data`` unless it exists; True if this call created it."""
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    crash_point("commit_file_written")
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)


def read_commit(table_path: str, version: int) -> list[dict[str, Any]]:
    """The actions of one commit file."""
    with open(version_file(table_path, version), encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def latest_version(table_path: str) -> int:
    """The highest committed version on disk (-1 when none), by listing the log."""
    try:
        names = os.listdir(log_dir(table_path))
    except FileNotFoundError:
        return -1
    versions = [int(n[:20]) for n in names if len(n) == 25 and n.endswith(".json") and n[:20].isdigit()]
    return max(versions, default=-1)


def commit(
    table_path: str,
    *,
    read_version: int,
    actions: Sequence[dict[str, Any]],
    info: CommitInfo,
    read: ReadSet | None = None,
) -> int:
    """Commit ``actions`` as version ``read_version + 1`` or later; return the version committed.

    ``read_version`` is -1 for a new table. When another writer won the version, every
    commit since is checked with Delta's conflict rules (``conflicts.check_winner``,
    given what this transaction read); without conflict the same actions are committed
    at the next free version. Without a ``read`` set, only a blind append may retry.
    """
    crash_point("before_commit")
    os.makedirs(log_dir(table_path), exist_ok=True)
    if info.txn is not None:
        app_id, txn_version = info.txn
        applied = _transaction_version(table_path, app_id) if read_version >= 0 else None
        if applied is not None and applied >= txn_version:
            # This run of the model already committed (a retried or duplicated commit): not twice.
            return latest_version(table_path)
        actions = [{"txn": {"appId": app_id, "version": txn_version, "lastUpdated": now_ms()}}, *actions]
        if read is not None:
            read = replace(read, app_ids=read.app_ids | {app_id})
        elif info.is_blind_append:
            read = ReadSet(app_ids=frozenset({app_id}))
    attempt = read_version + 1
    for _ in range(MAX_COMMIT_ATTEMPTS):
        timestamp = now_ms()
        head = info.to_action(timestamp=timestamp, read_version=read_version if read_version >= 0 else None)
        if put_if_absent(version_file(table_path, attempt), encode_actions([head, *actions])):
            crash_point("after_commit")
            return attempt
        for version in range(attempt, max(latest_version(table_path), attempt) + 1):
            winner = read_commit(table_path, version)
            if read is None and not info.is_blind_append:
                raise ConcurrentModification(
                    f"Delta table at {table_path}: version {version} was committed by another writer "
                    f"({_operation_of(winner)}) after this write read version {read_version}. "
                    "Nothing was committed; re-run the model."
                )
            check_winner(
                table=table_path,
                read_version=read_version,
                version=version,
                winner=winner,
                read=read,
                blind_append=info.is_blind_append,
                operation=info.operation,
            )
            attempt = version + 1
    raise ConcurrentModification(
        f"Delta table at {table_path}: gave up after {MAX_COMMIT_ATTEMPTS} concurrent commits."
    )


def _transaction_version(table_path: str, app_id: str) -> int | None:
    from deltalake import DeltaTable

    version = DeltaTable(table_path).transaction_version(app_id)
    return None if version is None else int(version)


def _operation_of(actions: list[dict[str, Any]]) -> str:
    for action in actions:
        if "commitInfo" in action:
            return str(action["commitInfo"].get("operation", "unknown operation"))
    return "unknown operation"


def maybe_checkpoint(table_path: str, version: int, interval: int) -> bool:
    """Write a checkpoint (with delta-rs) when ``version`` is a multiple of ``interval``."""
    if version <= 0 or interval <= 0 or version % interval:
        return False
    from deltalake import DeltaTable

    DeltaTable(table_path, version=version).create_checkpoint()
    return True
