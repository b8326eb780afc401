"""What two table features ask of each commit attempt: row ids and in-commit timestamps.

Both depend on the version a commit lands at, which is known only when it is attempted (a lost
race moves it to the next free version), so ``commit`` applies them per attempt:

- **Row tracking** (PROTOCOL.md, "Row Tracking"), when ``rowTracking`` is a writer feature and
  not suspended: every new ``add`` gets ``baseRowId`` above the ``delta.rowTracking`` high-water
  mark (the newest, winners' included) and ``defaultRowCommitVersion`` = the version; the
  commit carries the mark's new ``domainMetadata``. Removes repeat the row id fields of the
  files' adds (``AddFile.remove_action``). Rows a rewrite copies or updates keep their stable row
  ids where the table names materialized columns for them (``row_ids.py``; the commit's tag
  ``delta.rowTracking.preserved`` says whether they were kept).
- **In-commit timestamps** (PROTOCOL.md, "In-Commit Timestamps"), when enabled: ``commitInfo``
  (always the first action here) records ``inCommitTimestamp``, the later of now and one
  millisecond after the previous commit's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.log.protocol import Protocol

ROW_TRACKING_DOMAIN = "delta.rowTracking"
PRESERVED_TAG = "delta.rowTracking.preserved"


@dataclass(frozen=True)
class CommitStamps:
    """Which per-attempt stamps a table's commits need, and the row id high-water mark read."""

    row_tracking: bool = False
    high_water_mark: int = -1
    in_commit_timestamps: bool = False

    @classmethod
    def for_table(
        cls,
        protocol: Protocol | None,
        configuration: Mapping[str, str],
        domains: Mapping[str, Mapping[str, Any]],
    ) -> CommitStamps:
        """The stamps of a table with this protocol, properties and metadata domains.

        >>> CommitStamps.for_table(Protocol(1, 2), {}, {})
        CommitStamps(row_tracking=False, high_water_mark=-1, in_commit_timestamps=False)
        >>> rows = {ROW_TRACKING_DOMAIN: {"configuration": '{"rowIdHighWaterMark": 9}'}}
        >>> CommitStamps.for_table(Protocol(3, 7, (), ("rowTracking", "domainMetadata")), {}, rows)
        CommitStamps(row_tracking=True, high_water_mark=9, in_commit_timestamps=False)
        """
        writer = set((protocol.writer_features or ()) if protocol else ())
        suspended = _true(configuration.get("delta.rowTrackingSuspended"))
        return cls(
            row_tracking="rowTracking" in writer and not suspended,
            high_water_mark=_mark_of(domains.get(ROW_TRACKING_DOMAIN)),
            in_commit_timestamps="inCommitTimestamp" in writer
            and _true(configuration.get("delta.enableInCommitTimestamps")),
        )


NO_STAMPS = CommitStamps()


def _true(value: object) -> bool:
    return str(value).lower() == "true"


def _mark_of(domain: Mapping[str, Any] | None) -> int:
    if not domain or domain.get("removed"):
        return -1
    return int(json.loads(str(domain.get("configuration") or "{}")).get("rowIdHighWaterMark", -1))


def winner_high_water_mark(actions: Sequence[Mapping[str, Any]]) -> int:
    """The row id high-water mark a commit sets (-1 when it sets none).

    >>> mark = {"domain": ROW_TRACKING_DOMAIN, "configuration": '{"rowIdHighWaterMark": 4}'}
    >>> winner_high_water_mark([{"domainMetadata": mark}])
    4
    """
    marks = [
        _mark_of(a["domainMetadata"])
        for a in actions
        if "domainMetadata" in a and a["domainMetadata"].get("domain") == ROW_TRACKING_DOMAIN
    ]
    return max(marks, default=-1)


def with_row_ids(
    actions: Sequence[dict[str, Any]], version: int, high_water_mark: int, *, kept: bool = False
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """``actions`` with fresh row ids and commit versions on new adds, and the mark's domain action.

    Returns the actions and the ``commitInfo`` tags: ``delta.rowTracking.preserved`` is true when
    no row was copied or updated (a commit that removes files and adds others rewrote rows), or
    when the rewrite ``kept`` their stable row ids (materialized, ``row_ids.py``).

    >>> acts, tags = with_row_ids([{"add": {"path": "a", "stats": '{"numRecords": 3}'}}], 5, 9)
    >>> add, domain = acts[0]["add"], acts[1]["domainMetadata"]
    >>> add["baseRowId"], add["defaultRowCommitVersion"], domain["configuration"]
    (10, 5, '{"rowIdHighWaterMark":12}')
    >>> tags
    {'delta.rowTracking.preserved': 'true'}
    """
    stamped: list[dict[str, Any]] = []
    next_id = high_water_mark + 1
    for action in actions:
        add = action.get("add")
        if add is not None and add.get("baseRowId") is None:
            rows = int(json.loads(add["stats"])["numRecords"]) if add.get("stats") else 0
            add = {**add, "baseRowId": next_id, "defaultRowCommitVersion": version}
            next_id += rows
            stamped.append({"add": add})
        else:
            stamped.append(action)
    if next_id - 1 > high_water_mark:
        configuration = json.dumps({"rowIdHighWaterMark": next_id - 1}, separators=(",", ":"))
        stamped.append(
            {
                "domainMetadata": {
                    "domain": ROW_TRACKING_DOMAIN,
                    "configuration": configuration,
                    "removed": False,
                }
            }
        )
    rewrote = any("remove" in a for a in actions) and any("add" in a for a in actions)
    return stamped, {PRESERVED_TAG: "false" if rewrote and not kept else "true"}


def in_commit_timestamp(table: TableLocation, version: int, now: int) -> int:
    """The ``inCommitTimestamp`` of a commit at ``version`` attempted at ``now`` (ms).

    The later of ``now`` and one millisecond after the previous commit's in-commit timestamp
    (that commit file's modification time if it has none: the commit that enabled the feature
    came after it).
    """
    if version <= 0:
        return now
    previous = table.commit_file(version - 1)
    first = table.store.read_bytes(previous).decode("utf-8").split("\n", 1)[0]
    info = json.loads(first).get("commitInfo", {}) if first.strip() else {}
    stamp = info.get("inCommitTimestamp")
    if stamp is None:
        stamp = int(table.store.size_and_mtime(previous)[1] * 1000)
    return max(now, int(stamp) + 1)
