"""UniForm switched on for an existing table: ``REORG TABLE ... APPLY (UPGRADE UNIFORM(...))``, a
model gaining ``table_format: iceberg``, and ``ALTER TABLE ... SET TBLPROPERTIES``.

The tables start as plain Delta tables (no column mapping, deletion vectors hiding deleted rows,
partitioned), ours and Delta on Spark's. After the upgrade every Iceberg reader (pyiceberg,
DuckDB's ``iceberg_scan``, which resolves columns by field id only) returns exactly delta-rs's
rows; Delta on Spark reads the table and appends to it (its IcebergCompatV2 checks run on its
commit); the properties are the ones Delta's own ``REORG ... UPGRADE UNIFORM`` leaves.
"""

from __future__ import annotations

import json
import os
import random
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture
from deltalake import DeltaTable, QueryBuilder

from dbt.adapters.deltamerge.common.errors import EngineError
from dbt.adapters.deltamerge.delta import TableLocation
from dbt.adapters.deltamerge.delta.uniform import iceberg_state
from tests.functional.helpers import table_path
from tests.functional.test_delta_uniform import _delta_rs, _iceberg, _run
from tests.functional.test_uniform_iceberg import assert_readers_agree, duckdb_rows, pyiceberg_rows
from tests.validator import problems

UPGRADE = "APPLY (UPGRADE UNIFORM(ICEBERG_COMPAT_VERSION=2))"
UNIFORM_KEYS = {
    "delta.enableIcebergCompatV2": "true",
    "delta.universalFormat.enabledFormats": "iceberg",
    "delta.columnMapping.mode": "name",
    "delta.enableDeletionVectors": "false",
}


@pytest.fixture
def schema(spark) -> str:
    name = f"upgrade_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {name}")
    return name


def _log(path: str, version: int) -> list[dict]:
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json")) as commit:
        return [json.loads(line) for line in commit if line.strip()]


def _plain_table_with_vectors(spark, table: str, path: str) -> None:
    """A partitioned table without column mapping whose DELETE left deletion vectors."""
    _run(
        spark,
        f"CREATE TABLE {table} (id BIGINT, v STRING, p STRING) USING delta PARTITIONED BY (p) "
        f"LOCATION '{path}' TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
    )
    _run(spark, f"INSERT INTO {table} SELECT id, concat('v', id), IF(id % 2 = 0, 'x', 'y') FROM range(40)")
    _run(spark, f"DELETE FROM {table} WHERE id % 5 = 0")


@pytest.mark.delta
def test_reorg_upgrade_uniform_rewrites_our_table_for_every_reader(spark, delta_spark, schema, tmp_path):
    path, table = str(tmp_path / "t"), f"{schema}.t"
    _plain_table_with_vectors(spark, table, path)
    assert any("deletionVector" in a.get("add", {}) for a in _log(path, 2))
    expected = _delta_rs(path)
    assert len(expected) == 32

    # Setting the property alone would leave files Iceberg readers misread: refused, naming the upgrade.
    with pytest.raises(EngineError, match=r"live files were not written as IcebergCompatV2 asks") as refused:
        _run(
            spark,
            f"ALTER TABLE {table} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
            "'delta.enableIcebergCompatV2' = 'true', 'delta.universalFormat.enabledFormats' = 'iceberg')",
        )
    assert f"REORG TABLE {table} {UPGRADE}" in str(refused.value)
    assert DeltaTable(path).version() == 2

    version = _run(spark, f"REORG TABLE {table} {UPGRADE}")
    assert version == 3 and _delta_rs(path) == expected
    actions = _log(path, 3)
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["operation"] == "REORG" and info["operationParameters"]["applyPurge"] == "false"
    adds = [a["add"] for a in actions if "add" in a]
    removes = [a["remove"] for a in actions if "remove" in a]
    assert adds and removes and not any(a["dataChange"] for a in adds + removes)
    assert all(a["tags"]["ICEBERG_COMPAT_VERSION"] == "2" and "deletionVector" not in a for a in adds)
    configuration = DeltaTable(path).metadata().configuration
    assert {k: configuration.get(k) for k in UNIFORM_KEYS} == UNIFORM_KEYS
    protocol = DeltaTable(path).protocol()
    assert {"icebergCompatV2", "columnMapping"} <= set(protocol.writer_features or ())
    for uri in DeltaTable(path).file_uris():  # partition values inside the files, field ids on columns
        fields = pq.read_schema(uri.removeprefix("file://"))
        assert "p" in fields.names and all(f.metadata and b"PARQUET:field_id" in f.metadata for f in fields)

    shown, by_pyiceberg, by_duckdb = _iceberg(path)
    assert shown == 3 and by_pyiceberg == by_duckdb == expected

    # Delta on Spark reads it and appends (its IcebergCompatV2 checks on its own commit); ours converts.
    _, read = delta_spark.query(f"SELECT id, v, p FROM delta.`{path}`")
    assert sorted(tuple(r.values()) for r in read) == expected
    delta_spark.sql(f"INSERT INTO delta.`{path}` VALUES (100, 'd', 'x')")
    _run(spark, f"UPDATE {table} SET v = 'u' WHERE id = 1")
    shown, by_pyiceberg, by_duckdb = _iceberg(path)
    assert shown == DeltaTable(path).version() == 5
    assert by_pyiceberg == by_duckdb == _delta_rs(path) and len(by_duckdb) == 33

    assert _run(spark, f"REORG TABLE {table} {UPGRADE}") is None  # nothing left to rewrite
    assert problems(path) == []


