"""UniForm's Iceberg side against crashes, failures and concurrent writers.

The writers here are plain Python (commits of data files the table already has, copied under
new names: ``commit_files`` runs no Spark job), so a whole process is cheap to kill at a commit's
crash points and several can race: a process killed between the Delta commit and its Iceberg
metadata leaves readers the version before, and the next commit (or ``iceberg_sync``) catches
up; a conversion that fails leaves the Delta commit standing and says so; writers committing at
once leave the Iceberg side at the latest Delta version once they are all done, with a snapshot
of every version.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import uuid
from urllib.parse import unquote

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder
from pyiceberg.table import StaticTable

from dbt.adapters.deltamerge.delta import TableLocation, ledger, load_snapshot
from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
from dbt.adapters.deltamerge.delta.log import log_state
from dbt.adapters.deltamerge.delta.txn import (
    CommitActions,
    CommitInfo,
    CommitOptions,
    WrittenFile,
    commit_files,
)
from dbt.adapters.deltamerge.delta.uniform import iceberg_state, sync_iceberg

UNIFORM = {
    "delta.enableIcebergCompatV2": "true",
    "delta.universalFormat.enabledFormats": "iceberg",
    "delta.columnMapping.mode": "name",
}
# A commit of one more copy of the table's first data file (a blind append, no Spark), by a process
# of its own: DELTAMERGE_CRASH_AT kills it at that point of the commit.
APPEND = """
import sys
from dbt.adapters.deltamerge.delta import TableLocation
from tests.functional.test_uniform_faults import append_copy
for _ in range(int(sys.argv[2])):
    append_copy(TableLocation.of(sys.argv[1]))
