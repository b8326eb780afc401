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
{% elif step == 2 %}
select id, 'again' as name, 'eu' as region, 'U' as op, date'2026-07-01' as day, id * 10 as score
from range(55, 65)
{% else %}
select id, 'tagged' as name, 'eu' as region, 'U' as op, date'2026-08-01' as day, id as score,
       array('x') as tags
from range(60, 62)
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

        # A new column Iceberg cannot take yet (an array), by schema evolution: refused, nothing committed.
        before = DeltaTable(path).version()
        refused = run_dbt(["run", "--vars", json.dumps({"step": 3, "evolve": True})], expect_pass=False)
        assert "column `tags` is an array" in refused.results[0].message
        assert "Nothing was committed" in refused.results[0].message
        assert DeltaTable(path).version() == before

        # Time travel: the Iceberg snapshot of each Delta version holds that version's rows.
        iceberg = StaticTable.from_metadata(metadata_location(path))
        by_version = {int(s.summary["delta-version"]): s.snapshot_id for s in iceberg.metadata.snapshots}
        assert sorted(by_version) == list(range(DeltaTable(path).version() + 1))
        for version, snapshot_id in by_version.items():
            columns = [f.name for f in DeltaTable(path, version=version).schema().fields]
            assert pyiceberg_rows(path, columns, snapshot_id) == delta_rows(path, version)


DAILY = """
{{ config(materialized='table', table_format='iceberg', partition_by=['day'],
    post_hook=["delete from {{ this }} where id < 3",
               "update {{ this }} set name = 'renamed' where id = 5",
               "insert into {{ this }} select 100, 'late', date'2026-01-02'",
               "optimize {{ this }}"]) }}
select /*+ REPARTITION(4) */ cast(id as int) as id, concat('n', cast(id as string)) as name,
       date_add(date'2026-01-01', cast(id % 3 as int)) as day
from range(30)
"""
WITH_ARRAY = """
{{ config(materialized='table', table_format='iceberg') }}
select 1 as id, array('a', 'b') as tags
"""
WITH_VECTORS = """
{{ config(materialized='table', table_format='iceberg', deletion_vectors=true) }}
select 1 as id
"""


class TestUniformStatementsAndRefusals:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "daily.sql": DAILY,
            "with_array.sql": WITH_ARRAY,
            "with_vectors.sql": WITH_VECTORS,
            "by_profile.sql": "{{ config(materialized='table') }} select 1 as id",
            "opted_out.sql": "{{ config(materialized='table', table_format='default') }} select 1 as id",
        }

    @pytest.fixture(scope="class")
    def dbt_profile_target(self, dbt_profile_target):
        return {**dbt_profile_target, "table_format": "iceberg"}  # the profile's default

    def test_the_profile_s_table_format_is_every_model_s_default(self, project):
        run_dbt(["run", "-s", "by_profile", "opted_out"])
        by_profile = DeltaTable(table_path(project, "by_profile")).metadata().configuration
        assert by_profile["delta.universalFormat.enabledFormats"] == "iceberg"
        assert assert_readers_agree(table_path(project, "by_profile")) == [(1,)]
        opted_out = DeltaTable(table_path(project, "opted_out")).metadata().configuration
        assert "delta.universalFormat.enabledFormats" not in opted_out
        assert not os.path.exists(os.path.join(table_path(project, "opted_out"), "metadata"))

    def test_dml_optimize_and_restore_keep_the_iceberg_side_current(self, project):
        results = run_dbt(["run", "-s", "daily"])
        path = table_path(project, "daily")
        # create, DELETE, UPDATE, INSERT, OPTIMIZE: five versions, each an Iceberg snapshot.
        assert DeltaTable(path).version() == 4
        history = [h["operation"] for h in reversed(DeltaTable(path).history())]
        assert history[-1] == "OPTIMIZE", history
        rows = assert_readers_agree(path)
        assert len(rows) == 30 - 3 + 1 and ("renamed" in {r[1] for r in rows})
        assert results.results[0].status == "success"

        project.run_sql(f"restore table {project.test_schema}.daily to version as of 0")
        restored = assert_readers_agree(path)
        assert len(restored) == 30

        iceberg = StaticTable.from_metadata(metadata_location(path))
        assert iceberg.metadata.properties["delta-version"] == str(DeltaTable(path).version())
        assert [f.name for f in iceberg.spec().fields] == ["day"]
        # Partition values are in the data files too (IcebergCompatV2): the files' own columns.
        for uri in DeltaTable(path).file_uris():
            assert "col-" in ",".join(pq_columns(uri))

    def test_vacuum_keeps_the_iceberg_metadata(self, project):
        path = table_path(project, "daily")
        before = sorted(os.listdir(os.path.join(path, "metadata")))
        args = {"relation": f"{project.test_schema}.daily", "retain_hours": 0, "enforce_retention": False}
        run_dbt(["run-operation", "vacuum", "--args", json.dumps(args)])
        assert sorted(os.listdir(os.path.join(path, "metadata"))) == before
        assert_readers_agree(path)

    def test_a_failed_conversion_fails_the_run_naming_the_committed_version(self, project):
        path = table_path(project, "daily")
        metadata = os.path.join(path, "metadata")
        os.rename(metadata, metadata + ".moved")
        open(metadata, "w").close()  # a file where the folder goes: the Iceberg side cannot be written
        shown = DeltaTable(path).version()
        results = run_dbt(["run", "-s", "daily"], expect_pass=False)
        message = results.results[0].message
        committed = DeltaTable(path).version()
        assert committed > shown
        assert (
            f"Delta version {shown + 1} of {path} was committed; its Iceberg metadata was not written"
            in message
        )
        assert "iceberg_sync" in message
        os.remove(metadata)
        os.rename(metadata + ".moved", metadata)
        relation = f"{project.test_schema}.daily"
        run_dbt(["run-operation", "iceberg_sync", "--args", json.dumps({"relation": relation})])
        state = StaticTable.from_metadata(metadata_location(path))
        assert state.metadata.properties["delta-version"] == str(committed)
        assert_readers_agree(path)

    def test_what_iceberg_cannot_read_is_refused_before_anything_is_written(self, project):
        results = run_dbt(["run", "-s", "with_array", "with_vectors"], expect_pass=False)
        messages = {r.node.name: r.message for r in results.results}
        assert "column `tags` is an array" in messages["with_array"], messages
        assert "Nothing was written" in messages["with_array"]
        assert not os.path.exists(table_path(project, "with_array"))
        assert "deletion_vectors cannot be used with table_format: iceberg" in messages["with_vectors"]


def pq_columns(uri: str) -> list[str]:
    import pyarrow.parquet as pq

    return pq.read_schema(uri.removeprefix("file://")).names
