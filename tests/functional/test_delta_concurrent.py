"""Two implementations, one table, at once: Delta Lake on Spark and a separate dbt invocation of
ours commit to the same table concurrently, each of Delta's conflict classes in both directions.

The tables are ours (a ``method: server`` dbt project, so each dbt invocation is a light client of
one warm server); Delta (``tests/delta_spark.py``) writes them by path. Nothing is left to timing:

- *Delta commits inside our transaction*: our ``dbt run`` of a merge reads its snapshot and writes
  its files, then waits at the commit gate (``DELTAMERGE_COMMIT_GATE``, role ``second``); Delta
  commits its statement; ours then commits against a version it did not read, and our conflict
  rules (``delta/txn/conflicts.py``) must refuse it with the class Delta would name.
- *Ours commits inside Delta's transaction*: Delta's ``MERGE`` holds inside its job (its snapshot
  read) on ``deltamerge_pause``; a ``dbt run-operation`` of ours commits a statement; Delta goes
  on, and Delta's own conflict checker must refuse its commit.

Classes (Delta's rules, WriteSerializable): a concurrent append (an insert-only MERGE, not a blind
append, which would not conflict, of a key the other merge's source holds: ours reads only the
files its source's keys can match, a narrower read than Delta's, so a key outside that range does
not conflict with ours), a delete of the files
the other read (a DELETE of every row: files removed, none added, else the added files conflict
first), a metadata change (a new column), a protocol change (a table feature made supported). In
every case the loser committed nothing, the winner's change is the table's, the validator finds
the table sound, and the loser's statement run again succeeds on top. Not here: a delete-delete
(both removing a file neither read: a compaction's; Delta's checker finds the delete-read first
for any DML) and a transaction-id conflict (Delta's ``txnAppId`` writes against our models'
``txn``), both covered between our own writers (``test_merge_on_read.py``, ``test_transactions.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder

from tests.backend import SLOW
from tests.delta_spark import DeltaError
from tests.functional.test_warm_server import _wait_for
from tests.validator import problems

pytestmark = [pytest.mark.delta, pytest.mark.skipif(not Path("/proc").exists(), reason="needs /proc")]

DBT = str(Path(sys.executable).with_name("dbt"))
CLI = str(Path(sys.executable).with_name("deltamerge-server"))
PROFILE = """both:
  target: t
  outputs:
    t:
      type: deltamerge
      method: server
      schema: both
      threads: 1
      warehouse: ./warehouse
      server_warmup_rounds: 0
      server_side_parameters:
        spark.master: "local[1]"
        spark.driver.memory: 1g
        spark.sql.shuffle.partitions: "1"
"""
# append_new_columns: the re-run after Delta's new column merges without it (the column kept).
MODEL = """{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id',
                    on_schema_change='append_new_columns') }}
