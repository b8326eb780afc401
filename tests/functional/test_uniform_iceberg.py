"""UniForm: a model with ``table_format: iceberg`` is a Delta table Iceberg readers read too.

Each step (create, merge with update + delete + insert + NOT MATCHED BY SOURCE, a new column, a
partitioned table) is read by pyiceberg (by the metadata path the hint names) and by DuckDB's
iceberg extension (``iceberg_scan``), and both must return exactly the rows Delta's reader
(deltalake) returns for the same version; Iceberg time travel to the snapshot of Delta version N
gives version N's rows.
"""

from __future__ import annotations

import json
import os

import duckdb
import pyarrow as pa
import pytest
from dbt.tests.util import run_dbt
from deltalake import DeltaTable, QueryBuilder
from duckdb_extensions import import_extension
from pyiceberg.table import StaticTable

from tests.functional.helpers import table_path

EVENTS = """
{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id',
    table_format='iceberg', partition_by=['region'], source_alias='s', target_alias='t',
    merge_with_schema_evolution=var('evolve', false),
    when_matched=[{'action': 'delete', 'condition': "s.op = 'D'"}, {'action': 'update', 'set': '*'}],
    when_not_matched=[{'action': 'insert', 'values': '*'}],
    when_not_matched_by_source=var('by_source', [])) }}
{% set step = var('step', 0) %}
{% if step == 0 %}
select id, concat('e', cast(id as string)) as name, case when id % 3 = 0 then 'eu' else 'us' end as region,
       'U' as op, date_add(date'2026-01-01', cast(id as int)) as day
from range(40)
{% elif step == 1 %}
select id, concat('new', cast(id as string)) as name, case when id % 3 = 0 then 'eu' else 'us' end as region,
       case when id % 5 = 0 then 'D' else 'U' end as op, date'2026-06-01' as day
from range(30, 60)
{% else %}
select id, 'again' as name, 'eu' as region, 'U' as op, date'2026-07-01' as day, id * 10 as score
from range(55, 65)
{% endif %}
"""


def delta_rows(path: str, version: int | None = None) -> list[tuple]:
    table = DeltaTable(path, version=version)
    columns = [f.name for f in table.schema().fields]
    got = QueryBuilder().register("t", table).execute(f"select {', '.join(columns)} from t").read_all()
    return sorted(tuple(r.values()) for r in pa.table(got).to_pylist())


def metadata_location(path: str) -> str:
    with open(os.path.join(path, "metadata", "version-hint.text")) as hint:
        return os.path.join(path, "metadata", hint.read().strip() + ".metadata.json")


def pyiceberg_rows(path: str, columns: list[str], snapshot_id: int | None = None) -> list[tuple]:
    table = StaticTable.from_metadata(metadata_location(path))
    got = table.scan(snapshot_id=snapshot_id).to_arrow().select(columns)
    return sorted(tuple(r.values()) for r in got.to_pylist())


def duckdb_rows(path: str, columns: list[str]) -> list[tuple]:
    import_extension("avro")  # the extensions' wheels: no download
    import_extension("iceberg")
    con = duckdb.connect()
    con.execute("LOAD avro; LOAD iceberg;")
    query = f"select {', '.join(columns)} from iceberg_scan('{metadata_location(path)}')"
    return sorted(con.execute(query).fetchall())


def assert_readers_agree(path: str) -> list[tuple]:
    expected = delta_rows(path)
    columns = [f.name for f in DeltaTable(path).schema().fields]
    assert pyiceberg_rows(path, columns) == expected
    assert duckdb_rows(path, columns) == expected
    return expected


class TestUniformIceberg:
    @pytest.fixture(scope="class")
    def models(self):
        return {"events.sql": EVENTS}

    def test_every_step_reads_the_same_as_iceberg(self, project):
        run_dbt(["run"])
        path = table_path(project, "events")
        table = DeltaTable(path)
        configuration = table.metadata().configuration
        assert configuration["delta.enableIcebergCompatV2"] == "true"
        assert configuration["delta.universalFormat.enabledFormats"] == "iceberg"
        assert configuration["delta.columnMapping.mode"] == "name"
        assert "icebergCompatV2" in (table.protocol().writer_features or [])
        first = assert_readers_agree(path)
        assert len(first) == 40

        run_dbt(["run", "--vars", json.dumps({"step": 1})])
        second = assert_readers_agree(path)
        assert len(second) == 40 - 2 + 20  # 30 and 35 deleted (op D), 40-59 inserted

        by_source = [{"action": "delete", "condition": "t.id < 5"}]
        run_dbt(["run", "--vars", json.dumps({"step": 2, "evolve": True, "by_source": by_source})])
        third = assert_readers_agree(path)
        assert "score" in [f.name for f in DeltaTable(path).schema().fields]
        assert {r[0] for r in third}.isdisjoint(range(5))

        # Time travel: the Iceberg snapshot of each Delta version holds that version's rows.
        iceberg = StaticTable.from_metadata(metadata_location(path))
        by_version = {int(s.summary["delta-version"]): s.snapshot_id for s in iceberg.metadata.snapshots}
        assert sorted(by_version) == list(range(DeltaTable(path).version() + 1))
        for version, snapshot_id in by_version.items():
            columns = [f.name for f in DeltaTable(path, version=version).schema().fields]
            assert pyiceberg_rows(path, columns, snapshot_id) == delta_rows(path, version)
