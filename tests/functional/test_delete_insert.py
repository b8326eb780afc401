"""dbt's ``delete+insert`` strategy on Delta: the rows sharing a new row's key replaced in one commit.

Differential: each seeded case writes a random table (partitioned or not, the change data feed on
or off, some rows already deleted by deletion vectors), then replaces by a random key (one column
or two, nulls and duplicates among the new rows) narrowed by a random ``incremental_predicates``
through the engine, and runs dbt-core's own ``delete+insert`` SQL (``DELETE ... WHERE`` the key is
among the new rows' ``AND`` the predicates, then ``INSERT``) in DuckDB on the same rows: the live
rows (read by delta-rs) must be equal, and with the feed on, its change rows are exactly the
deleted rows and the new ones. ``DELTAMERGE_DELETE_INSERT_CASES`` sets the number of cases
(default 6; thousands for a long run).

Through dbt: a model of that strategy built, then run incrementally (one Delta version, WRITE with
the replaced keys as its predicate, Delta's metrics), a model without ``unique_key`` appending (as
in dbt), dbt-bigquery's date ``partition_by`` partitioning by its column, and BigQuery's forms
Delta has no equivalent for refused by name before anything is written.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from dbt.tests.util import run_dbt
from deltalake import DeltaTable

from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
from dbt.adapters.deltamerge.statements.run import dml
from tests.functional.helpers import live_rows, table_path
from tests.functional.test_dml_differential import enable_deletion_vectors

CASES = int(os.environ.get("DELTAMERGE_DELETE_INSERT_CASES", "6"))
FIRST = int(os.environ.get("DELTAMERGE_DELETE_INSERT_FIRST", "0"))
SCHEMA = "k1 bigint, k2 string, v bigint, p string"
COLUMNS = ("k1", "k2", "v", "p")


def _row(rng: random.Random) -> tuple:
    return (
        None if rng.random() < 0.08 else rng.randint(0, 12),
        rng.choice([None, "a", "b"]),
        None if rng.random() < 0.1 else rng.randint(0, 100),
        rng.choice(["x", "y"]),
    )


def _predicates(rng: random.Random) -> list[str]:
    c = rng.randint(0, 100)
    return rng.choice(
        [[], [], [f"v > {c}"], ["p = 'x'"], ["DBT_INTERNAL_DEST.p = 'y'", f"v <= {c}"], ["v IS NULL"]]
    )


def _sorted(rows: list[tuple]) -> list[tuple]:
    return sorted(rows, key=repr)


def _expected(old: list[tuple], new: list[tuple], keys: tuple[str, ...], predicates: list[str]):
    """dbt-core's delete+insert (``default__get_delete_insert_merge_sql``) run by DuckDB."""
    db = duckdb.connect()
    db.execute(f"CREATE TABLE t ({SCHEMA.replace('string', 'varchar')})")
    db.execute(f"CREATE TABLE s ({SCHEMA.replace('string', 'varchar')})")
    for name, rows in (("t", old), ("s", new)):
        if rows:
            db.executemany(f"INSERT INTO {name} VALUES (?, ?, ?, ?)", rows)
    on = " AND ".join(f"s.{k} = t.{k}" for k in keys)
    narrowed = "".join(f" AND ({p.replace('DBT_INTERNAL_DEST.', 't.')})" for p in predicates)
    where = f"EXISTS (SELECT 1 FROM s WHERE {on}){narrowed}"
    deleted = db.execute(f"SELECT * FROM t WHERE {where}").fetchall()
    db.execute(f"DELETE FROM t WHERE {where}")
    db.execute("INSERT INTO t SELECT * FROM s")
    return db.execute("SELECT * FROM t").fetchall(), deleted


@pytest.mark.connect
@pytest.mark.parametrize("seed", range(FIRST, FIRST + CASES))
def test_delete_insert_same_as_dbt_sql_in_duckdb(spark, lake_root, seed):
    rng = random.Random(seed)
    feed, vectors, partitioned = seed % 3 == 0, seed % 2 == 1, rng.random() < 0.5
    old = [_row(rng) for _ in range(rng.randint(0, 40))]
    path = f"{lake_root}/t"
    properties = {"delta.enableChangeDataFeed": "true"} if feed else {}
    frame = spark.createDataFrame(old, SCHEMA).repartition(3)
    write_dataframe(
        spark,
        frame,
        WriteRequest(
            TableLocation.of(path),
            "create_or_replace",
            partition_by=("p",) if partitioned else (),
            properties=properties,
        ),
    )
    if vectors:  # some rows already deleted by deletion vectors: only live rows count
        enable_deletion_vectors(spark, path)
        snapshot = load_snapshot(TableLocation.of(path))
        assert snapshot is not None
        dml.delete_rows(spark, snapshot, "v < 20")
    live = [tuple(r[c] for c in COLUMNS) for r in live_rows(path)]
    before = DeltaTable(path).version()
    new = [_row(rng) for _ in range(rng.randint(0, 15))]
    new += rng.sample(new, min(len(new), 2))  # duplicate new rows: all inserted
    keys = rng.choice([("k1",), ("k1", "k2")])
    predicates = _predicates(rng)
    request = WriteRequest(
        TableLocation.of(path), "replace_keys", replace_keys=keys, replace_predicates=tuple(predicates)
    )
    result = write_dataframe(spark, spark.createDataFrame(new, SCHEMA), request)
    expected, deleted = _expected(live, new, keys, predicates)
    case = (seed, keys, predicates)
    assert _sorted([tuple(r[c] for c in COLUMNS) for r in live_rows(path)]) == _sorted(expected), case
    assert result.version == before + 1
    if feed:
        feed_rows = pa.table(DeltaTable(path).load_cdf(starting_version=before + 1).read_all()).to_pylist()
        changes = [(*(r[c] for c in COLUMNS), r["_change_type"]) for r in feed_rows]
        want = [(*r, "delete") for r in deleted] + [(*r, "insert") for r in new]
        assert _sorted(changes) == _sorted(want), case


