"""Differential test: our DELETE and UPDATE commands vs delta-rs's ``DeltaTable.delete`` / ``update``.

Each seeded case writes one random table (partitioned or not, several files with distinct
value ranges, some nulls) once, copies it, and runs the same condition (and assignments)
through our engine on one copy and delta-rs on the other: the rows, the deleted / updated
counts and, with the change data feed on, the change rows must be equal. Conditions cover
partition-only predicates (whole files removed without a rewrite), statistics-skippable
ranges, nulls, ``IN`` and ``OR``. Every odd seed's table of ours has deletion vectors on
(merge-on-read: rows marked deleted, only updated rows written) while delta-rs's copy rewrites
files: the rows and counts must still agree. ``DELTAMERGE_DML_CASES`` sets the number of cases
(default 6; thousands for a long run), from seed ``DELTAMERGE_DML_FIRST`` (default 0).
"""

from __future__ import annotations

import os
import random

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
from dbt.adapters.deltamerge.statements.parse.maintenance import SetPropertiesStatement
from dbt.adapters.deltamerge.statements.run import dml
from dbt.adapters.deltamerge.statements.run.maintenance import set_properties
from tests.files import copy_folder
from tests.functional.helpers import live_rows

CASES = int(os.environ.get("DELTAMERGE_DML_CASES", "6"))
# A long run can continue where an earlier one stopped: seeds FIRST .. FIRST + CASES - 1.
FIRST = int(os.environ.get("DELTAMERGE_DML_FIRST", "0"))
SCHEMA = "k bigint, v bigint, s string, p string"


def random_table(rng: random.Random) -> list[tuple]:
    rows = []
    for k in range(rng.randint(0, 60)):
        v = None if rng.random() < 0.1 else rng.randint(0, 100)
        s = rng.choice([None, "a", "b", "c"])
        rows.append((k, v, s, rng.choice(["x", "y", "z"])))
    return rows


def random_condition(rng: random.Random) -> str | None:
    c = rng.randint(0, 100)
    return rng.choice(
        [
            None,
            f"v > {c}",
            f"v <= {c} AND p = 'y'",
            "p = 'x'",
            "p IN ('x', 'z')",
            "v IS NULL",
            f"s = 'a' OR v < {c}",
            f"k IN ({rng.randint(0, 60)}, {rng.randint(0, 60)}, {rng.randint(0, 60)})",
            f"k BETWEEN {c // 2} AND {c // 2 + 10}",
            "s IS NOT NULL AND v >= 0",
            "false",
        ]
    )


def random_assignments(rng: random.Random) -> dict[str, str]:
    choices = [{"v": "v + 1"}, {"s": "'u'"}, {"v": "k * 2", "s": "'w'"}, {"v": "NULL"}]
    return rng.choice(choices)


def _tables(spark, root: str, rng: random.Random, *, feed: bool, vectors: bool = False) -> tuple[str, str]:
    ours, theirs = f"{root}/ours", f"{root}/theirs"
    partitioned = rng.random() < 0.5
    properties = {"delta.enableChangeDataFeed": "true"} if feed else {}
    frame = spark.createDataFrame(random_table(rng), SCHEMA).repartitionByRange(3, "v")
    request = WriteRequest(
        TableLocation.of(ours),
        "create_or_replace",
        partition_by=("p",) if partitioned else (),
        properties=properties,
    )
    write_dataframe(spark, frame, request)
    copy_folder(ours, theirs)
    if vectors:  # ours only: delta-rs rewrites files of a table with deletion vectors on
        assert enable_deletion_vectors(spark, ours) == 1
    return ours, theirs


def enable_deletion_vectors(spark, path: str) -> int | None:
    """``ALTER TABLE ... SET TBLPROPERTIES (delta.enableDeletionVectors = true)`` through the engine."""
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    statement = SetPropertiesStatement(("t",), (("delta.enableDeletionVectors", "true"),))
    return set_properties(spark, snapshot, statement, path).version


def sorted_rows(path: str) -> list[tuple]:
    rows = live_rows(path)
    return sorted(((r["k"], r["v"], r["s"], r["p"]) for r in rows), key=repr)


def change_rows(path: str, start: int) -> list[tuple]:
    if DeltaTable(path).version() < start:
        return []
    feed = pa.table(DeltaTable(path).load_cdf(starting_version=start).read_all()).to_pylist()
    return sorted(((r["k"], r["v"], r["s"], r["p"], r["_change_type"]) for r in feed), key=repr)


def _changed_only(changes: list[tuple]) -> list[tuple]:
    images: dict[tuple, list[tuple]] = {}
    for row in changes:
        images.setdefault(row[0], []).append(row)  # k is unique: one pre and one post image
    kept = [r for pair in images.values() if pair[0][:4] != pair[1][:4] for r in pair]
    return sorted(kept, key=repr)


