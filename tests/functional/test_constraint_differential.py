"""Seeded differential runs on a table with a generated column, a CHECK constraint and a NOT NULL
column, written in turn by delta-rs and this engine.

The table (``id`` NOT NULL, ``v``, ``ts``, ``d`` GENERATED ALWAYS AS ``CAST(ts AS DATE)``, CHECK
``v >= 0``) is created by delta-rs (even seeds) or this engine (odd ones). Each step appends
(delta-rs or us, ``d`` left out), updates ``v`` or ``ts``, deletes, or merges; about one step in
three carries a violating row (a negative ``v``, a null ``id``), which both writers must refuse
whole (the table stays at its version). After every step delta-rs's reader and ours give exactly
the rows a plain Python model holds, every ``d`` equals its expression, and the validator finds
the log sound. ``make test`` runs ``DELTAMERGE_CONSTRAINT_CASES`` (default 1) seed of 8 steps.
"""

from __future__ import annotations

import datetime as dt
import os
import random
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, Field, QueryBuilder, Schema, write_deltalake
from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
from dbt.adapters.deltamerge.delta.data import WriteRequest, read_files, write_dataframe
from dbt.adapters.deltamerge.merge import MergeSpec, merge_into
from dbt.adapters.deltamerge.statements.run.dml import delete_rows, update_rows
from tests.validator import problems

CASES = int(os.environ.get("DELTAMERGE_CONSTRAINT_CASES", "1"))
STEPS = 8
OPS = ("delta_rs_append", "append", "update_v", "update_ts", "delete", "merge")
UTC = dt.timezone.utc
GENERATED = {"delta.generationExpression": "CAST(ts AS DATE)"}


def _arrow(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([r["id"] for r in rows], pa.int64()),
            "v": pa.array([r["v"] for r in rows], pa.int32()),
            "ts": pa.array([r["ts"] for r in rows], pa.timestamp("us", "UTC")),
        }
    )


def _rows(rng: random.Random, start: int, count: int, bad: bool) -> list[dict[str, Any]]:
    rows = [
        {"id": i, "v": rng.randint(0, 9), "ts": dt.datetime(2026, 1, 1 + i % 28, 12, tzinfo=UTC)}
        for i in range(start, start + count)
    ]
    if bad:
        victim = rng.choice(rows)
        if rng.random() < 0.5:
            victim["v"] = -1
        else:
            victim["id"] = None
    return rows


def _create(spark, path: str, seed: int, rows: list[dict[str, Any]]) -> None:
    if seed % 2 == 0:
        schema = Schema(
            [
                Field("id", "long", nullable=False),
                Field("v", "integer"),
                Field("ts", "timestamp"),
                Field("d", "date", metadata=GENERATED),
            ]
        )
        DeltaTable.create(path, schema=schema)
        DeltaTable(path).alter.add_constraint({"non_negative": "v >= 0"})
        write_deltalake(path, _arrow(rows), mode="append", schema_mode="merge")
        return
    definition = T.StructType(
        [
            T.StructField("id", T.LongType(), False),
            T.StructField("v", T.IntegerType()),
            T.StructField("ts", T.TimestampType()),
            T.StructField("d", T.DateType(), True, GENERATED),
        ]
    )
    request = WriteRequest(
        TableLocation.of(path),
        "create_or_replace",
        properties={"delta.constraints.non_negative": "v >= 0"},
        definition=definition,
    )
    write_dataframe(spark, spark.createDataFrame(_arrow(rows)), request)