select id, {{ var('batch', 0) }} as batch from range({{ var('rows', 10) }})
"""
STATEMENT = "{% macro stmt(sql) %}{% do run_query(sql) %}{% endmacro %}\n"
CLASSES = ("append", "delete_read", "metadata", "protocol")
# ``make test`` runs one class each way (a dbt invocation each, Delta's JVM beside); every class
# with ``DELTAMERGE_ORACLE_CONCURRENT=all`` or the slow tier.
EVERY = os.environ.get("DELTAMERGE_ORACLE_CONCURRENT") == "all" or SLOW
DELTA_INSIDE_OURS = CLASSES if EVERY else ("append",)
OURS_INSIDE_DELTAS = CLASSES if EVERY else ("delete_read",)
# Delta's statement committed inside ours (the table by path).
DELTA_WINS = {
    "append": "MERGE INTO delta.`{path}` t USING (SELECT 10 AS id, 9 AS batch) s ON t.id = s.id "
    "WHEN NOT MATCHED THEN INSERT *",
    "delete_read": "DELETE FROM delta.`{path}`",
    "metadata": "ALTER TABLE delta.`{path}` ADD COLUMNS (extra STRING)",
    "protocol": "ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({feature})",
}
# A protocol change alone: a table feature made supported (no property of the table's metadata).
FEATURE = "'delta.feature.deletionVectors' = 'supported'"
# Ours committed inside Delta's MERGE (the table by name).
OURS_WINS = {
    "append": "MERGE INTO both.{name} t USING (SELECT 300 AS id, 5 AS batch) s ON t.id = s.id "
    "WHEN NOT MATCHED THEN INSERT *",
    "delete_read": "DELETE FROM both.{name}",
    "metadata": "ALTER TABLE both.{name} ADD COLUMNS (extra STRING)",
    "protocol": "ALTER TABLE both.{name} SET TBLPROPERTIES ({feature})",
}
# The conflict each class is, in our words and in Delta's exception names.
# A feature made supported commits a protocol and a metadata action (Delta's ALTER and ours): the
# loser, changing no protocol itself, is refused for the metadata change (``checkNoMetadataUpdates``;
# ``checkProtocolCompatibility`` lets deletion vectors' upgrade through).
OURS_SAYS = {
    "append": "ConcurrentAppend",
    "delete_read": "ConcurrentDeleteRead",
    "metadata": "MetadataChanged",
    "protocol": "MetadataChanged",
}
DELTA_SAYS = {
    "append": "ConcurrentAppendException",
    "delete_read": "ConcurrentDeleteReadException",
    "metadata": "MetadataChangedException",
    "protocol": "MetadataChangedException",
}
DELTA_MERGE = (
    "MERGE INTO delta.`{path}` t USING (SELECT id, 7 AS batch FROM range(3) {where}) s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET t.batch = s.batch "
    "WHEN NOT MATCHED THEN INSERT (id, batch) VALUES (s.id, s.batch)"
)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("both")
    (root / "models").mkdir()
    (root / "macros").mkdir()
    (root / "dbt_project.yml").write_text(
        'name: both\nversion: "1.0"\nprofile: both\nconfig-version: 2\n'
        "flags:\n  send_anonymous_usage_stats: false\n"
    )
    (root / "profiles.yml").write_text(PROFILE)
    (root / "macros" / "stmt.sql").write_text(STATEMENT)
    for kind in CLASSES:
        for side in ("a", "b"):
            (root / "models" / f"{side}_{kind}.sql").write_text(MODEL)
    done = _dbt(root, "run")
    assert done.returncode == 0, done.stdout[-3000:]
    yield root
    subprocess.run([CLI, "stop", "--force", "--warehouse", str(root / "warehouse")], timeout=120)


def _dbt(project: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DBT, *args, "--profiles-dir", "."], cwd=project, capture_output=True, text=True, timeout=600,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("DELTAMERGE_")}, **(env or {})},
    )  # fmt: skip


def _start(project: Path, *args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [DBT, *args, "--profiles-dir", "."], cwd=project, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, env={**{k: v for k, v in os.environ.items() if not k.startswith("DELTAMERGE_")}, **env},
    )  # fmt: skip


def _path(project: Path, name: str) -> str:
    return str(project / "warehouse" / "both.db" / name)


def _rows(path: str) -> dict[int, Any]:
    """``id -> batch`` as delta-rs reads the table (its query engine: deletion vectors applied)."""
    found = QueryBuilder().register("t", DeltaTable(path)).execute("select id, batch from t").read_all()
    return {r["id"]: r["batch"] for r in pa.table(found).to_pylist()}


@pytest.mark.parametrize("kind", DELTA_INSIDE_OURS)
def test_delta_commits_inside_our_merge(project, delta_spark, tmp_path, kind):
    name = f"a_{kind}"
    path = _path(project, name)
    version = DeltaTable(path).version()
    run = ("run", "--select", name, "--vars", "{batch: 1, rows: 11}")
    ours = _start(project, *run, env={"DELTAMERGE_COMMIT_GATE": f"{tmp_path}:second"})
    _wait_for(lambda: (tmp_path / f"{name}.second-ready").exists(), "our merge at its commit", 300)
    delta_spark.sql(DELTA_WINS[kind].format(path=path, feature=FEATURE))
    (tmp_path / f"{name}.first-done").touch()
    out = ours.communicate(timeout=600)[0]
    assert ours.returncode == 1, out[-3000:]
    assert f"{OURS_SAYS[kind]}:" in out and "re-run" in out, out[-3000:]
    assert DeltaTable(path).version() == version + 1  # Delta's commit only
    assert delta_spark.history(path)[-1]["version"] == version + 1
    assert problems(path) == []
    again = _dbt(project, *run)
    assert again.returncode == 0, again.stdout[-3000:]
    rows = _rows(path)
    assert rows == dict.fromkeys(range(11), 1)
    assert len(delta_spark.sql(f"SELECT * FROM delta.`{path}`")) == len(rows)
    assert problems(path) == []


@pytest.mark.parametrize("kind", OURS_INSIDE_DELTAS)
def test_ours_commits_inside_deltas_merge(project, delta_spark, tmp_path, kind):
    name = f"b_{kind}"
    path = _path(project, name)
    version = DeltaTable(path).version()
    where = f"WHERE deltamerge_pause('{tmp_path}')"
    refused: list[BaseException] = []

    def delta_merge() -> None:
        try:
            delta_spark.sql(DELTA_MERGE.format(path=path, where=where))
        except DeltaError as error:
            refused.append(error)

    merging = threading.Thread(target=delta_merge)
    merging.start()
    _wait_for(lambda: (tmp_path / "delta.reached").exists(), "Delta's merge inside its transaction", 300)
    statement = OURS_WINS[kind].format(name=name, feature=FEATURE)
    done = _dbt(project, "run-operation", "stmt", "--args", f'{{sql: "{statement}"}}')
    assert done.returncode == 0, done.stdout[-3000:]
    (tmp_path / "delta.go").touch()
    merging.join(timeout=600)
    assert len(refused) == 1, f"Delta committed its merge over ours ({kind})"
    assert DELTA_SAYS[kind] in f"{refused[0]!r}", repr(refused[0])
    assert DeltaTable(path).version() == version + 1 and problems(path) == []  # ours only
    rows = _rows(path)
    assert (2 in rows) == (kind != "delete_read") and (300 in rows) == (kind == "append")
    delta_spark.sql(DELTA_MERGE.format(path=path, where=""))  # again, on top of ours
    after = {r["id"]: r["batch"] for r in delta_spark.sql(f"SELECT id, batch FROM delta.`{path}`")}
    assert {i: after[i] for i in range(3)} == dict.fromkeys(range(3), 7)
    assert _rows(path) == after and problems(path) == []
