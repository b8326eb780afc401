"""Merge-on-read through real dbt runs: deletion vectors written by merges, UPDATE, DELETE; REORG.

Every table is read back by delta-rs's DataFusion reader (which applies deletion vectors), by
Spark through the catalog binding (a downstream model's ``ref()``), and checked by the
independent validator (each vector read back with pyroaring, checksums, cardinalities).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file
from deltalake import DeltaTable

from dbt.adapters.deltamerge.delta import Stores, TableLocation, load_snapshot
from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
from dbt.adapters.deltamerge.delta.log import TableChange
from dbt.adapters.deltamerge.delta.txn import ConcurrentDeleteDelete, ConcurrentDeleteRead
from dbt.adapters.deltamerge.statements.run.dml import delete_rows, update_rows
from tests.functional.helpers import live_rows, log_actions, table_path
from tests.validator import problems


def _values(rows: list[tuple[int, str]]) -> str:
    return ", ".join(f"({i}, '{v}')" for i, v in rows)


def _model(rows: list[tuple[int, str]], **config: object) -> str:
    base = {
        "materialized": "incremental",
        "incremental_strategy": "delta_merge",
        "unique_key": "id",
        "when_matched": [{"action": "delete", "condition": "s.v = 'gone'"}, {"action": "update", "set": "*"}],
        "source_alias": "s",
        "target_alias": "t",
        **config,
    }
    head = "{{ config(" + ", ".join(f"{k}={v!r}" for k, v in base.items()) + ") }}\n"
    return head + f"select * from values {_values(rows)} as r(id, v)"


FIRST = [(i, f"a{i}") for i in range(200)]
# Updates of 10 keys, deletes of 5, 3 new keys.
SECOND = [(i, f"b{i}") for i in range(0, 200, 20)] + [(i, "gone") for i in range(5, 200, 40)]
SECOND += [(i, f"n{i}") for i in (500, 501, 502)]


def _expected() -> dict[int, str]:
    rows = dict(FIRST)
    for i, v in SECOND:
        if v == "gone":
            rows.pop(i, None)
        else:
            rows[i] = v
    return rows


def _rows(path: str) -> dict[int, str]:
    return {r["id"]: r["v"] for r in live_rows(path)}


def _put(project, name: str, text: str) -> None:
    write_file(text, project.project_root, "models", f"{name}.sql")


class TestMergeOnRead:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            # Four files of 50 rows: the second batch touches every one of them.
            "mor.sql": _model(FIRST, deletion_vectors=True).replace(
                "select *", "select /*+ REPARTITION(4, id) */ *"
            ),
            "downstream.sql": "{{ config(materialized='table') }} select * from {{ ref('mor') }}",
            "cow.sql": _model(
                FIRST, tblproperties={"delta.enableDeletionVectors": "true"}, deletion_vectors=False
            ),
            "later.sql": _model(FIRST),
        }

    def test_a_merge_marks_rows_in_vectors_and_every_reader_agrees(self, project):
        run_dbt(["run", "--select", "mor"])
        path = table_path(project, "mor")
        assert DeltaTable(path).metadata().configuration["delta.enableDeletionVectors"] == "true"
        assert "deletionVectors" in (DeltaTable(path).protocol().writer_features or [])
        before = {f.path for f in load_snapshot(TableLocation.of(path)).files}  # type: ignore[union-attr]
        _put(project, "mor", _model(SECOND, deletion_vectors=True))
        result = run_dbt(["run", "--select", "mor"])
        response = result.results[0].adapter_response
        assert _rows(path) == _expected()
        assert response["numTargetRowsUpdated"] == 10 and response["numTargetRowsDeleted"] == 5
        assert response["numTargetRowsInserted"] == 3 and response["numTargetRowsCopied"] == 0
        assert response["numTargetFilesRemoved"] == 0
        # Every old file stays, with a vector; the one new file holds the 13 written rows.
        actions = log_actions(path, 1)
        readded = [a["add"] for a in actions if "add" in a and a["add"].get("deletionVector")]
        assert {a["path"] for a in readded} <= before and len(before) > 1
        assert response["numTargetDeletionVectorsAdded"] == len(readded) > 1
        assert response["numTargetDeletionVectorsUpdated"] == 0
        assert sum(a["deletionVector"]["cardinality"] for a in readded) == 15
        assert len({a["deletionVector"]["pathOrInlineDv"] for a in readded}) == 1  # one vector file
        assert all('"tightBounds": false' in a["stats"] for a in readded)
        new = [a["add"] for a in actions if "add" in a and not a["add"].get("deletionVector")]
        assert sum(json.loads(a["stats"])["numRecords"] for a in new) == 13
        assert problems(path) == []
        # Spark through the catalog binding (a downstream model's ref) reads the same rows.
        run_dbt(["run", "--select", "downstream"])
        assert _rows(table_path(project, "downstream")) == _expected()
        # That binding is a view over the linked files (no copy of them); dbt sees a Delta table.
        assert not any(p.name == "live" for p in (Path(path) / "_deltamerge_catalog").iterdir())
        with project.adapter.connection_named("listing"):
            schema = project.adapter.Relation.create(schema=project.test_schema)
            listed = {r.identifier: r for r in project.adapter.list_relations_without_caching(schema)}
        assert listed["mor"].is_delta and listed["mor"].type == "table"
        assert "mor__deltamerge_files" not in listed
        # Time travel: version 0 is the first batch.
        assert {r["id"] for r in live_rows_at(path, 0)} == set(range(200))

    def test_a_second_merge_updates_the_vectors(self, project):
        path = table_path(project, "mor")
        _put(project, "mor", _model([(0, "c0"), (25, "gone")], deletion_vectors=True))
        result = run_dbt(["run", "--select", "mor"])
        response = result.results[0].adapter_response
        expected = _expected()
        expected[0] = "c0"
        expected.pop(25)
        assert _rows(path) == expected
        # Key 0's row was already rewritten into the first merge's new file (no vector yet).
        assert response["numTargetDeletionVectorsAdded"] == 2
        assert (
            response["numTargetDeletionVectorsUpdated"] == 1
            and response["numTargetDeletionVectorsRemoved"] == 1
        )
        assert problems(path) == []

    def test_reorg_purges_the_vectors_rows_unchanged(self, project):
        path = table_path(project, "mor")
        rows = _rows(path)
        marked = sum(1 for f in load_snapshot(TableLocation.of(path)).files if f.deletion_vector)  # type: ignore[union-attr]
        assert _raw_rows(path) != rows  # a reader ignoring the vectors would read deleted rows
        args = f"{{relation: {project.test_schema}.mor}}"
        _, out = run_dbt_and_capture(["run-operation", "reorg", "--args", args])
        assert "files with deletion vectors rewritten" in out
        head = log_actions(path, 3)
        info = head[0]["commitInfo"]
        assert info["operation"] == "REORG" and info["operationParameters"]["applyPurge"] == "true"
        assert all(a[k]["dataChange"] is False for a in head for k in ("add", "remove") if k in a)
        assert int(info["operationMetrics"]["numDeletionVectorsRemoved"]) == marked > 1
        assert not any(f.deletion_vector for f in load_snapshot(TableLocation.of(path)).files)  # type: ignore[union-attr]
        # A reader that cannot read vectors reads the right rows again; the binding is a table again.
        assert _raw_rows(path) == rows
        assert _tables(project) >= {"mor"} and "mor__deltamerge_files" not in _tables(project)
        assert project.run_sql(f"select count(*) from {project.test_schema}.mor", fetch="one")[0] == len(rows)
        assert problems(path) == []
        # Nothing left to purge: no version.
        run_dbt(["run-operation", "reorg", "--args", args])
        assert DeltaTable(path).version() == 3

    def test_deletion_vectors_false_rewrites_files_of_a_table_with_vectors_on(self, project):
        run_dbt(["run", "--select", "cow"])
        path = table_path(project, "cow")
        _put(
            project,
            "cow",
            _model(SECOND, tblproperties={"delta.enableDeletionVectors": "true"}, deletion_vectors=False),
        )
        response = run_dbt(["run", "--select", "cow"]).results[0].adapter_response
        assert _rows(path) == _expected()
        assert response["numTargetRowsCopied"] > 0 and response["numTargetDeletionVectorsAdded"] == 0
        assert not any(a["add"].get("deletionVector") for a in log_actions(path, 1) if "add" in a)

    def test_turning_vectors_on_for_an_existing_table_in_its_next_merge(self, project):
        run_dbt(["run", "--select", "later"])
        path = table_path(project, "later")
        assert "deletionVectors" not in (DeltaTable(path).protocol().writer_features or [])
        _put(project, "later", _model(SECOND, deletion_vectors=True))
        response = run_dbt(["run", "--select", "later"]).results[0].adapter_response
        assert _rows(path) == _expected()
        actions = log_actions(path, 1)
        protocol = next(a["protocol"] for a in actions if "protocol" in a)
        assert (
            "deletionVectors" in protocol["readerFeatures"]
            and "deletionVectors" in protocol["writerFeatures"]
        )
        assert response["numTargetDeletionVectorsAdded"] >= 1 and response["numTargetRowsCopied"] == 0
        assert problems(path) == []
        # dbt's drop of the relation (here: the model becomes a view) drops its files table too.
        assert "later__deltamerge_files" in _tables(project)
        _put(project, "later", "{{ config(materialized='view') }} select 1 as id")
        run_dbt(["run", "--select", "later"])
        assert "later" in _tables(project) and "later__deltamerge_files" not in _tables(project)


def _tables(project) -> set[str]:
    return {r[1] for r in project.run_sql(f"show tables in {project.test_schema}", fetch="all")}


def _raw_rows(path: str) -> dict[int, str]:
    """The live files' rows read as plain parquet, as a reader that ignores deletion vectors would."""
    import pyarrow.parquet as pq

    files = [u.removeprefix("file://") for u in DeltaTable(path).file_uris()]
    return {r["id"]: r["v"] for r in pq.read_table(files).to_pylist()}