def _step(spark, rng: random.Random, path: str, model: dict[int, dict], op: str, bad: bool) -> None:
    """Apply ``op``; a ``bad`` step's write must be refused by its writer (the model unchanged)."""
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    start = max(model, default=0) + 1
    modulus, rest = rng.randint(2, 4), rng.randint(0, 1)
    hit = [i for i in model if i % modulus == rest]
    if op in ("delta_rs_append", "append", "merge"):
        rows = _rows(rng, start, rng.randint(1, 4), bad)
        if op == "merge":  # also update some existing rows' v and ts
            rows += [
                {"id": i, "v": model[i]["v"] + 1, "ts": model[i]["ts"] + dt.timedelta(days=1)}
                for i in hit[:3]
            ]
        write = _writer(spark, path, snapshot, op, rows)
        if bad:
            with pytest.raises(Exception):  # noqa: B017 - each writer words it its own way
                write()
            return
        write()
        model.update({r["id"]: dict(r) for r in rows})
    elif op == "update_v":
        change = -20 if bad and hit else rng.randint(0, 3)
        condition = f"id % {modulus} = {rest}"
        if bad and hit:
            with pytest.raises(Exception, match="CHECK constraint non_negative"):
                update_rows(spark, snapshot, [("v", f"v + {change}")], condition)
            return
        update_rows(spark, snapshot, [("v", f"v + {change}")], condition)
        for i in hit:
            model[i]["v"] += change
    elif op == "update_ts":
        days = rng.randint(1, 40)
        update_rows(spark, snapshot, [("ts", f"ts + interval {days} days")], f"id % {modulus} = {rest}")
        for i in hit:
            model[i]["ts"] += dt.timedelta(days=days)
    else:
        delete_rows(spark, snapshot, f"id % {modulus} = {rest}")
        for i in hit:
            del model[i]


def _writer(spark, path: str, snapshot, op: str, rows: list[dict[str, Any]]):
    """A call writing ``rows`` the way ``op`` does (delta-rs's append, ours, or our merge)."""

    def write() -> None:
        if op == "delta_rs_append":
            write_deltalake(path, _arrow(rows), mode="append", schema_mode="merge")
        elif op == "append":
            write_dataframe(
                spark, spark.createDataFrame(_arrow(rows)), WriteRequest(TableLocation.of(path), "append")
            )
        else:
            spec = MergeSpec.from_config("differential", {"unique_key": "id"})
            merge_into(spark, spark.createDataFrame(_arrow(rows)), snapshot, spec)

    return write


def _expected(model: dict[int, dict]) -> list[tuple]:
    return sorted((r["id"], r["v"], r["ts"], r["ts"].astimezone(UTC).date()) for r in model.values())


def _delta_rs_rows(path: str) -> list[tuple]:
    table = pa.table(
        QueryBuilder().register("t", DeltaTable(path)).execute("select id, v, ts, d from t").read_all()
    )
    return sorted((r["id"], r["v"], r["ts"], r["d"]) for r in table.to_pylist())


@pytest.mark.parametrize("seed", range(CASES))
def test_delta_rs_and_this_engine_write_a_constrained_table_in_turn(spark, tmp_path, seed):
    rng = random.Random(seed)
    path = str(tmp_path / "t")
    first = _rows(rng, 1, rng.randint(3, 12), bad=False)
    _create(spark, path, seed, first)
    model = {r["id"]: dict(r) for r in first}
    ops = [(rng.choice(OPS), rng.random() < 0.35) for _ in range(STEPS)]
    for number, (op, bad) in enumerate(ops):
        before = DeltaTable(path).version()
        _step(spark, rng, path, model, op, bad)
        where = f"seed {seed}, step {number} ({op}, bad={bad}; {ops})"
        if bad and op != "update_ts" and op != "delete":
            assert DeltaTable(path).version() == before, where
        assert _delta_rs_rows(path) == _expected(model), where
        snapshot = load_snapshot(TableLocation.of(path))
        assert snapshot is not None
        ours = read_files(spark, snapshot, list(snapshot.files)).select("id", "v", "ts", "d").collect()
        mine = sorted(
            (r.id, r.v, r.ts.replace(tzinfo=UTC) if r.ts.tzinfo is None else r.ts, r.d) for r in ours
        )
        assert [(a, b, c.astimezone(UTC), d) for a, b, c, d in mine] == _expected(model), where
    assert problems(path) == []
