"""The commit path runs with no Spark session at all (``delta/txn/``, ``delta/log/``).

A real interpreter whose pyspark refuses to start a session (no JVM either: a session is the only
way this package starts one): a table delta-rs wrote is read, a
data file pyarrow wrote is added, a stale writer's append is retried past a concurrent commit, a
file is removed under a read set, and delta-rs reads every version back. What makes a commit safe
to retry, and testable without a JVM, is exactly this.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import os, sys, uuid
    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake import DeltaTable, write_deltalake
    from pyspark.sql import SparkSession

    def refuse(*_, **__):
        raise AssertionError("the commit path started a Spark session")

    SparkSession.builder.getOrCreate = refuse
    SparkSession.builder.create = refuse

    from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
    from dbt.adapters.deltamerge.delta.txn import (
        CommitActions, CommitInfo, CommitOptions, ReadSet, WrittenFile, commit_files,
    )
    from dbt.adapters.deltamerge.delta.log.stats import stats_from_metadata, stats_to_json

    path = sys.argv[1]
    write_deltalake(path, pa.table({"id": pa.array([1, 2], pa.int64())}))
    location = TableLocation.of(path)
    first = load_snapshot(location)

    def written(ids):
        name = f"part-{uuid.uuid4().hex}.parquet"
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), os.path.join(path, name))
        full = os.path.join(path, name)
        stats = stats_from_metadata(pq.read_metadata(full), first.schema, 32)
        return WrittenFile(name, os.path.getsize(full), {}, stats_to_json(stats), len(ids))

    appended = commit_files(
        first,
        CommitActions(written=[written([3])]),
        CommitOptions(CommitInfo("WRITE", {"mode": "Append"}, is_blind_append=True)),
    )
    # A writer that read version 0 too: its blind append is retried past version 1.
    stale = commit_files(
        first,
        CommitActions(written=[written([4])]),
        CommitOptions(CommitInfo("WRITE", {"mode": "Append"}, is_blind_append=True)),
    )
    latest = load_snapshot(location)
    gone = [f for f in latest.files if f.num_records == 2]
    read = ReadSet(files_read=frozenset(f.path for f in gone), removed=frozenset(f.path for f in gone))
    deleted = commit_files(
        latest,
        CommitActions(removed=gone),
        CommitOptions(CommitInfo("DELETE", {"predicate": "[]"}), read=read),
    )
    rows = sorted(DeltaTable(path).to_pyarrow_table().column("id").to_pylist())
    print(json.dumps({
        "versions": [appended.version, stale.version, deleted.version],
        "rows": rows,
        "active": SparkSession.getActiveSession() is not None,
    }))
    # The interpreter's own exit sometimes aborts in a native library's threads (pyarrow's or
    # deltalake's; seen with nothing of ours running): the answer is out, the process ends here.
    sys.stdout.flush()
    os._exit(0)
    """
).replace("import os, sys, uuid", "import json, os, sys, uuid")


def test_a_commit_reads_the_log_conflicts_and_commits_without_a_spark_session(tmp_path):
    table = tmp_path / "t"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(table)], capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found == {"versions": [1, 2, 3], "rows": [3, 4], "active": False}
