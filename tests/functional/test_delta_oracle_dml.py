"""Differential test against Delta Lake itself: our SQL ``DELETE`` / ``UPDATE`` vs Delta on Spark's.

Each seeded case writes one random table with our engine (partitioned or not, several files with
distinct value ranges, nulls), with deletion vectors on for odd seeds, where a first DELETE of ours
leaves vectors on most files (so the case's statement replaces vectors, not only adds them), and the
change feed on for every third seed. The folder is copied; the same statement text runs through our
statement parser and engine on one copy and through Delta's own command on the other. Checked, as
read by Delta on Spark: the rows, every ``operationMetrics`` value Delta records (except
``NOT_COMPARED``; an UPDATE's ``numRemovedBytes`` as ``_removed_bytes`` says), the change feed
of the statement's version, the schema and protocol.

``DELTAMERGE_ORACLE_CASES`` sets the number of cases (default 4), from ``DELTAMERGE_ORACLE_FIRST``.
"""

from __future__ import annotations

import os
import random

import pytest

from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
from dbt.adapters.deltamerge.statements.parse.dml import DeleteStatement, UpdateStatement
from dbt.adapters.deltamerge.statements.parse.statement import parse_write_statement
from dbt.adapters.deltamerge.statements.parse.text import SqlText
from dbt.adapters.deltamerge.statements.run import dml
from tests.files import copy_folder
from tests.functional.helpers import log_actions
from tests.functional.test_delta_oracle_merge import ONLY_OURS, assert_same_after, committed, table_rows
from tests.functional.test_dml_differential import SCHEMA, random_assignments, random_condition, random_table

CASES = int(os.environ.get("DELTAMERGE_ORACLE_CASES", "4"))
FIRST = int(os.environ.get("DELTAMERGE_ORACLE_FIRST", "0"))

NOT_COMPARED = {
    "executionTimeMs": "a duration",
    "scanTimeMs": "a duration",
    "rewriteTimeMs": "a duration",
    # How many files the rewritten rows go to is each writer's own sizing; the rows are compared.
    "numAddedFiles": "each writer's file sizing",
    "numAddedBytes": "each writer's file sizing",
    "numAddedChangeFiles": "each writer's file sizing",
}


def _tables(spark, root: str, rng: random.Random, *, feed: bool, vectors: bool) -> tuple[str, str, int]:
    """Ours and Delta's copy of one random table, and the version the case's statement reads."""
    ours, theirs = f"{root}/ours", f"{root}/theirs"
    properties = {"delta.enableChangeDataFeed": "true"} if feed else {}
    if vectors:
        properties["delta.enableDeletionVectors"] = "true"
    frame = spark.createDataFrame(random_table(rng), SCHEMA).repartitionByRange(3, "v")
    partition_by = ("p",) if rng.random() < 0.5 else ()
    write_dataframe(
        spark,
        frame,
        WriteRequest(
            TableLocation.of(ours), "create_or_replace", partition_by=partition_by, properties=properties
        ),
    )
    if vectors:  # vectors already on most files: the case's statement replaces them
        snapshot = load_snapshot(TableLocation.of(ours))
        assert snapshot is not None
        dml.delete_rows(spark, snapshot, "k % 7 = 0")
    copy_folder(ours, theirs)
    snapshot = load_snapshot(TableLocation.of(ours))
    assert snapshot is not None
    return ours, theirs, snapshot.version


def _run_ours(spark, path: str, sql: str):
    statement = parse_write_statement(SqlText(sql))
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    if isinstance(statement, DeleteStatement):
        return dml.delete_rows(spark, snapshot, statement.condition, alias=statement.alias)
    assert isinstance(statement, UpdateStatement), sql
    return dml.update_rows(spark, snapshot, statement.assignments, statement.condition, alias=statement.alias)


def _statement(rng: random.Random, kind: str) -> str:
    condition = random_condition(rng)
    where = f" WHERE {condition}" if condition is not None else ""
    if kind == "DELETE":
        return f"DELETE FROM t{where}"
    sets = ", ".join(f"{c} = {e}" for c, e in random_assignments(rng).items())
    return f"UPDATE t SET {sets}{where}"


def _differences(ours: dict[str, str], theirs: dict[str, str]) -> dict[str, tuple]:
    names = (set(ours) - ONLY_OURS | set(theirs)) - set(NOT_COMPARED)
    return {n: (ours.get(n), theirs.get(n)) for n in sorted(names) if ours.get(n) != theirs.get(n)}