def live_rows_at(path: str, version: int) -> list[dict]:
    import pyarrow as pa
    from deltalake import QueryBuilder

    query = QueryBuilder().register("t", DeltaTable(path, version=version)).execute("select * from t")
    return pa.table(query.read_all()).to_pylist()


def _dv_table(spark, path: str, rows: int = 100) -> None:
    frame = spark.range(rows).selectExpr("id", "cast(id % 7 as string) as v").repartition(2)
    properties = {"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"}
    write_dataframe(
        spark, frame, WriteRequest(TableLocation.of(path), "create_or_replace", properties=properties)
    )


@pytest.mark.connect
def test_update_and_delete_write_vectors_and_the_same_change_rows(spark, tmp_path):
    path = str(tmp_path / "t")
    _dv_table(spark, path)
    deleted = delete_rows(spark, load_snapshot(TableLocation.of(path)), "id % 10 = 3")  # type: ignore[arg-type]
    assert deleted.metrics["numDeletedRows"] == 10 and deleted.metrics["numDeletionVectorsAdded"] == 2
    assert deleted.metrics["numCopiedRows"] == 0 and deleted.metrics["numRemovedFiles"] == 0
    updated = update_rows(spark, load_snapshot(TableLocation.of(path)), [("v", "'u'")], "id < 20")  # type: ignore[arg-type]
    assert updated.metrics["numUpdatedRows"] == 18 and updated.metrics["numAddedFiles"] >= 1
    rows = {r["id"]: r["v"] for r in live_rows(path)}
    assert sorted(rows) == [i for i in range(100) if i % 10 != 3]
    assert all(rows[i] == "u" for i in rows if i < 20) and rows[50] == str(50 % 7)
    feed = pa.table(DeltaTable(path).load_cdf(starting_version=1).read_all()).to_pylist()
    kinds = sorted((r["id"], r["_change_type"]) for r in feed)
    assert [k for k in kinds if k[1] == "delete"] == [(i, "delete") for i in range(3, 100, 10)]
    assert len([k for k in kinds if k[1] == "update_postimage"]) == 18
    assert problems(path) == []