@pytest.mark.delta
def test_a_table_delta_made_upgraded_as_delta_upgrades_it(spark, delta_spark, schema, tmp_path):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    for path in (ours, theirs):
        delta_spark.sql(
            f"CREATE TABLE delta.`{path}` (id BIGINT, v STRING, p STRING) USING delta PARTITIONED BY (p) "
            "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
        )
        delta_spark.sql(f"INSERT INTO delta.`{path}` SELECT id, 'a', IF(id < 5, 'x', 'y') FROM range(12)")
        delta_spark.sql(f"DELETE FROM delta.`{path}` WHERE id IN (2, 7)")
    _run(spark, f"CREATE TABLE {schema}.ours USING delta LOCATION '{ours}'")
    _run(spark, f"REORG TABLE {schema}.ours {UPGRADE}")
    delta_spark.sql(f"REORG TABLE delta.`{theirs}` {UPGRADE}")

    mine, delta = DeltaTable(ours).metadata().configuration, DeltaTable(theirs).metadata().configuration
    assert {k: mine.get(k) for k in UNIFORM_KEYS} == {k: delta.get(k) for k in UNIFORM_KEYS} == UNIFORM_KEYS
    assert set(DeltaTable(theirs).protocol().writer_features or ()) <= set(
        DeltaTable(ours).protocol().writer_features or ()
    )
    assert _delta_rs(ours) == _delta_rs(theirs) and len(_delta_rs(ours)) == 10
    shown, by_pyiceberg, by_duckdb = _iceberg(ours)
    assert shown == DeltaTable(ours).version() and by_pyiceberg == by_duckdb == _delta_rs(ours)
    delta_spark.sql(f"INSERT INTO delta.`{ours}` VALUES (50, 'b', 'x')")  # Delta writes on to ours
    _, read = delta_spark.query(f"SELECT id, v, p FROM delta.`{ours}`")
    assert sorted(tuple(r.values()) for r in read) == _delta_rs(ours) and len(read) == 11


