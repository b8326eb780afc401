"""Time travel and history: VERSION / TIMESTAMP AS OF in statements and models, DESCRIBE HISTORY and
DETAIL with Delta's columns, RESTORE with Delta's semantics and metrics; refused by name past the
log or a VACUUM. Rows are checked with delta-rs, which reads every version by itself."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest
from dbt.tests.util import run_dbt, write_file
from deltalake import DeltaTable, write_deltalake

from tests.backend import ON_S3
from tests.functional.helpers import log_actions, rows, table_path

EVENTS = """
{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id',
          tblproperties={'delta.enableInCommitTimestamps': 'true'}) }}
{% set round = var('round', 0) %}
select id, concat('r{{ round }}-', cast(id as string)) as v from range({{ round }}, {{ round }} + 2) as t(id)
"""
AS_OF = "{{ config(materialized='table') }} select id, v from {{ ref('events') }} VERSION AS OF 1"


def _execute(project, sql: str):
    """dbt's ``adapter.execute`` on a connection of its own: the response and the result table."""
    with project.adapter.connection_named("_time_travel"):
        return project.adapter.execute(sql, fetch=True)


def _versions(path: str) -> dict[int, list[tuple]]:
    return {v: [(r["id"], r["v"]) for r in rows(path, version=v, order_by="id")] for v in range(3)}


class TestTimeTravel:
    @pytest.fixture(scope="class")
    def models(self):
        return {"events.sql": EVENTS}

    @pytest.fixture(scope="class")
    def built(self, project) -> dict[int, list[tuple]]:
        for round in range(3):  # v0: ids 0-1; v1: 1 updated, 2 new; v2: 2 updated, 3 new
            run_dbt(["run", "--select", "events", "--vars", json.dumps({"round": round})])
        return _versions(table_path(project, "events"))

    def test_version_and_timestamp_as_of_in_statements_and_a_model(self, project, built):
        name = f"{project.test_schema}.events"
        assert built[0] == [(0, "r0-0"), (1, "r0-1")] and len(built[2]) == 4
        for version in range(3):
            query = f"select id, v from {name} VERSION AS OF {version} order by id"
            got = project.run_sql(query, fetch="all")
            assert [tuple(r) for r in got] == built[version]
        path = table_path(project, "events")
        # In-commit timestamps name the versions, whatever the log files' times say.
        stamps = [log_actions(path, v)[0]["commitInfo"]["inCommitTimestamp"] for v in range(3)]
        for version in range(3):
            os.utime(os.path.join(path, "_delta_log", f"{version:020d}.json"), (1e9, 1e9))
        at = f"timestamp_millis({stamps[1]})"
        got = project.run_sql(f"select id, v from {name} TIMESTAMP AS OF {at} t order by t.id", fetch="all")
        assert [tuple(r) for r in got] == built[1]
        between = f"timestamp_millis({stamps[1] + (stamps[2] - stamps[1]) // 2})"
        got = project.run_sql(f"select count(*) from {name} FOR SYSTEM_TIME AS OF {between}", fetch="one")
        assert got[0] == len(built[1])
        write_file(AS_OF, project.project_root, "models", "as_of.sql")
        run_dbt(["run", "--select", "as_of"])
        assert [(r["id"], r["v"]) for r in rows(table_path(project, "as_of"), order_by="id")] == built[1]
        # dbt's relation listing does not show the old versions' entries.
        listed = project.run_sql(f"show tables in {project.test_schema}", fetch="all")
        assert "events__deltamerge_v1" in {r[1] for r in listed}
        relations = project.adapter.list_relations(project.database, project.test_schema)
        assert "events__deltamerge_v1" not in {r.identifier for r in relations}

    def test_describe_history_and_detail_with_deltas_columns(self, project, built):
        name = f"{project.test_schema}.events"
        # Through dbt's cursor: one row per version, newest first.
        _, table = _execute(project, f"DESCRIBE HISTORY {name}")
        assert list(table.column_names)[:5] == ["version", "timestamp", "userId", "userName", "operation"]
        assert "operationMetrics" in table.column_names and "readVersion" in table.column_names
        assert [r["version"] for r in table.rows] == [2, 1, 0]
        assert [r["operation"] for r in table.rows][:2] == ["MERGE", "MERGE"]
        metrics = table.rows[0]["operationMetrics"]
        metrics = json.loads(metrics) if isinstance(metrics, str) else dict(metrics)
        assert metrics["numTargetRowsUpdated"] == "1" and metrics["numTargetRowsInserted"] == "1"
        _, limited = _execute(project, f"DESCRIBE HISTORY {name} LIMIT 1")
        assert [r["version"] for r in limited.rows] == [2]
        _, detail = _execute(project, f"DESCRIBE DETAIL {name}")
        (row,) = detail.rows
        path = table_path(project, "events")
        # Delta's location: a file URI on a disk, the table's URI on an object store.
        assert row["format"] == "delta" and row["location"] == (path if ON_S3 else f"file:{path}")
        assert row["numFiles"] == len(DeltaTable(path).file_uris())
        assert row["minReaderVersion"] == DeltaTable(path).protocol().min_reader_version

    def test_restore_commits_the_old_version_and_travel_stops_at_the_log_and_vacuum(self, project, built):
        name = f"{project.test_schema}.events"
        path = table_path(project, "events")
        _, result = _execute(project, f"RESTORE TABLE {name} TO VERSION AS OF 0")
        (row,) = result.rows
        assert DeltaTable(path).version() == 3
        assert [(r["id"], r["v"]) for r in rows(path, order_by="id")] == built[0]
        head = log_actions(path, 3)[0 if "commitInfo" in log_actions(path, 3)[0] else 1]["commitInfo"]
        assert head["operation"] == "RESTORE" and head["operationParameters"]["version"] in (0, "0")
        metrics = head["operationMetrics"]
        assert int(metrics["numOfFilesAfterRestore"]) == len(DeltaTable(path, version=0).file_uris())
        assert row["num_restored_files"] == int(metrics["numRestoredFiles"]) >= 1
        assert row["num_removed_files"] == int(metrics["numRemovedFiles"]) >= 1
        adds = [a["add"] for a in log_actions(path, 3) if "add" in a]
        assert adds and all(a["dataChange"] for a in adds)
        got = project.run_sql(f"select id, v from {name} order by id", fetch="all")
        assert [tuple(r) for r in got] == built[0]
        with pytest.raises(
            Exception,
            match=r"\[DELTA_VERSION_NOT_FOUND\] Cannot time travel Delta table to "
            r"version 9\. Available versions: \[0, 3\]\.",
        ):
            project.run_sql(f"select * from {name} VERSION AS OF 9")
        with pytest.raises(Exception, match="DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION"):
            project.run_sql(f"select * from {name} TIMESTAMP AS OF '2001-01-01'")
        vacuum = {"relation": name, "retain_hours": 0, "enforce_retention": False}
        run_dbt(["run-operation", "vacuum", "--args", json.dumps(vacuum)])
        with pytest.raises(Exception, match=r"Version 2 of .*events cannot be read: \d+ of its data files"):
            project.run_sql(f"select * from {name} VERSION AS OF 2")