@pytest.mark.connect
def test_a_file_whose_every_row_goes_is_removed_not_marked(spark, tmp_path):
    path = str(tmp_path / "t")
    _dv_table(spark, path)
    result = delete_rows(spark, load_snapshot(TableLocation.of(path)), "id >= 0")  # type: ignore[arg-type]
    assert result.metrics["numRemovedFiles"] == 2 and result.metrics["numDeletionVectorsAdded"] == 0
    assert live_rows(path) == [] and load_snapshot(TableLocation.of(path)).files == ()  # type: ignore[union-attr]


def test_two_writers_marking_rows_of_one_file_conflict(spark, tmp_path):
    """Delta's rules: the loser read (and removes) the file the winner gave a new vector."""
    path = str(tmp_path / "t")
    _dv_table(spark, path)
    base = load_snapshot(TableLocation.of(path))
    assert base is not None
    delete_rows(spark, base, "id = 1")
    with pytest.raises((ConcurrentDeleteRead, ConcurrentDeleteDelete)):
        delete_rows(spark, base, "id = 2")
    with pytest.raises((ConcurrentDeleteRead, ConcurrentDeleteDelete)):
        update_rows(spark, base, [("v", "'x'")], "id = 3")
    assert sorted(r["id"] for r in live_rows(path)) == [i for i in range(100) if i != 1]
    assert problems(path) == []


