"""Row ids and in-commit timestamps stamped on a commit attempt (PROTOCOL.md)."""

from __future__ import annotations

import json

from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.log.protocol import Protocol
from dbt.adapters.deltamerge.delta.txn.stamps import (
    ROW_TRACKING_DOMAIN,
    CommitStamps,
    in_commit_timestamp,
    winner_high_water_mark,
    with_row_ids,
)


def _add(path: str, rows: int, **extra: object) -> dict:
    return {"add": {"path": path, "stats": json.dumps({"numRecords": rows}), **extra}}


def test_fresh_row_ids_follow_the_mark_file_by_file_and_the_mark_moves_to_the_last():
    actions, tags = with_row_ids([_add("a", 3), _add("b", 2), {"remove": {"path": "c"}}], 7, 4)
    adds = [a["add"] for a in actions if "add" in a]
    assert [(a["baseRowId"], a["defaultRowCommitVersion"]) for a in adds] == [(5, 7), (8, 7)]
    (domain,) = [a["domainMetadata"] for a in actions if "domainMetadata" in a]
    assert domain["domain"] == ROW_TRACKING_DOMAIN and json.loads(domain["configuration"]) == {
        "rowIdHighWaterMark": 9
    }
    assert tags == {"delta.rowTracking.preserved": "false"}  # rows were rewritten (remove and add)


def test_an_add_that_has_row_ids_keeps_them_and_no_mark_is_written_without_fresh_ids():
    actions, tags = with_row_ids([_add("a", 3, baseRowId=0, defaultRowCommitVersion=1)], 5, 10)
    assert actions == [_add("a", 3, baseRowId=0, defaultRowCommitVersion=1)]
    assert tags == {"delta.rowTracking.preserved": "true"}


def test_stamps_follow_the_table_and_a_suspension():
    features = Protocol(3, 7, (), ("rowTracking", "domainMetadata", "inCommitTimestamp"))
    on = {"delta.enableInCommitTimestamps": "true"}
    assert CommitStamps.for_table(features, on, {}) == CommitStamps(True, -1, True)
    suspended = {"delta.rowTrackingSuspended": "true"}
    assert CommitStamps.for_table(features, suspended, {}) == CommitStamps(False, -1, False)
    assert CommitStamps.for_table(None, on, {}) == CommitStamps()
    removed = {ROW_TRACKING_DOMAIN: {"configuration": '{"rowIdHighWaterMark": 3}', "removed": True}}
    assert CommitStamps.for_table(features, {}, removed).high_water_mark == -1
    assert winner_high_water_mark([{"commitInfo": {}}]) == -1


def test_an_in_commit_timestamp_is_after_the_previous_one_even_when_the_clock_is_behind(tmp_path):
    log, table = tmp_path / "_delta_log", TableLocation.of(str(tmp_path))
    log.mkdir()
    (log / f"{0:020d}.json").write_text(json.dumps({"commitInfo": {"inCommitTimestamp": 5000}}) + "\n")
    assert in_commit_timestamp(table, 1, now=100) == 5001
    assert in_commit_timestamp(table, 1, now=9000) == 9000
    assert in_commit_timestamp(table, 0, now=7) == 7
    (log / f"{1:020d}.json").write_text(json.dumps({"commitInfo": {"timestamp": 1}}) + "\n")
    assert in_commit_timestamp(table, 2, now=0) > 0  # before the feature: the file's time
