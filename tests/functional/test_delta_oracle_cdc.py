"""Differential test against Delta Lake itself: CDC apply's net effect vs Delta's ``MERGE INTO``.

Delta has no CDC apply of its own (Databricks' ``AUTO CDC`` is not in Delta Lake), but every run of
ours must leave the table as Delta's ``MERGE INTO`` of the run's net effect would: per row key
(SCD 1: the key; SCD 2: the key and ``__START_AT``), what the contract's pure reference
(``tests/cdc_reference.py``) says changed between the table before and after the run: a deleted
row, or a row with its new values. Each seeded case runs several batches of random events (upserts
with nulls, deletes, late and duplicate events, truncates) through ``apply_changes`` on our table;
before each run its folder is copied, and Delta's ``MERGE INTO`` of the net effect runs on the
copy. Copy-on-write and deletion vectors, with and without the change feed, partitioned or not,
``ignore_null_updates`` on some seeds. Checked, all read by Delta on Spark:

- the rows of both tables, and the reference's;
- every ``operationMetrics`` value Delta records for its merge (except the merge oracle's
  ``NOT_COMPARED`` and ``NOT_COMPARED`` here, with the reason);
- the change feed of the run's version, as a multiset of rows;
- the schema and protocol.

``DELTAMERGE_ORACLE_CASES`` sets the number of cases (default 4), from ``DELTAMERGE_ORACLE_FIRST``.
"""

from __future__ import annotations

import os
import random
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dbt.adapters.deltamerge.cdc.apply import apply_changes
from dbt.adapters.deltamerge.cdc.spec import CdcSpec
from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
from dbt.adapters.deltamerge.delta.data import WriteRequest
from tests.cdc_reference import Scd1, Scd2
from tests.files import copy_folder
from tests.functional.test_delta_oracle_merge import (
    assert_same_after,
    committed,
    metric_differences,
    table_rows,
)

CASES = int(os.environ.get("DELTAMERGE_ORACLE_CASES", "4"))
FIRST = int(os.environ.get("DELTAMERGE_ORACLE_FIRST", "0"))
EVENTS = "id int, op string, ts int, v string, w int"
VALUES = ("v", "w")
SCD2_BOUNDS = ("__START_AT", "__END_AT")

NOT_COMPARED = {
    # CDC apply's own counts (CONTRACT section 6), recorded beside Delta's in the same commit.
    "numEventsReceived": "CDC apply's count",
    "numEventsApplied": "CDC apply's count",
    "numEventsIgnoredAsLate": "CDC apply's count",
    "numEventsDuplicate": "CDC apply's count",
    # Ours merges the run's folded events (a row per event key, late or unchanged ones included:
    # update-only-if-changed skips them in the table); Delta's source is the net effect only.
    "numSourceRows": "the merges' sources differ by design",
}


def events_of_run(rng: random.Random, run: int, *, keys: int, truncates: bool, scd2: bool) -> list[dict]:
    """One run's events: distinct per (key, sequence), at most one truncate per sequence."""
    by_place: dict[tuple, dict] = {}
    ops = "UUUUD" + ("T" if truncates and run and rng.random() < 0.3 else "")
    for _ in range(rng.randint(1, 3 * keys)):
        op = rng.choice(ops)
        ts = rng.randint(0, 20 * (run + 1))
        key = rng.randint(1, keys)
        v = None if rng.random() < 0.2 else f"{'ab'[rng.random() < 0.5]}{rng.randint(0, 3)}"
        w = None if rng.random() < 0.1 else rng.randint(0, 3 if scd2 else 2)
        event = {"id": key, "op": op, "ts": ts, "v": v if op == "U" else None, "w": w if op == "U" else None}
        place = ("T", ts) if op == "T" else (key, ts)
        if op == "T":
            event["id"] = 0
        by_place[place] = event
    events = list(by_place.values())
    return events + [dict(e) for e in events if rng.random() < 0.1]  # identical events: folded


def net_effect(before: list[dict], after: list[dict], key: tuple[str, ...]) -> list[dict]:
    """The rows the run deleted (``op`` 'delete', key only) and those it wrote (``op`` 'upsert')."""
    old = {tuple(r[k] for k in key): r for r in before}
    new = {tuple(r[k] for k in key): r for r in after}
    deleted = [{**dict(zip(key, k, strict=True)), "op": "delete"} for k in old if k not in new]
    written = [{**r, "op": "upsert"} for k, r in new.items() if old.get(k) != r]
    return deleted + written


def merge_net_effect(delta, table: str, source: str, key: tuple[str, ...], columns: list[str]) -> None:
    """Delta's ``MERGE INTO`` of a net effect: delete, update every value, insert."""
    on = " AND ".join(f"t.{k} <=> s.{k}" for k in key)
    values = [c for c in columns if c not in key]
    delta.sql(
        f"MERGE INTO delta.`{table}` t USING (SELECT * FROM parquet.`{source}`) s ON {on} "
        "WHEN MATCHED AND s.op = 'delete' THEN DELETE "
        f"WHEN MATCHED THEN UPDATE SET {', '.join(f'{c} = s.{c}' for c in values)} "
        f"WHEN NOT MATCHED AND s.op = 'upsert' THEN INSERT ({', '.join(columns)}) "
        f"VALUES ({', '.join(f's.{c}' for c in columns)})"
    )