@pytest.mark.connect
def test_one_join_merge_keeps_delta_multiple_match_rule(spark, tmp_path):
    """The one-join merge (WHEN MATCHED, no BY SOURCE, broadcast source) fails a target row two
    source rows update, naming it, and leaves the table at its version; an unconditional delete
    may match twice and deletes the row once."""
    from dbt.adapters.deltamerge.merge import MULTIPLE_MATCHES, MergeSpec, MultipleMatchesError, merge_into

    path = str(tmp_path / "t")
    _dv_table(spark, path)
    source = spark.createDataFrame([(5, "a"), (5, "b"), (200, "n")], "id long, v string")
    upsert = {"unique_key": "id", "source_alias": "s", "target_alias": "t"}
    with pytest.raises(MultipleMatchesError, match=re.escape(MULTIPLE_MATCHES)) as raised:
        merge_into(spark, source, load_snapshot(TableLocation.of(path)), MergeSpec.from_config("m", upsert))  # type: ignore[arg-type]
    assert "(by ['id']): id=5." in str(raised.value)
    assert DeltaTable(path).version() == 0
    delete = {**upsert, "when_matched": [{"action": "delete"}], "when_not_matched": [{"action": "insert"}]}
    result = merge_into(
        spark, source, load_snapshot(TableLocation.of(path)), MergeSpec.from_config("m", delete)
    )  # type: ignore[arg-type]
    m = result.metrics
    counts = (m["numTargetRowsDeleted"], m["numTargetRowsInserted"], m["numTargetDeletionVectorsAdded"])
    assert counts == (1, 1, 1)
    rows = {r["id"]: r["v"] for r in live_rows(path)}
    assert 5 not in rows and rows[200] == "n" and len(rows) == 100
    changes = pa.table(DeltaTable(path).load_cdf(starting_version=1).read_all()).to_pylist()
    assert sorted((r["id"], r["_change_type"]) for r in changes) == [(5, "delete"), (200, "insert")]
    assert problems(path) == []


@pytest.mark.parametrize("scd", [1, 2])
def test_cdc_apply_turns_vectors_on_and_marks_rows(spark, tmp_path, scd):
    """CDC apply (SCD 1 and 2) with ``deletion_vectors: true`` on an existing table: the apply turns
    them on and marks the rows it updates or deletes; ``deletion_vectors: false`` rewrites files of a
    table with vectors on; the rows are the same."""
    from dbt.adapters.deltamerge.cdc.apply import apply_changes
    from dbt.adapters.deltamerge.cdc.spec import CdcSpec

    config = {"unique_key": "id", "sequence_by": "ts", "apply_as_deletes": "op = 'D'"}
    config |= {"stored_as_scd_type": scd, "except_column_list": ["op", "ts"]}
    first = [(i, "U", 1, f"a{i}") for i in range(20)]
    second = [(3, "D", 2, None), (4, "U", 2, "b4"), (30, "U", 2, "b30")]
    results = {}
    for choice in ("on", "off", "table_on_model_off"):
        spec = CdcSpec.from_config("cdc_dv", {**config, "deletion_vectors": choice == "on" or False})
        path = str(tmp_path / choice)
        properties = {"delta.enableDeletionVectors": "true"} if choice == "table_on_model_off" else {}
        for run, events in enumerate((first, second)):
            apply_changes(
                spark,
                spark.createDataFrame(events, "id INT, op STRING, ts INT, v STRING"),
                spec,
                table=load_snapshot(TableLocation.of(path)),
                create=WriteRequest(
                    location=TableLocation.of(path), mode="create_or_replace", properties=properties
                ),
                txn=(f"cdc-dv-{choice}", run),
                change=TableChange(deletion_vectors=choice == "on" and run == 1),
            )
        results[choice] = sorted((tuple(sorted(r.items())) for r in live_rows(path)), key=repr)
        marked = [a for a in log_actions(path, 1) if "add" in a and a["add"].get("deletionVector")]
        assert bool(marked) == (choice == "on"), choice
    assert results["on"] == results["off"] == results["table_on_model_off"]
    assert problems(str(tmp_path / "on")) == []


