"""Delta Lake on Spark and our UniForm tables: each reads and writes the other's, IcebergCompatV2 kept.

- A UniForm table we write (``table_format: iceberg``'s properties, partitioned) is read by Delta on
  Spark at every version with delta-rs's rows; Delta then appends to it and merges into it (its
  own IcebergCompatV2 checks run on its commits); our next commit converts Delta's versions too, so
  the Iceberg side (pyiceberg, DuckDB) ends at the latest version with Delta's rows.
- A table Delta on Spark made with IcebergCompatV2 and ``enabledFormats=iceberg`` (Delta 4.4 writes
  no Iceberg metadata for a path table): we merge into it, keeping V2's rules, and write its whole
  Iceberg side.
"""

from __future__ import annotations

import uuid

import duckdb
import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder
from duckdb_extensions import import_extension
from pyiceberg.table import StaticTable

from dbt.adapters.deltamerge.delta import Stores, TableLocation
from dbt.adapters.deltamerge.delta.uniform import iceberg_state
from dbt.adapters.deltamerge.statements.parse.text import SqlText
from dbt.adapters.deltamerge.statements.run.statement import run_on_delta
from tests.validator import problems

UNIFORM = (
    "'delta.enableIcebergCompatV2' = 'true', 'delta.universalFormat.enabledFormats' = 'iceberg', "
    "'delta.columnMapping.mode' = 'name'"
)


def _run(spark, sql: str) -> int | None:
    ran = run_on_delta(spark, SqlText(sql), Stores())
    assert ran is not None, sql
    return ran.result.version


def _delta_rs(path: str, version: int | None = None) -> list[tuple]:
    table = DeltaTable(path, version=version)
    got = QueryBuilder().register("t", table).execute("select id, v, p from t").read_all()
    return sorted(tuple(r.values()) for r in pa.table(got).to_pylist())


def _iceberg(path: str) -> tuple[int, list[tuple], list[tuple]]:
    """The Delta version the Iceberg side shows, and its rows by pyiceberg and by DuckDB."""
    state = iceberg_state(TableLocation.of(path))
    assert state is not None
    scanned = StaticTable.from_metadata(state.location).scan().to_arrow().select(["id", "v", "p"])
    import_extension("avro")
    import_extension("iceberg")
    con = duckdb.connect()
    con.execute("LOAD avro; LOAD iceberg;")
    by_duckdb = con.execute(f"select id, v, p from iceberg_scan('{state.location}')").fetchall()
    return state.delta_version, sorted(tuple(r.values()) for r in scanned.to_pylist()), sorted(by_duckdb)


@pytest.fixture
def schema(spark) -> str:
    name = f"uniform_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {name}")
    return name


@pytest.mark.delta
def test_delta_reads_and_writes_our_uniform_table_and_we_convert_its_commits(
    spark, delta_spark, schema, tmp_path
):
    path, table = str(tmp_path / "t"), f"{schema}.t"
    _run(
        spark,
        f"CREATE TABLE {table} (id BIGINT, v STRING, p STRING) USING delta PARTITIONED BY (p) "
        f"LOCATION '{path}' TBLPROPERTIES ({UNIFORM})",
    )
    _run(spark, f"INSERT INTO {table} VALUES (1, 'a', 'x'), (2, 'b', 'y'), (3, 'c', 'x')")
    _run(spark, f"UPDATE {table} SET v = 'bb' WHERE id = 2")
    _run(spark, f"DELETE FROM {table} WHERE id = 3")
    at = f"delta.`{path}`"
    for version in range(4):
        _, read = delta_spark.query(f"SELECT id, v, p FROM {at} VERSION AS OF {version}")
        assert sorted(tuple(r.values()) for r in read) == _delta_rs(path, version), version
    shown, by_pyiceberg, by_duckdb = _iceberg(path)
    assert shown == 3 and by_pyiceberg == by_duckdb == _delta_rs(path)

    # Delta writes on (its IcebergCompatV2 checks run on its own commits); it writes no Iceberg side.
    delta_spark.sql(f"INSERT INTO {at} VALUES (4, 'd', 'y')")
    delta_spark.sql(
        f"MERGE INTO {at} t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = 'z'"
    )
    assert _iceberg(path)[0] == 3
    _run(
        spark, f"INSERT INTO {table} VALUES (5, 'e', 'x')"
    )  # ours converts Delta's two versions, then its own
    shown, by_pyiceberg, by_duckdb = _iceberg(path)
    assert shown == DeltaTable(path).version() == 6
    assert by_pyiceberg == by_duckdb == _delta_rs(path)
    assert {r[0]: r[1] for r in by_pyiceberg} == {1: "z", 2: "bb", 4: "d", 5: "e"}
    assert problems(path) == []


@pytest.mark.delta
def test_we_write_a_uniform_table_delta_made(spark, delta_spark, schema, tmp_path):
    path = str(tmp_path / "theirs")
    at = f"delta.`{path}`"
    delta_spark.sql(
        f"CREATE TABLE {at} (id BIGINT, v STRING, p STRING) USING delta PARTITIONED BY (p) "
        f"TBLPROPERTIES ({UNIFORM})"
    )
    delta_spark.sql(f"INSERT INTO {at} VALUES (1, 'a', 'x'), (2, 'b', 'y')")
    assert iceberg_state(TableLocation.of(path)) is None  # Delta 4.4 writes none for a path table
    _run(spark, f"CREATE TABLE {schema}.theirs USING delta LOCATION '{path}'")  # bound, not written
    _run(
        spark,
        f"MERGE INTO {schema}.theirs t "
        "USING (SELECT 2 AS id, 'B' AS v, 'y' AS p UNION ALL SELECT 3, 'c', 'x') s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    )
    shown, by_pyiceberg, by_duckdb = _iceberg(path)
    assert shown == DeltaTable(path).version()
    assert by_pyiceberg == by_duckdb == _delta_rs(path) == [(1, "a", "x"), (2, "B", "y"), (3, "c", "x")]
    _, read = delta_spark.query(f"SELECT id, v, p FROM {at}")
    assert sorted(tuple(r.values()) for r in read) == _delta_rs(path)