def test_property_switches_kept_to_what_delta_allows(spark, schema, tmp_path):
    path, table = str(tmp_path / "t"), f"{schema}.t"
    _run(spark, f"CREATE TABLE {table} (id BIGINT, v STRING) USING delta LOCATION '{path}'")
    # On a table with no files yet, UniForm's properties may be set (column mapping in the same ALTER).
    _run(
        spark,
        f"ALTER TABLE {table} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
        "'delta.enableIcebergCompatV2' = 'true', 'delta.universalFormat.enabledFormats' = 'iceberg')",
    )
    _run(spark, f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b')")
    shown, by_pyiceberg, by_duckdb = _iceberg_two(path)
    assert shown == 2 and by_pyiceberg == by_duckdb == [(1, "a"), (2, "b")]

    plain, named = str(tmp_path / "plain"), f"{schema}.plain"
    _run(spark, f"CREATE TABLE {named} (id BIGINT, `Item` STRING) USING delta LOCATION '{plain}'")
    _run(spark, f"INSERT INTO {named} VALUES (1, 'a')")
    with pytest.raises(EngineError, match=r"DELTA_UNSUPPORTED_COLUMN_MAPPING_MODE_CHANGE.*'none' to 'id'"):
        _run(spark, f"ALTER TABLE {named} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'id')")
    # Column mapping switched on: every column an id, its own name its physical name (the files').
    _run(spark, f"ALTER TABLE {named} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    fields = json.loads(DeltaTable(plain).schema().to_json())["fields"]
    assert [
        (f["metadata"]["delta.columnMapping.physicalName"], f["metadata"]["delta.columnMapping.id"])
        for f in fields
    ] == [
        ("id", 1),
        ("Item", 2),
    ]
    assert DeltaTable(plain).metadata().configuration["delta.columnMapping.maxColumnId"] == "2"
    _run(spark, f"INSERT INTO {named} VALUES (2, 'b')")
    assert sorted(spark.sql(f"SELECT * FROM {named}").collect()) == [(1, "a"), (2, "b")]
    assert problems(plain) == []

    with pytest.raises(EngineError, match=r"ICEBERG_COMPAT_VERSION=2"):
        _run(spark, f"REORG TABLE {named} APPLY (UPGRADE UNIFORM(ICEBERG_COMPAT_VERSION=3))")
    tags = str(tmp_path / "tags")
    _run(
        spark,
        f"CREATE TABLE {schema}.tags USING delta LOCATION '{tags}' AS SELECT 1 AS id, array('x') AS tags",
    )
    with pytest.raises(EngineError, match=r"column `tags` is an array"):
        _run(spark, f"REORG TABLE {schema}.tags {UPGRADE}")
    assert DeltaTable(tags).version() == 0


def _iceberg_two(path: str) -> tuple[int, list[tuple], list[tuple]]:
    """The Delta version the Iceberg side shows, and its (id, v) rows by pyiceberg and by DuckDB."""
    state = iceberg_state(TableLocation.of(path))
    assert state is not None
    return state.delta_version, pyiceberg_rows(path, ["id", "v"]), duckdb_rows(path, ["id", "v"])


PLAIN_THEN_UNIFORM = """
{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id',
    partition_by=['region'], table_format=var('format', none)) }}
select id, concat('r', cast(id as string)) as name, case when id % 2 = 0 then 'eu' else 'us' end as region
from range({{ var('start', 0) }}, {{ var('start', 0) + 20 }})
"""


# A source repeating every key when asked: the merge after the upgrade then fails (Delta's rule).
UPGRADED_THEN_FAILING = """
{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id',
    table_format=var('format', none)) }}
select id, 'a' as v from range(0, 5)
{% if var('twice', false) %} union all select id, 'b' as v from range(0, 5) {% endif %}
"""


class TestModelGainsTableFormatIceberg:
    @pytest.fixture(scope="class")
    def models(self):
        return {"events.sql": PLAIN_THEN_UNIFORM, "twice.sql": UPGRADED_THEN_FAILING}

    def test_the_next_run_upgrades_the_table_then_merges(self, project):
        run_dbt(["run", "-s", "events"])
        path = table_path(project, "events")
        assert "delta.enableIcebergCompatV2" not in DeltaTable(path).metadata().configuration
        run_dbt(["run", "-s", "events", "--vars", json.dumps({"format": "iceberg", "start": 10})])
        history = [h["operation"] for h in reversed(DeltaTable(path).history())]
        assert history[1] == "REORG" and len(history) == 3, history
        rows = assert_readers_agree(path)
        assert len(rows) == 30

    def test_a_merge_failing_after_the_upgrade_says_the_reorg_was_committed(self, project):
        """The upgrade is a commit of its own: the merge failing after it says that version stays
        and the merge committed nothing (not "the table is unchanged", not "do not re-run")."""
        run_dbt(["run", "-s", "twice"])
        path = table_path(project, "twice")
        upgrade_and_fail = ["run", "-s", "twice", "--vars", json.dumps({"format": "iceberg", "twice": True})]
        _, out = run_dbt_and_capture(upgrade_and_fail, expect_pass=False)
        said = " ".join(out.split())
        assert f"Delta version 1 of {path} was committed (REORG)" in said, out[-3000:]
        assert "then the model's write (merge) failed, committing nothing. What was committed stays" in said
        assert "a re-run of the model does the rest" in said and "do not re-run" not in said
        assert "DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE" in said, out[-3000:]
        table = DeltaTable(path)
        assert table.version() == 1 and table.history()[0]["operation"] == "REORG"
        assert assert_readers_agree(path) == [(i, "a") for i in range(5)]  # the rows as they were
        run_dbt(["run", "-s", "twice", "--vars", json.dumps({"format": "iceberg"})])  # the re-run
        history = [h["operation"] for h in reversed(DeltaTable(path).history())]
        assert history[1:] == ["REORG", "MERGE"], history
        assert len(assert_readers_agree(path)) == 5


BOUND = """
{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id',
    table_format='iceberg', partition_by=['region']) }}
select id, named_struct('Street', concat('s', cast(id as string)), 'n', id * 2) as address,
       case when id % 2 = 0 then 'eu' else 'us' end as region
from range({{ var('start', 0) }}, {{ var('start', 0) + 20 }})
"""


@pytest.mark.stores
class TestUniformModelInSparksCatalog:
    """A UniForm model (column mapping: its files hold physical names) is read through Spark's
    catalog by logical names, nested fields too, by ``ref`` and by SQL; on the object store
    (``make test-stores``) through the view over the manifest's files."""

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "located.sql": BOUND,
            "streets.sql": "select region, count(*) as n, max(address.Street) as top "
            "from {{ ref('located') }} group by region",
        }

    def test_rows_by_logical_names_after_create_and_merge(self, project):
        run_dbt(["run"])
        run_dbt(["run", "--vars", json.dumps({"start": 10})])
        got = project.run_sql(
            f"select id, address.Street, address.n, region from {project.test_schema}.located", fetch="all"
        )
        assert sorted(tuple(r) for r in got) == [
            (i, f"s{i}", i * 2, "eu" if i % 2 == 0 else "us") for i in range(30)
        ]
        streets = project.run_sql(f"select region, n from {project.test_schema}.streets", fetch="all")
        assert sorted(tuple(r) for r in streets) == [("eu", 15), ("us", 15)]
        configuration = DeltaTable(table_path(project, "located")).metadata().configuration
        assert configuration["delta.columnMapping.mode"] == "name"


UPGRADE_CASES = int(os.environ.get("DELTAMERGE_UPGRADE_CASES", "2"))


@pytest.mark.parametrize("seed", range(UPGRADE_CASES))
def test_seeded_tables_upgraded_read_the_same_by_every_reader(spark, schema, tmp_path, seed):
    """A seeded table shape (partitioned by a string, an int or a date, or not; deletion vectors
    left by DELETE and UPDATE, or rewritten files; row tracking or not; a struct column), upgraded:
    delta-rs, pyiceberg and DuckDB return the same rows as delta-rs before, and after one more
    UPDATE. ``DELTAMERGE_UPGRADE_CASES`` seeds (``make test``: 2)."""
    rng = random.Random(700_000 + seed)
    path, table = str(tmp_path / "t"), f"{schema}.t{seed}"
    partition = rng.choice([None, "p", "n", "d"])
    properties = {"delta.enableDeletionVectors": rng.choice(["true", "false"])}
    if rng.random() < 0.3:
        properties["delta.enableRowTracking"] = "true"
    clause = f"PARTITIONED BY ({partition})" if partition else ""
    props = ", ".join(f"'{k}' = '{v}'" for k, v in properties.items())
    _run(
        spark,
        f"CREATE TABLE {table} (id BIGINT, v STRING, p STRING, n INT, d DATE, amount DECIMAL(10, 2), "
        f"s STRUCT<a: INT, b: STRING>) USING delta {clause} LOCATION '{path}' TBLPROPERTIES ({props})",
    )
    rows = rng.choice([50, 300])
    _run(
        spark,
        f"INSERT INTO {table} SELECT id, concat('v', id), IF(id % 3 = 0, 'x', 'y'), CAST(id % 4 AS INT), "
        f"date_add(DATE'2026-01-01', CAST(id % 5 AS INT)), CAST(id / 7 AS DECIMAL(10, 2)), "
        f"named_struct('a', CAST(id AS INT), 'b', concat('b', id)) FROM range({rows})",
    )
    for _ in range(rng.randint(0, 3)):
        if rng.random() < 0.5:
            _run(spark, f"DELETE FROM {table} WHERE id % {rng.randint(3, 11)} = {rng.randint(0, 2)}")
        else:
            _run(spark, f"UPDATE {table} SET v = 'u{rng.randint(0, 9)}' WHERE id % {rng.randint(2, 9)} = 1")
    columns = ["id", "v", "p", "n", "d", "amount"]
    expected = _delta_rows(path, columns)
    _run(spark, f"REORG TABLE {table} {UPGRADE}")
    assert _delta_rows(path, columns) == expected
    assert _iceberg_rows(path, columns) == (expected, expected)
    nested = spark.sql(f"SELECT id, s.a, s.b FROM {table}").collect()
    assert sorted((r[0], r[1], r[2]) for r in nested) == sorted((r[0], r[0], f"b{r[0]}") for r in expected)
    _run(spark, f"UPDATE {table} SET v = 'after' WHERE id % 2 = 0")
    after = _delta_rows(path, columns)
    assert _iceberg_rows(path, columns) == (after, after)
    assert {r[0] for r in after if r[1] == "after"} == {r[0] for r in expected if r[0] % 2 == 0}
    assert problems(path) == []


def _delta_rows(path: str, columns: list[str]) -> list[tuple]:
    got = (
        QueryBuilder()
        .register("t", DeltaTable(path))
        .execute(f"select {', '.join(columns)} from t")
        .read_all()
    )
    return sorted(tuple(r.values()) for r in pa.table(got).to_pylist())


def _iceberg_rows(path: str, columns: list[str]) -> tuple[list[tuple], list[tuple]]:
    return pyiceberg_rows(path, columns), duckdb_rows(path, columns)