def test_time_travel_on_a_table_another_writer_made(project, tmp_path):
    path = str(tmp_path / "lake")
    write_deltalake(path, pa.table({"id": [1, 2]}))
    write_deltalake(path, pa.table({"id": [3]}), mode="overwrite")
    name = f"{project.test_schema}.lake"
    args = json.dumps({"path": path, "relation_name": name})
    run_dbt(["run-operation", "convert_to_delta", "--args", args])
    assert project.run_sql(f"select id from {name} VERSION AS OF 0 order by id", fetch="all") == [(1,), (2,)]
    assert project.run_sql(f"select id from {name}", fetch="all") == [(3,)]
    _, table = _execute(project, f"DESCRIBE HISTORY {name}")
    assert [r["version"] for r in table.rows] == [1, 0]
    assert not os.path.exists(os.path.join(path, "_deltamerge_catalog"))  # nothing written into it


FED = """
{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id',
          change_data_feed=true) }}
{% set round = var('round', 0) %}
select id, {{ round }} as round from range({{ round }}, {{ round }} + 2) as t(id)
"""


class TestRestoreAndTheChangeFeed:
    @pytest.fixture(scope="class")
    def models(self):
        return {"fed.sql": FED}

    def test_the_feed_of_a_restore_is_its_files_rows_as_delta_writes_it(self, project, spark):
        """Delta's RESTORE writes no change files: its removed files' rows read as deletes, its
        re-added files' rows as inserts."""
        from dbt.adapters.deltamerge.delta import TableLocation
        from dbt.adapters.deltamerge.delta.commands import read_changes

        for round in range(2):  # v0: ids 0, 1 (round 0); v1: id 1 updated, id 2 new (round 1)
            run_dbt(["run", "--select", "fed", "--vars", json.dumps({"round": round})])
        path = table_path(project, "fed")
        _execute(project, f"RESTORE TABLE {project.test_schema}.fed TO VERSION AS OF 0")
        assert DeltaTable(path).version() == 2
        assert not [a for a in log_actions(path, 2) if "cdc" in a]
        changes = read_changes(spark, TableLocation.of(path), 2).collect()
        got = sorted((r["_change_type"], r["id"], r["round"], r["_commit_version"]) for r in changes)
        before, after = _file_rows(path, 1), _file_rows(path, 0)  # by file: whole files move
        expected = [("delete", *r, 2) for f in set(before) - set(after) for r in before[f]]
        expected += [("insert", *r, 2) for f in set(after) - set(before) for r in after[f]]
        assert got == sorted(expected) and {c[0] for c in got} == {"delete", "insert"}


def _file_rows(path: str, version: int) -> dict[str, list[tuple]]:
    """Each data file of a version (delta-rs's list) with its rows (id, round), read by pyarrow."""
    import pyarrow.parquet as pq

    return {
        uri: [(r["id"], r["round"]) for r in pq.read_table(uri.removeprefix("file://")).to_pylist()]
        for uri in DeltaTable(path, version=version).file_uris()
    }


def test_restore_refuses_a_table_with_a_writer_feature_it_does_not_write(project, tmp_path):
    """A table another writer made, with a writer feature unknown here: RESTORE names it, writes nothing."""
    path = str(tmp_path / "featured")
    write_deltalake(path, pa.table({"id": [1]}))
    write_deltalake(path, pa.table({"id": [2]}), mode="append")
    log = os.path.join(path, "_delta_log", f"{1:020d}.json")
    with open(log) as f:
        actions = [json.loads(line) for line in f if line.strip()]
    protocol = {"minReaderVersion": 3, "minWriterVersion": 7}
    protocol.update(readerFeatures=[], writerFeatures=["fooBar"])
    with open(log, "w") as f:
        f.write("".join(json.dumps(a) + "\n" for a in [*actions, {"protocol": protocol}]))
    name = f"{project.test_schema}.featured"
    args = json.dumps({"path": path, "relation_name": name})
    run_dbt(["run-operation", "convert_to_delta", "--args", args])
    with pytest.raises(Exception, match="writer feature 'fooBar'"):
        _execute(project, f"RESTORE TABLE {name} TO VERSION AS OF 0")
    assert DeltaTable(path).version() == 1
