"""Writing commits: ``_delta_log/<version>.json``, created atomically, never overwritten.

One code path for every action type, over the table's location (``TableLocation``: its store).
A version file is created only if absent (on a disk: written to a temporary name and hard-linked,
``link`` failing when the name exists; on an object store: one conditional create), so of two
writers racing for a version exactly one wins, and a reader never sees a partial file. The loser
re-reads what won and either retries at the next version (a blind append, when nothing it depends
on changed) or raises ``ConcurrentModification``.

A commit may carry a ``txn`` action (appId, version): the identity of one write of one
dbt invocation. A retried commit of that same write finds the version that holds it and
returns that version instead of committing again. Any other commit, whatever its appId,
is another writer, and Delta's conflict rules decide.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from dbt.adapters.deltamerge.__version__ import version as _VERSION
from dbt.adapters.deltamerge.common.cancel import refuse_if_cancelled
from dbt.adapters.deltamerge.delta.errors import ConcurrentModification
from dbt.adapters.deltamerge.delta.faults import commit_gate, crash_point
from dbt.adapters.deltamerge.delta.ledger import record
from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.log.replay import latest_version, read_commit
from dbt.adapters.deltamerge.delta.log.stats import stats_to_json
from dbt.adapters.deltamerge.delta.txn.conflicts import ConcurrentTransaction, ReadSet, check_winner
from dbt.adapters.deltamerge.delta.txn.stamps import (
    NO_STAMPS,
    CommitStamps,
    in_commit_timestamp,
    winner_high_water_mark,
    with_row_ids,
)

_LOG = logging.getLogger(__name__)
DEFAULT_CHECKPOINT_INTERVAL = 10
# Delta retries a conflict-free commit practically forever; lost races here are rare and cheap.
MAX_COMMIT_ATTEMPTS = 1000


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
    # The rows this commit copies or updates keep their stable row ids (``row_ids.py``).
    row_ids_kept: bool = False
    # Delta's isolation level: SnapshotIsolation for commits that change no data (OPTIMIZE).
    isolation_level: str = "WriteSerializable"

    def to_action(
        self,
        *,
        timestamp: int,
        read_version: int | None,
        in_commit_timestamp: int | None = None,
        tags: dict[str, str] | None = None,
    ) -> dict[str, object]:
        """The JSON object; Delta records parameters and metrics as strings."""
        info: dict[str, object] = {
            **({"inCommitTimestamp": in_commit_timestamp} if in_commit_timestamp is not None else {}),
            "timestamp": timestamp,
            "operation": self.operation,
            "operationParameters": {
                k: v if isinstance(v, str) else json.dumps(v) for k, v in self.operation_parameters.items()
            },
            "isolationLevel": self.isolation_level,
            "isBlindAppend": self.is_blind_append,
            "operationMetrics": {k: str(v) for k, v in self.operation_metrics.items()},
            "engineInfo": f"dbt-deltamerge/{_VERSION}",
            "txnId": str(uuid.uuid4()),
        }
        if read_version is not None:
            info["readVersion"] = read_version
        if tags:
            info["tags"] = tags
        return {"commitInfo": info}


def encode_actions(actions: Sequence[dict[str, Any]]) -> bytes:
    """Newline-delimited JSON, one action per line (``add.stats`` is already a string)."""
    return "".join(stats_to_json(a) + "\n" for a in actions).encode("utf-8")


def commit(
    table: TableLocation,
    *,
    read_version: int,
    actions: Sequence[dict[str, Any]],
    info: CommitInfo,
    read: ReadSet | None = None,
    stamps: CommitStamps = NO_STAMPS,
) -> int:
    """Commit ``actions`` as version ``read_version + 1`` or later; return the version committed.

    ``read_version`` is -1 for a new table. When another writer won the version, every
    commit since is checked with Delta's conflict rules (``conflicts.check_winner``,
    given what this transaction read); without conflict the same actions are committed
    at the next free version. Without a ``read`` set, only a blind append may retry.
    With a ``txn`` in ``info``, a write committed before (a retried commit) is not
    committed again: the version that holds its ``txn`` is returned. ``stamps`` are the row ids
    and in-commit timestamp each attempt gets (``stamps.py``).
    """
    crash_point("before_commit")
    refuse_if_cancelled(table.path, read_version)
    with commit_gate(table.name):
        version = _commit(
            table, read_version=read_version, actions=actions, info=info, read=read, stamps=stamps
        )
    record(table, version, info.operation)  # an error from here on says the version landed
    return version


def _commit(
    table: TableLocation,
    *,
    read_version: int,
    actions: Sequence[dict[str, Any]],
    info: CommitInfo,
    read: ReadSet | None,
    stamps: CommitStamps,
) -> int:
    table.store.make_dirs(table.log_folder)
    if info.txn is not None:
        app_id, txn_version = info.txn
        committed = committed_version_of(table, app_id, txn_version)
        if committed is not None:
            # This very write is already committed (a retried commit): not a second time.
            return committed
        actions = [{"txn": {"appId": app_id, "version": txn_version, "lastUpdated": now_ms()}}, *actions]
        if read is not None:
            read = replace(read, app_ids=read.app_ids | {app_id})
        elif info.is_blind_append:
            read = ReadSet(app_ids=frozenset({app_id}))
    attempt = read_version + 1
    mark = stamps.high_water_mark
    for _ in range(MAX_COMMIT_ATTEMPTS):
        head, body = _attempt(table, attempt, info, read_version, actions, stamps, mark)
        if table.store.put_if_absent(table.commit_file(attempt), encode_actions([head, *body])):
            crash_point("after_commit")
            return attempt
        for version in range(attempt, max(latest_version(table), attempt) + 1):
            winner = read_commit(table, version)
            if version == attempt and _txn_id(winner) == head["commitInfo"]["txnId"]:  # type: ignore[index]
                # This attempt's own file: its create landed, the answer was lost and the client's
                # retry found it there (an object store's 500 or timeout after the write).
                crash_point("after_commit")
                return attempt
            mark = max(mark, winner_high_water_mark(winner))
            if info.txn is not None and _holds_txn(winner, *info.txn):
                return version  # the same write, committed concurrently by a duplicate of this call
            if read is None and not info.is_blind_append:
                raise ConcurrentModification(
                    f"Delta table at {table}: version {version} was committed by another writer "
                    f"({_operation_of(winner)}) after this write read version {read_version}. "
                    "Nothing was committed; re-run the model."
                )
            check_winner(
                table=table.path,
                read_version=read_version,
                version=version,
                winner=winner,
                read=read,
                blind_append=info.is_blind_append,
                operation=info.operation,
                changes_protocol=any("protocol" in action for action in actions),
            )
            attempt = version + 1
    raise ConcurrentModification(
        f"Delta table at {table}: gave up after {MAX_COMMIT_ATTEMPTS} concurrent commits."
    )


def _txn_id(actions: Sequence[dict[str, Any]]) -> object:
    """The ``commitInfo.txnId`` of a commit's actions (None without one: another writer's may lack it)."""
    info: object = next((a["commitInfo"] for a in actions if "commitInfo" in a), None)
    return info.get("txnId") if isinstance(info, dict) else None


def _attempt(
    table: TableLocation,
    version: int,
    info: CommitInfo,
    read_version: int,
    actions: Sequence[dict[str, Any]],
    stamps: CommitStamps,
    mark: int,
) -> tuple[dict[str, object], Sequence[dict[str, Any]]]:
    """The ``commitInfo`` and the actions of an attempt at ``version``, stamped as the table asks."""
    timestamp = now_ms()
    tags: dict[str, str] = {}
    if stamps.row_tracking:
        actions, tags = with_row_ids(actions, version, mark, kept=info.row_ids_kept)
    in_commit = in_commit_timestamp(table, version, timestamp) if stamps.in_commit_timestamps else None
    head = info.to_action(
        timestamp=in_commit or timestamp,
        read_version=read_version if read_version >= 0 else None,
        in_commit_timestamp=in_commit,
        tags=tags,
    )
    return head, actions


def committed_version_of(table: TableLocation, app_id: str, txn_version: int) -> int | None:
    """The version whose commit holds ``txn`` (``app_id``, ``txn_version``); None if none does.

    An appId names one writer (a dbt invocation's writes to one model), whose versions
    grow write by write. When the table already records a later version of the appId but
    no commit holds this one, this write would land out of order: that is refused.
    """
    if latest_version(table) < 0:
        return None
    applied = _transaction_version(table, app_id)
    if applied is None or applied < txn_version:
        return None
    for version in range(latest_version(table), -1, -1):
        try:
            if _holds_txn(read_commit(table, version), app_id, txn_version):
                return version
        except FileNotFoundError:
            break  # older commits were cleaned up after a checkpoint
    raise ConcurrentTransaction(
        f"Delta table at {table}: ConcurrentTransaction: the table records version {applied} of "
        f"transaction {app_id}, later than this write's version {txn_version}, which no retained commit "
        "holds. Nothing was committed; re-run the model."
    )


def _holds_txn(actions: list[dict[str, Any]], app_id: str, txn_version: int) -> bool:
    txns = [a["txn"] for a in actions if "txn" in a]
    return any(t.get("appId") == app_id and t.get("version") == txn_version for t in txns)


def _transaction_version(table: TableLocation, app_id: str) -> int | None:
    from deltalake import DeltaTable

    version = DeltaTable(table.path, storage_options=table.deltalake_options()).transaction_version(app_id)
    return None if version is None else int(version)


def _operation_of(actions: list[dict[str, Any]]) -> str:
    for action in actions:
        if "commitInfo" in action:
            return str(action["commitInfo"].get("operation", "unknown operation"))
    return "unknown operation"


def maybe_checkpoint(table: TableLocation, version: int, interval: int) -> bool:
    """Write a checkpoint (with delta-rs) when ``version`` is a multiple of ``interval``.

    The version is committed already: a failed checkpoint is logged, not raised, as in
    Delta, so a run never reports failure for a write it did commit (a re-run would
    apply it twice). Readers replay the JSON commits until the next checkpoint.
    """
    if version <= 0 or interval <= 0 or version % interval:
        return False
    from deltalake import DeltaTable

    try:
        DeltaTable(table.path, version=version, storage_options=table.deltalake_options()).create_checkpoint()
    except Exception as exc:  # whatever failed, the commit stands
        _LOG.warning("Delta table at %s: checkpoint of version %s failed (%s)", table, version, exc)
        return False
    return True


def clean_expired_logs(table: TableLocation, configuration: Mapping[str, str]) -> None:
    """Delete the log files and checkpoints older than ``delta.logRetentionDuration`` (30 days)
    that no version inside the retention needs (with delta-rs, after a checkpoint, as Delta does);
    off with ``delta.enableExpiredLogCleanup = false``.

    delta-rs keeps every commit newer than the cutoff and the newest checkpoint at or before the
    oldest of them, deleting only older commits and checkpoints: every version inside the
    retention stays readable (time travel), the versions before it do not. A failure is logged:
    the commit stands, and the next checkpoint tries again.
    """
    if str(configuration.get("delta.enableExpiredLogCleanup", "true")).lower() == "false":
        return
    from deltalake import DeltaTable

    try:
        DeltaTable(table.path, storage_options=table.deltalake_options()).cleanup_metadata()
    except Exception as exc:  # whatever failed, the commit stands
        _LOG.warning("Delta table at %s: log cleanup failed (%s)", table, exc)
