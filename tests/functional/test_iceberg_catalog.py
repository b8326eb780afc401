"""A UniForm table registered in a real Iceberg REST catalog (Apache Iceberg's own server) and kept
current there after each commit, read back through the catalog by pyiceberg.

The commits are plain Python (``test_uniform_faults.append_copy``: no Spark job), so the catalog's
faults can be played cheaply: a catalog that is down, or answers 401 or 500 (a fault proxy in front
of the real server), leaves the Delta commit standing and says so, and the next commit catches the
catalog up; a table another writer committed to through the catalog is never overwritten; writers
racing leave the catalog at the latest Delta version.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from dbt.tests.util import run_dbt
from deltalake import DeltaTable, QueryBuilder
from duckdb_extensions import import_extension
from pyiceberg.catalog.rest import RestCatalog

from dbt.adapters.deltamerge.delta import Stores, TableLocation, ledger
from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
from dbt.adapters.deltamerge.delta.uniform import (
    iceberg_state,
    registration_properties,
    unpublish,
)
from tests.backend import ON_S3
from tests.functional.helpers import table_path
from tests.functional.test_uniform_faults import UNIFORM, append_copy, append_in_threads, delta_rows
from tests.iceberg_rest import RestCatalogServer, s3_catalog_env, s3_client_properties, start_rest_catalog
from tests.iceberg_spark import read_through_catalog
from tests.s3faults import FaultProxy

NAME = ("sales", "events")


@pytest.fixture(scope="module")
def rest_catalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestCatalogServer]:
    server = start_rest_catalog(str(tmp_path_factory.mktemp("iceberg-rest")))
    yield server
    server.stop()


@pytest.fixture
def proxy(rest_catalog: RestCatalogServer) -> Iterator[FaultProxy]:
    proxy = FaultProxy(rest_catalog.uri)
    yield proxy
    proxy.stop()


def catalog_rows(client: RestCatalog, snapshot_id: int | None = None) -> list[tuple]:
    got = client.load_table(NAME).scan(snapshot_id=snapshot_id).to_arrow()
    return sorted(tuple(r.values()) for r in got.select(["id", "v"]).to_pylist())


def shown_version(client: RestCatalog) -> int:
    return int(client.load_table(NAME).metadata.properties["delta-version"])


def make_table(spark: Any, path: str, stores: Stores, name: tuple[str, str] = NAME) -> TableLocation:
    location = TableLocation.of(path, stores)
    frame = spark.sql("select cast(id as int) as id, concat('v', cast(id as string)) as v from range(20)")
    properties = {**UNIFORM, **registration_properties("lake", *name)}
    write_dataframe(spark, frame, WriteRequest(location, "create_or_replace", properties=properties))
    return location


def stores_with(properties: dict[str, str]) -> Stores:
    stores = Stores()
    stores.catalogs.configure({"lake": properties})
    return stores


def test_registered_at_create_and_kept_current_with_every_version_readable(spark, tmp_path, rest_catalog):
    client = RestCatalog("check", **rest_catalog.properties())
    table = make_table(spark, str(tmp_path / "events"), stores_with(rest_catalog.properties()))
    assert shown_version(client) == 0
    assert catalog_rows(client) == delta_rows(table.path)

    for expected in (1, 2, 3):
        assert append_copy(table) == expected
        assert shown_version(client) == expected
    assert catalog_rows(client) == delta_rows(table.path) and len(delta_rows(table.path)) > 20
    loaded = client.load_table(NAME)
    by_version = {int(s.summary["delta-version"]): s.snapshot_id for s in loaded.metadata.snapshots}
    assert sorted(by_version) == [0, 1, 2, 3]
    assert catalog_rows(client, by_version[1]) == delta_rows(table.path, 1)
    # The catalog's table is ours: same uuid, same location, the data files the log names.
    state = iceberg_state(table)
    assert state is not None and loaded.metadata.table_uuid == state.metadata.table_uuid
    assert loaded.metadata.location.rstrip("/").endswith("events")

    assert unpublish(client, NAME, str(state.metadata.table_uuid))
    assert not client.table_exists(NAME)
    assert DeltaTable(table.path).version() == 3  # the files stay: a drop there is no purge


@pytest.mark.parametrize("status", [401, 409, 500])
def test_a_refusing_catalog_leaves_the_commit_and_says_so_then_the_next_commit_catches_up(
    spark, tmp_path, rest_catalog, proxy, status
):
    secret = "client-id:very-secret-value"
    stores = stores_with({**rest_catalog.properties(proxy.endpoint), "token": secret})
    table = make_table(spark, str(tmp_path / "events"), stores, ("refusing", f"events_{status}"))
    name = ("refusing", f"events_{status}")
    client = RestCatalog("check", **rest_catalog.properties())
    assert int(client.load_table(name).metadata.properties["delta-version"]) == 0

    # Every table commit refused (pyiceberg asks again once after a 401, with a fresh token).
    commits = f"/v1/namespaces/refusing/tables/events_{status}$"
    proxy.rules({"method": "POST", "path": commits, "status": status, "times": 100})
    with ledger() as done:
        assert append_copy(table) == 1
    [said] = done.notices
    assert said.startswith(
        f"Delta version 1 of {table.path} was committed and its Iceberg metadata written; "
        f"the Iceberg catalog's lake.refusing.events_{status} was not brought to it"
    ), said
    assert "iceberg_sync" in said and "very-secret-value" not in said
    assert DeltaTable(table.path).version() == 1
    assert int(client.load_table(name).metadata.properties["delta-version"]) == 0

    proxy.reset()  # the catalog takes commits again
    assert append_copy(table) == 2
    assert int(client.load_table(name).metadata.properties["delta-version"]) == 2
    rows = client.load_table(name).scan().to_arrow().select(["id", "v"]).to_pylist()
    assert sorted(tuple(r.values()) for r in rows) == delta_rows(table.path)


def test_a_catalog_that_never_answers_is_given_up_and_caught_up_later(spark, tmp_path, rest_catalog, proxy):
    properties = {**rest_catalog.properties(proxy.endpoint), "request-timeout": "2"}
    table = make_table(spark, str(tmp_path / "events"), stores_with(properties), ("hung", "events"))
    client = RestCatalog("check", **rest_catalog.properties())
    proxy.rules({"method": "POST", "path": "/v1/namespaces/hung/tables/events$", "delay": 6, "times": 1})
    with ledger() as done:
        assert append_copy(table) == 1  # back within the timeout, not after the catalog's answer
    [said] = done.notices
    assert "Delta version 1 of" in said and "Timeout" in said, said
    time.sleep(6)  # the held commit reaches the catalog late: the next publish finds either state
    assert append_copy(table) == 2
    assert int(client.load_table(("hung", "events")).metadata.properties["delta-version"]) == 2


def test_oauth2_client_credentials_ask_the_catalog_for_a_token(spark, tmp_path, rest_catalog, proxy):
    properties = {**rest_catalog.properties(proxy.endpoint), "credential": "dbt-client:its-secret"}
    make_table(spark, str(tmp_path / "events"), stores_with(properties), ("oauth", "events"))
    paths = [(kind, path) for kind, path, _ in proxy.requests()]
    assert ("POST", "/v1/oauth/tokens") in paths  # the REST spec's client-credentials exchange
    assert ("POST", "/v1/namespaces/oauth/register") in paths


def test_a_catalog_that_is_down_is_caught_up_by_the_next_commit(spark, tmp_path, rest_catalog):
    proxy = FaultProxy(rest_catalog.uri)
    stores = stores_with(rest_catalog.properties(proxy.endpoint))
    table = make_table(spark, str(tmp_path / "events"), stores, ("down", "events"))
    client = RestCatalog("check", **rest_catalog.properties())
    proxy.stop()  # nothing listens there now
    with ledger() as done:
        assert append_copy(table) == 1
    [said] = done.notices
    assert "was committed and its Iceberg metadata written" in said
    assert int(client.load_table(("down", "events")).metadata.properties["delta-version"]) == 0

    stores.catalogs.configure({"lake": rest_catalog.properties()})  # the catalog back (a new address)
    assert append_copy(table) == 2
    assert int(client.load_table(("down", "events")).metadata.properties["delta-version"]) == 2


def test_a_snapshot_another_writer_committed_through_the_catalog_is_never_overwritten(
    spark, tmp_path, rest_catalog
):
    name = ("foreign", "events")
    table = make_table(spark, str(tmp_path / "events"), stores_with(rest_catalog.properties()), name)
    client = RestCatalog("check", **rest_catalog.properties())
    theirs = client.load_table(name)
    theirs.append(theirs.scan().to_arrow().slice(0, 1))  # an Iceberg writer's commit there
    foreign = client.load_table(name).metadata.current_snapshot_id

    with ledger() as done:
        assert append_copy(table) == 1
    [said] = done.notices
    assert "which no Delta version of this table made" in said and "not overwritten" in said
    assert client.load_table(name).metadata.current_snapshot_id == foreign


def test_writers_racing_leave_the_catalog_at_the_latest_delta_version(spark, tmp_path, rest_catalog):
    name = ("racing", "events")
    stores = stores_with(rest_catalog.properties())
    table = make_table(spark, str(tmp_path / "events"), stores, name)
    assert append_in_threads(table, threads=3, commits=4) == []
    latest = DeltaTable(table.path).version()
    assert latest == 12
    client = RestCatalog("check", **rest_catalog.properties())
    assert int(client.load_table(name).metadata.properties["delta-version"]) == latest
    rows = client.load_table(name).scan().to_arrow().select(["id", "v"]).to_pylist()
    assert sorted(tuple(r.values()) for r in rows) == delta_rows(table.path)


ORDERS = """
{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id',
    database=var('orders_catalog', 'lake')) }}
{% if var('step', 0) == 0 %}
select cast(id as int) as id, concat('o', cast(id as string)) as item from range(40)
{% else %}
select cast(id as int) as id, 'changed' as item from range(30, 50)
{% endif %}
"""
SOURCES = """
sources:
  - name: lake_orders
    database: lake
    schema: "{{ target.schema }}"
    tables: [{name: orders}]