def duckdb_rows(path: str) -> list[dict]:
    """The table's rows as DuckDB's delta extension reads them (the extension's wheel, no download)."""
    import duckdb
    from duckdb_extensions import import_extension

    import_extension("delta")
    connection = duckdb.connect()
    connection.sql("LOAD delta")
    return connection.sql(f"SELECT * FROM delta_scan('{path}')").arrow().read_all().to_pylist()


@pytest.mark.connect
def test_duckdb_reads_the_rows_our_vectors_leave(spark, tmp_path):
    """DuckDB's delta extension (delta-kernel) reads a table our merge, UPDATE and DELETE marked
    rows of, row for row as delta-rs does; a reader that ignores vectors would see more rows."""
    from dbt.adapters.deltamerge.merge import MergeSpec, merge_into

    path = str(tmp_path / "t")
    _dv_table(spark, path, rows=300)
    source = spark.createDataFrame([(i, "m") for i in range(0, 600, 7)], "id long, v string")
    spec = MergeSpec.from_config("m", {"unique_key": "id", "source_alias": "s", "target_alias": "t"})
    merge_into(spark, source, load_snapshot(TableLocation.of(path)), spec)  # type: ignore[arg-type]
    update_rows(spark, load_snapshot(TableLocation.of(path)), [("v", "'u'")], "id % 11 = 0")  # type: ignore[arg-type]
    delete_rows(spark, load_snapshot(TableLocation.of(path)), "id % 13 = 0")  # type: ignore[arg-type]
    ours = sorted((r["id"], r["v"]) for r in duckdb_rows(path))
    assert ours == sorted((r["id"], r["v"]) for r in live_rows(path))
    expected = {i: str(i % 7) for i in range(300)} | {i: "m" for i in range(0, 600, 7)}
    expected = {i: ("u" if i % 11 == 0 else v) for i, v in expected.items() if i % 13}
    assert dict(ours) == expected and len(_raw_rows(path)) > len(ours)


def test_files_of_one_size_are_read_by_their_own_vectors(spark, tmp_path):
    """Two files of the same size with different rows marked: each scan names a file by its size,
    so files sharing one go to scans of their own; every row read is the one delta-rs reads."""
    from dbt.adapters.deltamerge.delta import storage
    from dbt.adapters.deltamerge.delta.data import read_files

    path = str(tmp_path / "t")
    properties = {"delta.enableDeletionVectors": "true"}
    for mode, values in (("create_or_replace", "abc"), ("append", "cba")):
        frame = spark.createDataFrame([(v,) for v in values], "v string").coalesce(1)
        write_dataframe(spark, frame, WriteRequest(TableLocation.of(path), mode, properties=properties))
    files = load_snapshot(TableLocation.of(path)).files  # type: ignore[union-attr]
    sizes = {storage.size_and_mtime(Stores(), f"{path}/{f.path}")[0] for f in files}
    assert len(files) == 2 and len(sizes) == 1  # the premise: one size
    delete_rows(spark, load_snapshot(TableLocation.of(path)), "v = 'a'")  # type: ignore[arg-type]
    update_rows(spark, load_snapshot(TableLocation.of(path)), [("v", "'z'")], "v = 'c'")  # type: ignore[arg-type]
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None and sum(1 for f in snapshot.files if f.deleted_rows) == 2
    ours = sorted(r.v for r in read_files(spark, snapshot, snapshot.files).collect())
    assert ours == sorted(r["v"] for r in live_rows(path)) == ["b", "b", "z", "z"]