def _removed_bytes(theirs: dict[str, str], path: str, version: int, *, vectors: bool) -> dict[str, str]:
    """Delta's UPDATE's ``numRemovedBytes`` sums the actions its rewrite returns that are not ``add``s
    (``UpdateCommand``: ``actionsForNewFiles.partition(_.isInstanceOf[AddFile])``), so it counts its
    change data files too, and with deletion vectors (no removes from the rewrite) nothing else. Ours
    counts the bytes of the files removed, as its name says and Delta's DELETE does: compared with
    Delta's change files taken off, without vectors; not compared with them."""
    if vectors:
        return {k: v for k, v in theirs.items() if k != "numRemovedBytes"}
    changes = sum(a["cdc"]["size"] for a in log_actions(path, version) if "cdc" in a)
    return {**theirs, "numRemovedBytes": str(int(theirs["numRemovedBytes"]) - changes)}


def _uncounted_removals(theirs: dict[str, str], path: str, version: int, kind: str) -> dict[str, str]:
    """With deletion vectors Delta leaves two metrics at 0 that ours counts, for the files its commit
    removes whole (a remove whose path no add of the commit keeps, with or without a new vector):

    - a DELETE on the vector path (a data predicate: ``DeleteCommand`` case 3) records no
      ``numRemovedBytes``: ``processUnmodifiedData``'s metrics carry no bytes (its metadata-only
      path, case 2, records them, as ours does on both);
    - an UPDATE whose condition reads only partition columns (``UpdateCommand`` case 2) removes the
      files and does not count their vectors in ``numDeletionVectorsRemoved`` (its DELETE does).

    Where Delta reports 0, the value its own log gives is compared instead (ours must equal it)."""
    actions = log_actions(path, version)
    kept = {a["add"]["path"] for a in actions if "add" in a}
    whole = [a["remove"] for a in actions if "remove" in a and a["remove"]["path"] not in kept]
    found = dict(theirs)
    if kind == "DELETE" and theirs.get("numRemovedBytes") == "0":
        found["numRemovedBytes"] = str(sum(r.get("size", 0) for r in whole))
    if kind == "UPDATE" and theirs.get("numDeletionVectorsRemoved") == "0":
        found["numDeletionVectorsRemoved"] = str(sum(1 for r in whole if r.get("deletionVector")))
    return found


def _run_case(spark, delta, root: str, seed: int, kind: str) -> None:
    rng = random.Random(seed)
    feed, vectors = seed % 3 == 0, seed % 2 == 1
    ours, theirs, version = _tables(spark, root, rng, feed=feed, vectors=vectors)
    sql = _statement(rng, kind)
    result = _run_ours(spark, ours, sql)
    delta.sql(sql.replace(" t", f" delta.`{theirs}`", 1))
    case = (seed, sql, feed, vectors)
    assert table_rows(delta, ours) == table_rows(delta, theirs), case
    theirs_metrics = committed(theirs, version)
    if result.version is None:
        changed = "numDeletedRows" if kind == "DELETE" else "numUpdatedRows"
        assert (theirs_metrics or {}).get(changed, "0") == "0", (case, theirs_metrics)
        return
    assert theirs_metrics is not None, case
    ours_metrics = committed(ours, version) or {}
    if kind == "UPDATE":
        theirs_metrics = _removed_bytes(theirs_metrics, theirs, version + 1, vectors=vectors)
        ours_metrics = {k: v for k, v in ours_metrics.items() if k in theirs_metrics}
    if vectors:
        theirs_metrics = _uncounted_removals(theirs_metrics, theirs, version + 1, kind)
    differences = _differences(ours_metrics, theirs_metrics)
    assert_same_after(delta, (ours, theirs), version, differences, feed=feed, case=case)


@pytest.mark.delta
@pytest.mark.parametrize("seed", range(FIRST, FIRST + CASES))
def test_delete_same_as_delta(spark, delta_spark, tmp_path, seed):
    _run_case(spark, delta_spark, str(tmp_path), seed, "DELETE")


@pytest.mark.delta
@pytest.mark.parametrize("seed", range(FIRST, FIRST + CASES))
def test_update_same_as_delta(spark, delta_spark, tmp_path, seed):
    _run_case(spark, delta_spark, str(tmp_path), 10_000 + seed, "UPDATE")