"""


class TestThreePartNames:
    """Models registered in an Iceberg REST catalog by their ``database`` (``catalog.schema.table``)."""

    @pytest.fixture(scope="class")
    def flaky(self, rest_catalog: RestCatalogServer) -> Iterator[FaultProxy]:
        proxy = FaultProxy(rest_catalog.uri)
        yield proxy
        proxy.stop()

    @pytest.fixture(scope="class")
    def other(self, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestCatalogServer]:
        server = start_rest_catalog(str(tmp_path_factory.mktemp("other-rest")))
        yield server
        server.stop()

    @pytest.fixture(scope="class")
    def dbt_profile_target(self, dbt_profile_target, rest_catalog, flaky, other):
        catalogs = {
            "lake": rest_catalog.properties(),
            "flaky": rest_catalog.properties(flaky.endpoint),
            "other": other.properties(),
        }
        return {**dbt_profile_target, "iceberg_catalogs": catalogs}

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "orders.sql": ORDERS,
            "counted.sql": "{{ config(materialized='table') }} select count(*) as n from {{ ref('orders') }}",
            "from_source.sql": "-- depends_on: {{ ref('orders') }}\n"
            "select count(*) as n from {{ source('lake_orders', 'orders') }}",
            "flaky.sql": "{{ config(materialized='table', database='flaky') }} select 1 as id",
            "nowhere.sql": "{{ config(materialized='table', database='nowhere') }} select 1 as id",
            "later.sql": ORDERS.replace("var('orders_catalog', 'lake')", "var('later_catalog', none)"),
            "sources.yml": SOURCES,
        }

    def test_a_model_is_registered_by_its_database_and_kept_current(self, project, rest_catalog):
        run_dbt(["run", "--exclude", "nowhere"])
        client = RestCatalog("check", **rest_catalog.properties())
        name = (project.test_schema, "orders")
        path = table_path(project, "orders")
        assert int(client.load_table(name).metadata.properties["delta-version"]) == 0
        assert table_rows(client, name) == delta_rows_of(path)
        assert project.run_sql(f"select n from {project.test_schema}.counted", fetch="one")[0] == 40
        assert project.run_sql(f"select n from {project.test_schema}.from_source", fetch="one")[0] == 40
        # A model without a database stays in Spark's catalog only.
        assert not client.table_exists((project.test_schema, "counted"))

        run_dbt(["run", "-s", "orders", "--vars", json.dumps({"step": 1})])
        assert DeltaTable(path).version() == 1
        loaded = client.load_table(name)
        assert int(loaded.metadata.properties["delta-version"]) == 1
        assert table_rows(client, name) == delta_rows_of(path) and len(delta_rows_of(path)) == 50
        first = next(s for s in loaded.metadata.snapshots if s.summary["delta-version"] == "0")
        assert table_rows(client, name, first.snapshot_id) == delta_rows_of(path, 0)

    def test_spark_with_iceberg_s_runtime_reads_it_through_the_catalog(self, project, rest_catalog):
        run_dbt(["run", "-s", "orders"])
        client = RestCatalog("check", **rest_catalog.properties())
        loaded = client.load_table((project.test_schema, "orders"))
        path = table_path(project, "orders")
        first = next(s for s in loaded.metadata.snapshots if s.summary["delta-version"] == "0")
        table = f"cat.{project.test_schema}.orders"
        got = read_through_catalog(
            rest_catalog.properties(),
            {
                "latest": f"select id, item from {table}",
                "first": f"select id, item from {table} version as of {first.snapshot_id}",
            },
        )
        assert sorted(tuple(r) for r in got["latest"]) == delta_rows_of(path)
        assert sorted(tuple(r) for r in got["first"]) == delta_rows_of(path, 0)

    def test_duckdb_reads_it_through_the_catalog(self, project, rest_catalog):
        run_dbt(["run", "-s", "orders"])
        for extension in ("httpfs", "avro", "iceberg"):  # the extensions' wheels: no download
            import_extension(extension)
        con = duckdb.connect()
        con.execute("LOAD httpfs; LOAD avro; LOAD iceberg;")
        con.execute(
            f"ATTACH '{rest_catalog.warehouse}' AS cat "
            f"(TYPE iceberg, ENDPOINT '{rest_catalog.uri}', AUTHORIZATION_TYPE 'none')"
        )
        got = con.execute(f"select id, item from cat.{project.test_schema}.orders").fetchall()
        assert sorted(got) == delta_rows_of(table_path(project, "orders"))

    def test_docs_list_a_registered_model_under_its_catalog(self, project):
        run_dbt(["run", "--exclude", "nowhere"])
        run_dbt(["docs", "generate"])
        with open(os.path.join(project.project_root, "target", "catalog.json")) as found:
            catalog = json.load(found)
        assert "model.test.orders" in catalog["nodes"], sorted(catalog["nodes"])
        orders = catalog["nodes"]["model.test.orders"]
        assert orders["metadata"]["database"] == "lake"
        assert set(orders["columns"]) == {"id", "item"}
        assert catalog["nodes"]["model.test.counted"]["metadata"]["database"] is None

    def test_a_database_naming_no_catalog_is_refused(self, project):
        refused = run_dbt(["run", "-s", "nowhere"], expect_pass=False)
        message = refused.results[0].message
        assert "database 'nowhere' names no Iceberg catalog of the profile" in message
        assert "flaky, lake" in message

    def test_a_failing_catalog_fails_the_model_saying_the_version_committed(
        self, project, rest_catalog, flaky
    ):
        run_dbt(["run", "-s", "flaky"])
        client = RestCatalog("check", **rest_catalog.properties())
        name = (project.test_schema, "flaky")
        before = DeltaTable(table_path(project, "flaky")).version()
        assert int(client.load_table(name).metadata.properties["delta-version"]) == before
        flaky.rules({"method": "POST", "path": "/tables/flaky$", "status": 500, "times": 100})
        failed = run_dbt(["run", "-s", "flaky"], expect_pass=False)
        message = failed.results[0].message
        assert f"Delta version {before + 1} of" in message and "was committed" in message, message
        assert f"flaky.{project.test_schema}.flaky was not brought to it" in message
        assert DeltaTable(table_path(project, "flaky")).version() == before + 1
        assert int(client.load_table(name).metadata.properties["delta-version"]) == before

        flaky.reset()
        args = json.dumps({"relation": f"{project.test_schema}.flaky"})
        run_dbt(["run-operation", "iceberg_sync", "--args", args])
        assert int(client.load_table(name).metadata.properties["delta-version"]) == before + 1

    def test_a_model_moved_to_another_catalog_leaves_the_first(self, project, rest_catalog, other):
        run_dbt(["run", "-s", "orders"])
        lake = RestCatalog("lake", **rest_catalog.properties())
        elsewhere = RestCatalog("other", **other.properties())
        name = (project.test_schema, "orders")
        path = table_path(project, "orders")
        assert lake.table_exists(name) and not elsewhere.table_exists(name)

        moved = run_dbt(["run", "-s", "orders", "--vars", json.dumps({"orders_catalog": "other"})])
        assert moved.results[0].status == "success"
        operations = [h["operation"] for h in DeltaTable(path).history(2)]
        assert operations == ["MERGE", "SET TBLPROPERTIES"], operations
        assert DeltaTable(path).metadata().configuration["deltamerge.iceberg.catalog"] == "other"
        assert not lake.table_exists(name)
        latest = DeltaTable(path).version()
        assert int(elsewhere.load_table(name).metadata.properties["delta-version"]) == latest
        assert table_rows(elsewhere, name) == delta_rows_of(path)

        # Out of every Iceberg catalog: the entry goes, the table stays; then back.
        run_dbt(["run", "-s", "orders", "--vars", json.dumps({"orders_catalog": None})])
        assert not elsewhere.table_exists(name) and not lake.table_exists(name)
        assert "deltamerge.iceberg.catalog" not in DeltaTable(path).metadata().configuration
        run_dbt(["run", "-s", "orders"])
        assert int(lake.load_table(name).metadata.properties["delta-version"]) == DeltaTable(path).version()

    def test_a_plain_model_given_a_database_is_upgraded_in_place_and_registered(self, project, rest_catalog):
        run_dbt(["run", "-s", "later"])
        path = table_path(project, "later")
        assert "delta.enableIcebergCompatV2" not in DeltaTable(path).metadata().configuration
        run_dbt(["run", "-s", "later", "--vars", json.dumps({"later_catalog": "lake", "step": 1})])
        operations = [h["operation"] for h in DeltaTable(path).history(3)]
        assert operations == ["MERGE", "SET TBLPROPERTIES", "REORG"], operations
        client = RestCatalog("check", **rest_catalog.properties())
        name = (project.test_schema, "later")
        assert int(client.load_table(name).metadata.properties["delta-version"]) == DeltaTable(path).version()
        assert table_rows(client, name) == delta_rows_of(path) and len(delta_rows_of(path)) == 50

    def test_a_renamed_model_takes_its_new_name_in_the_catalog(self, project, rest_catalog):
        run_dbt(["run", "-s", "flaky"])  # registered as flaky.<schema>.flaky (the same server)
        client = RestCatalog("check", **rest_catalog.properties())
        old, new = (project.test_schema, "flaky"), (project.test_schema, "flaky_renamed")
        assert client.table_exists(old)
        adapter = project.adapter

        def relation(name: str) -> Any:
            return adapter.Relation.create(
                database="flaky", schema=project.test_schema, identifier=name, type="table"
            )

        with adapter.connection_named("rename"):
            adapter.rename_relation(relation("flaky"), relation("flaky_renamed"))
        path = table_path(project, "flaky")  # the table stays where it is; its names change
        assert DeltaTable(path).metadata().configuration["deltamerge.iceberg.identifier"] == ".".join(new)
        assert not client.table_exists(old)
        loaded = client.load_table(new)
        assert int(loaded.metadata.properties["delta-version"]) == DeltaTable(path).version()
        assert (
            project.run_sql(f"select count(*) from {project.test_schema}.flaky_renamed", fetch="one")[0] == 1
        )
        # A user's own ALTER TABLE ... RENAME TO (a hook, run-operation, dbt show) is followed too.
        project.run_sql(f"alter table {project.test_schema}.flaky_renamed rename to user_renamed")
        user = (project.test_schema, "user_renamed")
        assert DeltaTable(path).metadata().configuration["deltamerge.iceberg.identifier"] == ".".join(user)
        assert not client.table_exists(new) and client.table_exists(user)
        loaded = client.load_table(user)
        assert int(loaded.metadata.properties["delta-version"]) == DeltaTable(path).version()

    def test_a_dropped_model_leaves_the_catalog(self, project, rest_catalog):
        run_dbt(["run", "-s", "orders"])
        client = RestCatalog("check", **rest_catalog.properties())
        assert client.table_exists((project.test_schema, "orders"))
        relation = project.adapter.Relation.create(
            database="lake", schema=project.test_schema, identifier="orders", type="table"
        ).incorporate(is_delta=True)
        with project.adapter.connection_named("drop"):
            project.adapter.drop_relation(relation)
        assert not client.table_exists((project.test_schema, "orders"))
        assert DeltaTable(table_path(project, "orders")).version() >= 0  # no purge: the files stay


def table_rows(client: RestCatalog, name: tuple[str, str], snapshot_id: int | None = None) -> list[tuple]:
    got = client.load_table(name).scan(snapshot_id=snapshot_id).to_arrow()
    return sorted(tuple(r.values()) for r in got.select(["id", "item"]).to_pylist())


def delta_rows_of(path: str, version: int | None = None) -> list[tuple]:
    table = DeltaTable(path, version=version)  # column mapping: delta-rs's query engine reads it
    got = QueryBuilder().register("t", table).execute("select id, item from t").read_all()
    return sorted(tuple(r.values()) for r in pa.table(got).to_pylist())


@pytest.fixture(scope="module")
def store_catalog(request, tmp_path_factory) -> Iterator[tuple[RestCatalogServer, dict[str, str]]]:
    """A REST catalog server for tables on the tests' store: with ``make test-stores``, S3 (the
    server writes its own metadata files there through Iceberg's S3FileIO)."""
    extra: dict[str, str] = {}
    reading: dict[str, str] = {}
    if ON_S3:
        s3 = request.getfixturevalue("s3_server")
        keys = (s3.endpoint, s3.access_key, s3.secret_key, "us-east-1")
        extra, reading = s3_catalog_env(*keys), s3_client_properties(*keys)
    server = start_rest_catalog(str(tmp_path_factory.mktemp("store-rest")), extra)
    yield server, reading
    server.stop()