"""


def append_copy(table: TableLocation) -> int:
    """Commit a copy of the table's first data file (its add's statistics, a new name); the version."""
    snapshot = load_snapshot(table)
    assert snapshot is not None
    first = sorted(snapshot.files, key=lambda f: f.path)[0]
    name = f"copy-{uuid.uuid4().hex}.parquet"
    shutil.copyfile(os.path.join(table.path, first.path), os.path.join(table.path, name))
    stats = _stats_of(table, first.path)
    written = WrittenFile(name, first.size, dict(first.partition_values), stats, int(first.num_records or 0))
    info = CommitInfo("WRITE", {"mode": "Append"}, is_blind_append=True)
    result = commit_files(snapshot, CommitActions(written=[written]), CommitOptions(info))
    assert result.version is not None
    return result.version


def append_in_threads(table: TableLocation, *, threads: int, commits: int) -> list[BaseException]:
    """``threads`` threads each committing ``commits`` copies at once (``append_copy``); their errors."""
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for _ in range(commits):
                append_copy(TableLocation.of(table.path, table.stores))
        except BaseException as error:
            errors.append(error)

    running = [threading.Thread(target=writer) for _ in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join()
    return errors


def _stats_of(table: TableLocation, path: str) -> str:
    snapshot = load_snapshot(table)
    assert snapshot is not None
    return str(log_state(table, snapshot.version).adds[unquote(path)]["stats"])


def delta_rows(path: str, version: int | None = None) -> list[tuple]:
    table = DeltaTable(path, version=version)
    got = QueryBuilder().register("t", table).execute("select id, v from t").read_all()
    return sorted(tuple(r.values()) for r in pa.table(got).to_pylist())


def iceberg_rows(path: str, snapshot_id: int | None = None) -> list[tuple]:
    state = iceberg_state(TableLocation.of(path))
    assert state is not None
    got = StaticTable.from_metadata(state.location).scan(snapshot_id=snapshot_id).to_arrow()
    return sorted(tuple(r.values()) for r in got.select(["id", "v"]).to_pylist())


def every_version_has_its_snapshot(path: str) -> None:
    state = iceberg_state(TableLocation.of(path))
    assert state is not None
    by_version = {int(s.summary["delta-version"]): s.snapshot_id for s in state.metadata.snapshots}
    latest = DeltaTable(path).version()
    assert sorted(by_version) == list(range(latest + 1))
    for version in (0, latest // 2, latest):
        assert iceberg_rows(path, by_version[version]) == delta_rows(path, version)


@pytest.fixture
def table(spark, tmp_path) -> TableLocation:
    location = TableLocation.of(str(tmp_path / "events"))
    frame = spark.sql("select cast(id as int) as id, concat('v', cast(id as string)) as v from range(20)")
    write_dataframe(spark, frame, WriteRequest(location, "create_or_replace", properties=UNIFORM))
    assert iceberg_state(location).delta_version == 0  # type: ignore[union-attr]
    return location


def test_a_run_killed_after_the_delta_commit_leaves_the_iceberg_side_behind_then_caught_up(table):
    path = table.path
    env = {**os.environ, "DELTAMERGE_CRASH_AT": "after_commit"}
    killed = subprocess.run(
        [sys.executable, "-c", APPEND, path, "1"], env=env, capture_output=True, text=True
    )
    assert killed.returncode == -9, killed.stderr
    assert DeltaTable(path).version() == 1
    assert iceberg_state(table).delta_version == 0  # type: ignore[union-attr]
    assert iceberg_rows(path) == delta_rows(path, 0)  # the version before: consistent, never a half

    assert append_copy(table) == 2  # the next commit converts version 1, then its own
    assert iceberg_state(table).delta_version == 2  # type: ignore[union-attr]
    assert iceberg_rows(path) == delta_rows(path)
    every_version_has_its_snapshot(path)


def test_a_failed_conversion_keeps_the_commit_and_says_so(table):
    metadata = os.path.join(table.path, "metadata")
    shutil.move(metadata, metadata + ".moved")
    open(metadata, "w").close()  # a file where the folder goes: every Iceberg write fails
    with ledger() as done:
        version = append_copy(table)
    assert version == 1 and DeltaTable(table.path).version() == 1
    [said] = done.notices
    assert said.startswith(
        f"Delta version 1 of {table.path} was committed; its Iceberg metadata was not written"
    )
    assert "iceberg_sync" in said

    os.remove(metadata)
    shutil.move(metadata + ".moved", metadata)
    assert iceberg_state(table).delta_version == 0  # type: ignore[union-attr]
    assert sync_iceberg(table, load_snapshot(table)) == 1  # type: ignore[arg-type]
    assert iceberg_rows(table.path) == delta_rows(table.path)
    every_version_has_its_snapshot(table.path)


def test_concurrent_writers_leave_the_iceberg_side_at_the_latest_version(table):
    """Three processes and two threads of this one append at once, each commit converting."""
    env = {k: v for k, v in os.environ.items() if k != "DELTAMERGE_CRASH_AT"}
    processes = [
        subprocess.Popen([sys.executable, "-c", APPEND, table.path, "4"], env=env, stderr=subprocess.PIPE)
        for _ in range(3)
    ]
    errors = append_in_threads(TableLocation.of(table.path), threads=2, commits=3)
    for process in processes:
        assert process.wait(timeout=300) == 0, process.stderr.read() if process.stderr else ""
    assert errors == []
    assert DeltaTable(table.path).version() == 3 * 4 + 2 * 3
    assert iceberg_state(table).delta_version == 18  # type: ignore[union-attr]
    assert iceberg_rows(table.path) == delta_rows(table.path)
    every_version_has_its_snapshot(table.path)


def test_a_rebuilt_iceberg_side_matches_the_incremental_one(table):
    for _ in range(3):
        append_copy(table)
    incremental = iceberg_rows(table.path)
    shutil.rmtree(os.path.join(table.path, "metadata"))  # lost: rebuilt from the latest version
    assert sync_iceberg(table, load_snapshot(table)) == 3  # type: ignore[arg-type]
    assert iceberg_rows(table.path) == incremental == delta_rows(table.path)
