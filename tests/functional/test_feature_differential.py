"""Seeded differential runs on column-mapped tables that delta-rs and this engine write in turn.

delta-rs creates the table with column mapping (mode `name` or `id`) and appends to it; this
engine deletes, updates, appends and adds columns (fresh ids and physical names). After every
step, delta-rs's DataFusion reader and this engine's read give exactly the rows a plain Python
model of the table holds, and the validator finds every feature's writer rules kept (row ids
too: half of the tables are created with row tracking by this engine instead). ``make test``
runs ``DELTAMERGE_FEATURE_CASES`` (default 1) seed of 6 steps; raise it for long runs (40 pass).
"""

from __future__ import annotations

import datetime as dt
import os
import random
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder, write_deltalake

from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
from dbt.adapters.deltamerge.delta.data import WriteRequest, read_files, write_dataframe
from dbt.adapters.deltamerge.statements.parse.ddl import ColumnDefinition
from dbt.adapters.deltamerge.statements.run.ddl import add_columns
from dbt.adapters.deltamerge.statements.run.dml import delete_rows, update_rows
from tests.validator import problems

CASES = int(os.environ.get("DELTAMERGE_FEATURE_CASES", "1"))
STEPS = 6
OPS = ("delta_rs_append", "delete", "update", "append", "add_column")


class Model:
    """The table's rows as plain Python: columns in order, rows by id."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.columns = list(rows[0])
        self.rows = {r["id"]: dict(r) for r in rows}

    def sorted(self) -> list[tuple]:
        return sorted(tuple(r.get(c) for c in self.columns) for r in self.rows.values())


def _arrow(model: Model, rows: list[dict[str, Any]]) -> pa.Table:
    types = {"id": pa.int64(), "full name": pa.string(), "day": pa.date32()}
    return pa.table({c: pa.array([r.get(c) for r in rows], types.get(c, pa.int32())) for c in model.columns})


def _new_rows(rng: random.Random, model: Model, count: int) -> list[dict[str, Any]]:
    start = max(model.rows, default=0) + 1
    rows = []
    for i in range(start, start + count):
        row: dict[str, Any] = {c: None for c in model.columns}
        row.update(
            {
                "id": i,
                "full name": rng.choice(["ann lee", "bo", None, "cy d"]),
                "day": dt.date(2026, 1, 1 + i % 28),
            }
        )
        for extra in model.columns[3:]:
            row[extra] = rng.choice([None, rng.randint(-5, 5)])
        rows.append(row)
    return rows


def _step(spark, rng: random.Random, path: str, model: Model, op: str) -> None:
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    modulus, rest = rng.randint(2, 4), rng.randint(0, 1)
    hit = [i for i in model.rows if i % modulus == rest]
    if op == "delta_rs_append":
        rows = _new_rows(rng, model, rng.randint(1, 5))
        write_deltalake(path, _arrow(model, rows), mode="append")
        model.rows.update({r["id"]: r for r in rows})
    elif op == "append":
        rows = _new_rows(rng, model, rng.randint(1, 5))
        frame = spark.createDataFrame(_arrow(model, rows))  # arrow types kept (pandas makes ints float)
        write_dataframe(spark, frame, WriteRequest(TableLocation.of(path), "append"))
        model.rows.update({r["id"]: r for r in rows})
    elif op == "delete":
        delete_rows(spark, snapshot, f"id % {modulus} = {rest}")
        for i in hit:
            del model.rows[i]
    elif op == "update":
        update_rows(spark, snapshot, [("full name", "upper(`full name`)")], f"id % {modulus} = {rest}")
        for i in hit:
            name = model.rows[i]["full name"]
            model.rows[i]["full name"] = name.upper() if name is not None else None
    else:
        name = f"extra {len(model.columns)}"
        add_columns(spark, snapshot, [ColumnDefinition(name, "INT")], "t")
        model.columns.append(name)
        for row in model.rows.values():
            row[name] = None


def _delta_rs_rows(path: str, model: Model) -> list[tuple]:
    table = pa.table(QueryBuilder().register("t", DeltaTable(path)).execute("select * from t").read_all())
    return sorted(tuple(r[c] for c in model.columns) for r in table.to_pylist())


@pytest.mark.parametrize("seed", range(CASES))
def test_delta_rs_and_this_engine_write_a_column_mapped_table_in_turn(spark, tmp_path, seed):
    rng = random.Random(seed)
    path = str(tmp_path / "t")
    model = Model([{"id": 0, "full name": "zed", "day": dt.date(2026, 1, 1)}])
    model.rows.update({r["id"]: r for r in _new_rows(rng, model, rng.randint(2, 20))})
    mode = rng.choice(["name", "id"])
    if seed % 2:  # this engine creates it: with row tracking and in-commit timestamps too
        properties = {"delta.columnMapping.mode": mode, "delta.enableRowTracking": "true"}
        properties["delta.enableInCommitTimestamps"] = "true"
        frame = spark.createDataFrame(_arrow(model, list(model.rows.values())))
        write_dataframe(
            spark, frame, WriteRequest(TableLocation.of(path), "create_or_replace", properties=properties)
        )
    else:
        rows = list(model.rows.values())
        write_deltalake(path, _arrow(model, rows), configuration={"delta.columnMapping.mode": mode})
    ops = [rng.choice(OPS) for _ in range(STEPS)]
    for number, op in enumerate(ops):
        if op == "delta_rs_append" and seed % 2:
            op = "append"  # delta-rs does not write row tracking
        _step(spark, rng, path, model, op)
        where = f"seed {seed}, step {number} ({op}; {ops})"
        assert _delta_rs_rows(path, model) == model.sorted(), where
        snapshot = load_snapshot(TableLocation.of(path))
        assert snapshot is not None
        ours = read_files(spark, snapshot, list(snapshot.files)).collect()
        assert sorted(tuple(r) for r in ours) == model.sorted(), where
    assert problems(path) == []
    columns = [f for f in DeltaTable(path).schema().fields]
    ids = [int(f.metadata["delta.columnMapping.id"]) for f in columns]
    top = int(DeltaTable(path).metadata().configuration["delta.columnMapping.maxColumnId"])
    assert len(set(ids)) == len(ids) and max(ids) <= top