@pytest.mark.stores
def test_a_table_on_the_store_is_registered_kept_current_and_read_through_the_catalog(
    spark, lake_root, store_catalog
):
    server, reading = store_catalog
    stores = stores_with(server.properties())
    name = ("store", "events")
    table = make_table(spark, f"{lake_root}/events", stores, name)
    more = spark.sql("select cast(id as int) as id, concat('w', cast(id as string)) as v from range(20, 30)")
    write_dataframe(spark, more, WriteRequest(table, "append"))
    client = RestCatalog("check", **server.properties(), **reading)
    loaded = client.load_table(name)
    assert int(loaded.metadata.properties["delta-version"]) == 1
    assert loaded.metadata.location.rstrip("/") == table.path.rstrip("/")
    got = sorted(tuple(r.values()) for r in loaded.scan().to_arrow().select(["id", "v"]).to_pylist())
    assert got == sorted([(i, f"v{i}") for i in range(20)] + [(i, f"w{i}") for i in range(20, 30)])
    first = next(s for s in loaded.metadata.snapshots if s.summary["delta-version"] == "0")
    at_first = loaded.scan(snapshot_id=first.snapshot_id).to_arrow().select(["id"]).to_pylist()
    assert sorted(r["id"] for r in at_first) == list(range(20))