def _write_source(path: str, rows: list[dict], columns: list[str]) -> None:
    types = {"id": pa.int32(), "v": pa.string(), "w": pa.int32(), "op": pa.string()}
    types.update({b: pa.int32() for b in SCD2_BOUNDS})
    schema = pa.schema([(c, types[c]) for c in [*columns, "op"]])
    pq.write_table(pa.Table.from_pylist([{c: r.get(c) for c in schema.names} for r in rows], schema), path)


def _case(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    scd2 = seed % 4 == 3
    return {
        "rng": rng,
        "scd2": scd2,
        "feed": seed % 3 == 0,
        "vectors": seed % 2 == 1,
        "partitioned": seed % 5 in (1, 2),
        "ignore_null_updates": seed % 6 in (4, 5),
        "truncates": not scd2 and seed % 7 < 3,
        "keys": rng.choice((4, 12, 40)),
        "runs": 4,
    }


def _run_case(spark, delta, root: str, seed: int) -> None:
    case = _case(seed)
    rng, scd2 = case["rng"], case["scd2"]
    config: dict[str, Any] = {
        "unique_key": "id",
        "sequence_by": "ts",
        "apply_as_deletes": "op = 'D'",
        "except_column_list": ["op", "ts"],
        "ignore_null_updates": case["ignore_null_updates"],
        "stored_as_scd_type": 2 if scd2 else 1,
    }
    if case["truncates"]:
        config["apply_as_truncates"] = "op = 'T'"
    if scd2:
        config["track_history_column_list"] = ["w"]
    spec = CdcSpec.from_config(f"cdc_oracle_{seed}", config)
    nulls_keep = case["ignore_null_updates"]
    reference: Scd1 | Scd2 = Scd2(VALUES, ("w",), nulls_keep) if scd2 else Scd1(VALUES, nulls_keep)
    key = ("id", "__START_AT") if scd2 else ("id",)
    columns = ["id", *VALUES, *(SCD2_BOUNDS if scd2 else ())]
    properties = {"delta.enableChangeDataFeed": "true"} if case["feed"] else {}
    if case["vectors"]:
        properties["delta.enableDeletionVectors"] = "true"
    ours = f"{root}/ours"
    create = WriteRequest(
        TableLocation.of(ours),
        "create_or_replace",
        partition_by=("w",) if case["partitioned"] else (),
        properties=properties,
    )
    for run in range(case["runs"]):
        events = events_of_run(rng, run, keys=case["keys"], truncates=case["truncates"], scd2=scd2)
        before_rows = [dict(r) for r in reference.rows()]
        reference.run([{**e, "seq": e["ts"]} for e in events])
        label = (seed, run, {k: v for k, v in case.items() if k != "rng"}, events)
        snapshot = load_snapshot(TableLocation.of(ours))
        theirs = f"{root}/theirs_{run}"
        if snapshot is not None:
            copy_folder(ours, theirs)
        result = apply_changes(
            spark, spark.createDataFrame([tuple(e.values()) for e in events], EVENTS), spec,
            table=snapshot, create=create, txn=(f"cdc-oracle-{seed}", run),
        )  # fmt: skip
        assert _rows_of(delta, ours, columns) == _rows_of_reference(reference.rows(), columns), label
        if snapshot is None:
            continue
        change = net_effect(before_rows, reference.rows(), key)
        source = f"{root}/net_{run}.parquet"
        _write_source(source, change, columns)
        merge_net_effect(delta, theirs, source, key, columns)
        _compare(delta, (ours, theirs), snapshot.version, result.version, feed=case["feed"], label=label)


def _rows_of(delta, path: str, columns: list[str]) -> list[tuple]:
    return table_rows(delta, path, f"SELECT {', '.join(columns)} FROM delta.`{{}}`")[1]


def _rows_of_reference(rows: list[dict], columns: list[str]) -> list[tuple]:
    return sorted((tuple(sorted((c, r[c]) for c in columns)) for r in rows), key=repr)


def _compare(delta, tables: tuple[str, str], before: int, version: int | None, *, feed: bool, label) -> None:
    """The same rows (ours and Delta's), metrics, change feed and protocol; none committed by ours
    only where Delta's merge changed nothing."""
    ours, theirs = tables
    theirs_metrics = committed(theirs, before) or {}
    if version is None:
        changed = ("numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted")
        assert all(theirs_metrics.get(k, "0") == "0" for k in changed), (label, theirs_metrics)
        return
    assert table_rows(delta, ours) == table_rows(delta, theirs), label
    ours_metrics = {k: v for k, v in (committed(ours, before) or {}).items() if k not in NOT_COMPARED}
    theirs_metrics = {k: v for k, v in theirs_metrics.items() if k not in NOT_COMPARED}
    differences = metric_differences(ours_metrics, theirs_metrics)
    assert_same_after(delta, tables, before, differences, feed=feed, case=label)


@pytest.mark.delta
@pytest.mark.parametrize("seed", range(FIRST, FIRST + CASES))
def test_cdc_apply_net_effect_same_as_delta(spark, delta_spark, tmp_path, seed):
    _run_case(spark, delta_spark, str(tmp_path), seed)


def test_net_effect_of_a_run():
    before = [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}, {"id": 3, "v": "c"}]
    after = [{"id": 1, "v": "a"}, {"id": 3, "v": "d"}, {"id": 4, "v": "e"}]
    assert net_effect(before, after, ("id",)) == [
        {"id": 2, "op": "delete"},
        {"id": 3, "v": "d", "op": "upsert"},
        {"id": 4, "v": "e", "op": "upsert"},
    ]