@pytest.mark.stores
@pytest.mark.connect
@pytest.mark.parametrize("seed", range(FIRST, FIRST + CASES))
def test_delete_same_as_delta_rs(spark, lake_root, seed):
    rng = random.Random(seed)
    feed, vectors = seed % 3 == 0, seed % 2 == 1
    ours, theirs = _tables(spark, lake_root, rng, feed=feed, vectors=vectors)
    condition = random_condition(rng)
    snapshot = load_snapshot(TableLocation.of(ours))
    assert snapshot is not None
    result = dml.delete_rows(spark, snapshot, condition)
    expected = DeltaTable(theirs).delete(condition)
    assert sorted_rows(ours) == sorted_rows(theirs), condition
    assert result.metrics["numDeletedRows"] == expected["num_deleted_rows"], condition
    if result.version is not None and not vectors:
        assert result.metrics["numCopiedRows"] == expected["num_copied_rows"], condition
    if vectors and condition is not None:
        _check_marked(result, snapshot, "DELETE")
    if feed:
        start = 2 if vectors else 1
        assert change_rows(ours, start) == change_rows(theirs, 1), condition


@pytest.mark.stores
@pytest.mark.connect
@pytest.mark.parametrize("seed", range(FIRST, FIRST + CASES))
def test_update_same_as_delta_rs(spark, lake_root, seed):
    rng = random.Random(10_000 + seed)
    feed, vectors = seed % 3 == 0, seed % 2 == 1
    ours, theirs = _tables(spark, lake_root, rng, feed=feed, vectors=vectors)
    condition = random_condition(rng)
    assignments = random_assignments(rng)
    snapshot = load_snapshot(TableLocation.of(ours))
    assert snapshot is not None
    result = dml.update_rows(spark, snapshot, list(assignments.items()), condition)
    expected = DeltaTable(theirs).update(updates=assignments, predicate=condition)
    assert sorted_rows(ours) == sorted_rows(theirs), (condition, assignments)
    assert result.metrics["numUpdatedRows"] == expected["num_updated_rows"], (condition, assignments)
    if vectors:
        _check_marked(result, snapshot, "UPDATE")
    else:
        assert result.metrics["numCopiedRows"] == expected["num_copied_rows"], (condition, assignments)
    if feed:
        # Delta (Spark) writes both images of every updated row; delta-rs leaves out a row
        # whose values did not change (`v + 1` on a null): compare the changed ones.
        # delta-rs also writes no change files when every assigned value is a null literal; its
        # reader then reports its whole rewritten files as deleted and inserted: not compared.
        changes, expected_changes = change_rows(ours, 2 if vectors else 1), change_rows(theirs, 1)
        assert len(changes) == 2 * result.metrics["numUpdatedRows"]
        if not any(r[4] in ("delete", "insert") for r in expected_changes):
            assert _changed_only(changes) == expected_changes, (condition, assignments)


def test_a_partition_only_delete_removes_whole_files_without_rewriting(spark, tmp_path):
    path = str(tmp_path / "t")
    rows = [(k, k, "a", "x" if k < 10 else "y") for k in range(20)]
    write_dataframe(
        spark,
        spark.createDataFrame(rows, SCHEMA),
        WriteRequest(TableLocation.of(path), "create_or_replace", partition_by=("p",)),
    )
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    x_files = [f for f in snapshot.files if f.partition_values["p"] == "x"]
    result = dml.delete_rows(spark, snapshot, "p = 'x'")
    m = result.metrics
    assert (m["numDeletedRows"], m["numCopiedRows"], m["numAddedFiles"]) == (10, 0, 0)
    assert m["numRemovedFiles"] == len(x_files)
    assert DeltaTable(path).history(1)[0]["operation"] == "DELETE"
    assert sorted(r[0] for r in sorted_rows(path)) == list(range(10, 20))


def test_nothing_selected_commits_nothing(spark, tmp_path):
    path = str(tmp_path / "t")
    write_dataframe(
        spark,
        spark.createDataFrame([(1, 1, "a", "x")], SCHEMA),
        WriteRequest(TableLocation.of(path), "create_or_replace"),
    )
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    assert dml.delete_rows(spark, snapshot, "k = 99").version is None
    assert dml.update_rows(spark, snapshot, [("v", "0")], "k = 99").version is None
    assert DeltaTable(path).version() == 0


def _check_marked(result, before, operation: str) -> None:
    """A merge-on-read command copied nothing; each file it changed is either gone whole or live
    with a vector holding its old deleted rows and the new ones (delta-rs's reader agreed above)."""
    m = result.metrics
    assert m["numCopiedRows"] == 0
    if result.version is None:
        return
    after = {f.path: f for f in result.snapshot.files}
    marked = [f for f in before.files if f.path in after and after[f.path].deleted_rows != f.deleted_rows]
    removed = [f for f in before.files if f.path not in after]
    for file in marked:
        assert set(file.deleted_rows) < set(after[file.path].deleted_rows)
    # Delta's DELETE counts the files gone whole; its UPDATE every file it touched (``numTouchedFiles``).
    assert m["numRemovedFiles"] == len(removed) + (len(marked) if operation == "UPDATE" else 0)
    assert m["numDeletionVectorsUpdated"] == sum(1 for f in marked if f.deletion_vector)
    assert m["numDeletionVectorsAdded"] == len(marked)
    assert m["numDeletionVectorsRemoved"] == m["numDeletionVectorsUpdated"] + sum(
        1 for f in removed if f.deletion_vector
    )