MODEL = """
{{ config(materialized='incremental', incremental_strategy='delete+insert', unique_key=['day', 'shop'],
          partition_by={'field': 'day', 'data_type': 'date'},
          incremental_predicates=["DBT_INTERNAL_DEST.day >= date'2024-01-02'"]) }}
select cast(day as date) as day, shop, amount from {{ ref('sales') }}
where batch = {{ 2 if is_incremental() else 1 }}
"""
APPEND = """
{{ config(materialized='incremental', incremental_strategy='delete+insert') }}
select id from {{ ref('sales') }} where batch = {{ 2 if is_incremental() else 1 }}
"""
SALES = """id,day,shop,amount,batch
1,2024-01-01,north,10,1
2,2024-01-02,north,20,1
3,2024-01-02,south,30,1
4,2024-01-01,north,11,2
5,2024-01-02,north,21,2
6,2024-01-02,north,22,2
7,2024-01-03,south,40,2
""".lstrip()


class TestDeleteInsertModels:
    @pytest.fixture(scope="class")
    def seeds(self):
        return {"sales.csv": SALES}

    @pytest.fixture(scope="class")
    def models(self):
        return {"daily_sales.sql": MODEL, "appended.sql": APPEND}

    def test_replaced_by_key_in_one_commit(self, project):
        run_dbt(["seed"])
        run_dbt(["run"])
        path = table_path(project, "daily_sales")
        assert DeltaTable(path).metadata().partition_columns == ["day"]
        results = run_dbt(["run"])
        assert all(r.status == "success" for r in results)
        rows = sorted((str(r["day"]), r["shop"], r["amount"]) for r in live_rows(path))
        # 2024-01-01/north is a new row's key but outside the predicate: kept, and the new row added.
        assert rows == [
            ("2024-01-01", "north", 10),
            ("2024-01-01", "north", 11),
            ("2024-01-02", "north", 21),
            ("2024-01-02", "north", 22),
            ("2024-01-02", "south", 30),
            ("2024-01-03", "south", 40),
        ]
        table = DeltaTable(path)
        assert table.version() == 1
        commit = table.history(1)[0]
        assert commit["operation"] == "WRITE"
        assert commit["operationParameters"]["mode"] == "Overwrite"
        predicate = json.loads(commit["operationParameters"]["predicate"])
        assert predicate == [
            "((`day`, `shop`) IN (the new rows' keys)) AND (DBT_INTERNAL_DEST.day >= date'2024-01-02')"
        ]
        metrics = commit["operationMetrics"]
        assert int(metrics["numRemovedFiles"]) == 1  # the 2024-01-02 partition's file only
        assert int(metrics["numOutputRows"]) == 5  # 4 new rows, 1 kept from the rewritten file
        appended = sorted(r["id"] for r in live_rows(table_path(project, "appended")))
        assert appended == [1, 2, 3, 4, 5, 6, 7]

    def test_bigquery_partition_forms_delta_cannot_hold_are_refused(self, project):
        for form in (
            "{'field': 'day', 'data_type': 'timestamp', 'granularity': 'hour'}",
            "{'field': 'id', 'data_type': 'int64', 'range': {'start': 0, 'end': 10, 'interval': 1}}",
        ):
            config = f"{{{{ config(materialized='table', partition_by={form}) }}}}"
            model = f"{config} select 1 as id, current_date() as day"
            Path(project.project_root, "models", "bq_form.sql").write_text(model)
            results = run_dbt(["run", "--select", "bq_form"], expect_pass=False)
            assert "partition_by" in results[0].message, results[0].message
            assert "which Delta cannot" in results[0].message or "must be a column name" in results[0].message
            assert not os.path.exists(table_path(project, "bq_form"))
        Path(project.project_root, "models", "bq_form.sql").unlink()
