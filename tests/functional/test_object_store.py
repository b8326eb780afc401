"""Delta tables on a real S3 server (S3Proxy on loopback): the engine writes data through Spark's S3A
connector and commits through obstore's conditional create; delta-rs reads every table back.

Run with ``DELTAMERGE_TEST_STORE=s3`` (``make test`` does: a pytest run of its own, since Spark
takes the S3A connector when its JVM starts).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder, write_deltalake

from dbt.adapters.deltamerge.delta import (
    ConcurrentModification,
    StorageError,
    Stores,
    TableLocation,
    load_snapshot,
    storage,
)
from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
from dbt.adapters.deltamerge.merge import MergeSpec, merge_into
from dbt.adapters.deltamerge.statements.run.dml import delete_rows
from tests.backend import SLOW
from tests.functional.helpers import race_conditional_creates

pytestmark = pytest.mark.s3


def _table(s3_server: Any, name: str) -> str:
    bucket = s3_server.make_bucket(f"lake-{uuid.uuid4().hex[:8]}")
    return f"s3a://{bucket}/warehouse/{name}"


def _delta(path: str, version: int | None = None) -> DeltaTable:
    return DeltaTable(path, version=version, storage_options=TableLocation.of(path).deltalake_options())


def _live(path: str) -> list[dict[str, Any]]:
    query = QueryBuilder().register("t", _delta(path)).execute("select * from t")
    return pa.table(query.read_all()).to_pylist()


def _keys(s3_server: Any, path: str) -> list[str]:
    """Every object of the table's bucket (read from the server's own folder, not through S3)."""
    bucket = s3_server.root / path.split("/")[2]
    return sorted(str(p.relative_to(bucket)) for p in bucket.rglob("*") if p.is_file())


def _table_keys(s3_server: Any, path: str) -> list[str]:
    """The objects under the table's own prefix (a bucket may hold other tests' tables)."""
    prefix = path.split("/", 3)[3] + "/"
    return [k for k in _keys(s3_server, path) if k.startswith(prefix)]


def _data_file(key: str) -> bool:
    """Whether an object is a data file (not the log's, the binding's or a change file)."""
    parts = key.split("/")
    return not any(p.startswith("_") and "=" not in p for p in parts) and "__is_cdc=true" not in parts


def test_conditional_create_has_exactly_one_winner_per_version(s3_server):
    log = _table(s3_server, "race") + "/_delta_log"
    race_conditional_creates(log, versions=20, writers=8)


def test_write_merge_and_delete_on_s3_read_by_delta_rs(spark, s3_server):
    path = _table(s3_server, "orders")
    frame = spark.range(100).selectExpr("id", "cast(id % 3 as string) as day", "id * 10 as amount")
    properties = {"delta.enableChangeDataFeed": "true", "delta.enableDeletionVectors": "true"}
    created = write_dataframe(
        spark,
        frame,
        WriteRequest(
            TableLocation.of(path), "create_or_replace", partition_by=("day",), properties=properties
        ),
    )
    assert created.version == 0
    assert _delta(path).version() == 0 and len(_live(path)) == 100

    source = spark.createDataFrame([(5, "2", 1), (500, "1", 2)], "id long, day string, amount long")
    spec = MergeSpec.from_config("orders", {"unique_key": "id", "source_alias": "s", "target_alias": "t"})
    merged = merge_into(spark, source, load_snapshot(TableLocation.of(path)), spec)  # type: ignore[arg-type]
    metrics = merged.metrics
    assert (metrics["numTargetRowsUpdated"], metrics["numTargetRowsInserted"]) == (1, 1)
    deleted = delete_rows(spark, load_snapshot(TableLocation.of(path)), "id < 10")  # type: ignore[arg-type]
    assert deleted.metrics["numDeletedRows"] == 10

    live = {row["id"]: row["amount"] for row in _live(path)}
    assert len(live) == 91 and live[500] == 2 and 5 not in live and live[50] == 500
    assert _delta(path).history()[0]["operation"] == "DELETE"
    changes = pa.table(_delta(path).load_cdf(starting_version=1, ending_version=1).read_all()).to_pylist()
    assert sorted((r["id"], r["_change_type"]) for r in changes) == [
        (5, "update_postimage"),
        (5, "update_preimage"),
        (500, "insert"),
    ]
    keys = _keys(s3_server, path)
    # Data files stay where Spark wrote them (a folder per write, then the partition folders); no
    # staging folder is left, and nothing of the table lies outside its prefix.
    data = [k for k in keys if k.endswith(".parquet") and "/_delta_log/" not in k]
    assert data and all(k.split("/")[2].startswith("w") for k in data)
    assert not [k for k in keys if "_deltamerge_staging" in k or "_temporary" in k]
    assert all(k.startswith("warehouse/orders/") for k in keys)
    commits = [k for k in keys if k.startswith("warehouse/orders/_delta_log/") and k.endswith(".json")]
    assert len(commits) == 3


def test_two_writers_append_concurrently_and_neither_is_lost(spark, s3_server):
    path = _table(s3_server, "events")
    write_dataframe(spark, spark.range(10), WriteRequest(TableLocation.of(path), "create_or_replace"))
    base = load_snapshot(TableLocation.of(path))
    assert base is not None
    errors: list[BaseException] = []

    def append(start: int) -> None:
        try:
            frame = spark.range(start, start + 5)
            write_dataframe(spark, frame, WriteRequest(TableLocation.of(path), "append"))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=append, args=(start,)) for start in (100, 200, 300)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [e for e in errors if not isinstance(e, ConcurrentModification)] == []
    assert _delta(path).version() == 3
    assert len(_live(path)) == 25


def test_delta_rs_and_the_engine_commit_to_one_s3_table_at_once(spark, s3_server):
    """A table delta-rs created on S3 (its own conditional-put commits), merged into by the engine,
    then appended to by both at once: every commit lands, each version has one writer."""
    path = _table(s3_server, "shared")
    options = TableLocation.of(path).deltalake_options()
    write_deltalake(
        path, pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}), storage_options=options
    )
    source = spark.createDataFrame([(2, "B"), (3, "c")], "id long, v string")
    spec = MergeSpec.from_config("shared", {"unique_key": "id", "source_alias": "s", "target_alias": "t"})
    merged = merge_into(spark, source, load_snapshot(TableLocation.of(path)), spec)  # type: ignore[arg-type]
    assert merged.version == 1 and merged.metrics["numTargetRowsUpdated"] == 1
    errors: list[BaseException] = []

    def ours(start: int) -> None:
        try:
            frame = spark.range(start, start + 5).selectExpr("id", "'ours' as v")
            write_dataframe(spark, frame, WriteRequest(TableLocation.of(path), "append"))
        except BaseException as error:
            errors.append(error)

    def theirs(start: int) -> None:
        try:
            rows = pa.table({"id": pa.array(range(start, start + 5), pa.int64()), "v": ["rs"] * 5})
            write_deltalake(path, rows, mode="append", storage_options=options)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=ours, args=(100 * (i + 1),)) for i in range(3)]
    threads += [threading.Thread(target=theirs, args=(1000 * (i + 1),)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    table = _delta(path)
    assert table.version() == 7
    live = _live(path)
    assert len(live) == 3 + 15 + 15
    assert {r["id"]: r["v"] for r in live}[2] == "B"
    writers = [h.get("engineInfo") or h.get("clientVersion") or "" for h in table.history()]
    assert len(writers) == 8


def test_stores_without_a_safe_commit_are_refused_by_name():
    with pytest.raises(StorageError, match="WASB"):
        load_snapshot(TableLocation.of("wasbs://container@account.blob.core.windows.net/t"))
    with pytest.raises(StorageError, match="HDFS"):
        load_snapshot(TableLocation.of("hdfs://namenode/t"))


def test_wrong_credentials_fail_naming_the_bucket_and_the_operation_not_the_secret(s3_server):
    from dbt.adapters.deltamerge.common.store_options import effective_options

    path = _table(s3_server, "locked")
    wrong = Stores(effective_options(os.environ, {"AWS_SECRET_ACCESS_KEY": "not-the-secret"}))
    with pytest.raises(StorageError) as raised:
        load_snapshot(TableLocation.of(path, wrong))
    with pytest.raises(StorageError) as written:
        storage.put_if_absent(wrong, f"{path}/_delta_log/{0:020d}.json", b"{}")
    bucket = path.split("/")[2]
    for error in (raised.value, written.value):
        assert bucket in str(error) and "not-the-secret" not in str(error)
    assert "list" in str(raised.value) and "write" in str(written.value)
    assert load_snapshot(TableLocation.of(path)) is None  # nothing was written


def test_a_missing_bucket_names_the_bucket_and_the_operation(s3_server):
    with pytest.raises(StorageError) as raised:
        storage.put_if_absent(Stores(), "s3a://no-such-bucket/t/_delta_log/00000000000000000000.json", b"{}")
    assert "no-such-bucket" in str(raised.value) and "write" in str(raised.value)
    assert os.environ["AWS_SECRET_ACCESS_KEY"] not in str(raised.value)


SOURCE_V1 = (
    "select 1 as id, 'placed' as status, date'2026-01-01' as day "
    "union all select 2, 'placed', date'2026-01-01' union all select 3, 'placed', date'2026-01-02'"
)
SOURCE_V2 = (
    "select 2 as id, 'shipped' as status, date'2026-01-01' as day "
    "union all select 4, 'placed', date'2026-01-03'"
)


class TestModelsOnS3:
    """dbt models whose ``location_root`` is on S3: a table, a delta_merge model with deletion
    vectors and the change feed, and a downstream model that reads it through the catalog. The
    bucket and folder names hold ``url``, ``URL``, ``password`` and ``token``: Spark redacts what it
    prints of every table here (``SHOW TBLPROPERTIES``), which the binding must never need."""

    @pytest.fixture(scope="class")
    def lake(self, s3_server):
        bucket = s3_server.make_bucket("curly-urls")
        return f"s3a://{bucket}/data_URLs/password_token-{uuid.uuid4().hex[:8]}"

    @pytest.fixture(scope="class")
    def models(self, lake):
        merge_config = {
            "materialized": "incremental",
            "incremental_strategy": "delta_merge",
            "unique_key": "id",
            "partition_by": ["day"],
            "location_root": lake,
            "tblproperties": {"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"},
        }
        source = "{% if var('batch', 1) == 1 %}" + SOURCE_V1 + "{% else %}" + SOURCE_V2 + "{% endif %}"
        return {
            "orders.sql": "{{ config("
            + ", ".join(f"{k}={v!r}" for k, v in merge_config.items())
            + ") }}\n"
            + source,
            "per_day.sql": "{{ config(materialized='table', location_root="
            + repr(lake)
            + ") }}\nselect day, count(*) as n, max(status) as top from {{ ref('orders') }} group by day",
        }

    def test_run_merge_and_read_through_the_catalog(self, project, s3_server, lake):
        from dbt.tests.util import run_dbt

        first = run_dbt(["run"])
        assert {r.node.name: r.adapter_response["delta_version"] for r in first.results} == {
            "orders": 0,
            "per_day": 0,
        }
        second = run_dbt(["run", "--vars", "batch: 2"])
        shown = dict(project.run_sql(f"show tblproperties {project.test_schema}.orders", fetch="all"))
        assert shown["deltamerge.location"] == "*********(redacted)"  # else this would prove nothing
        merged = next(r for r in second.results if r.node.name == "orders").adapter_response
        assert merged["delta_version"] == 1
        assert (merged["numTargetRowsUpdated"], merged["numTargetRowsInserted"]) == (1, 1)
        orders = f"{lake}/orders"
        live = {r["id"]: (r["status"], str(r["day"])) for r in _live(orders)}
        assert live == {
            1: ("placed", "2026-01-01"),
            2: ("shipped", "2026-01-01"),
            3: ("placed", "2026-01-02"),
            4: ("placed", "2026-01-03"),
        }
        # The downstream model read version 1 through the catalog (the manifest view): partition
        # values from the paths, the updated row's old version left out by its deletion vector.
        per_day = {str(r["day"]): (r["n"], r["top"]) for r in _live(f"{lake}/per_day")}
        assert per_day == {
            "2026-01-01": (2, "shipped"),
            "2026-01-02": (1, "placed"),
            "2026-01-03": (1, "placed"),
        }
        catalog = project.run_sql(
            f"select id, status, day from {project.test_schema}.orders order by id", fetch="all"
        )
        assert [(r[0], r[1], str(r[2])) for r in catalog] == [
            (1, "placed", "2026-01-01"),
            (2, "shipped", "2026-01-01"),
            (3, "placed", "2026-01-02"),
            (4, "placed", "2026-01-03"),
        ]
        changes = pa.table(
            _delta(orders).load_cdf(starting_version=1, ending_version=1).read_all()
        ).to_pylist()
        assert sorted((r["id"], r["_change_type"]) for r in changes) == [
            (2, "update_postimage"),
            (2, "update_preimage"),
            (4, "insert"),
        ]
        # No secret in the log, dbt's logs or run_results.json (the server's secret key).
        secret = s3_server.options()["AWS_SECRET_ACCESS_KEY"]
        texts = [Path(project.project_root, "target", "run_results.json").read_text()]
        logs = Path("logs", project.test_schema.split("_")[0])  # dbt-tests-adapter's log folder
        texts += [p.read_text() for p in [*Path(project.project_root).rglob("*.log"), *logs.glob("*.log")]]
        texts += [storage.read_bytes(Stores(), f"{orders}/_delta_log/{v:020d}.json").decode() for v in (0, 1)]
        assert texts[0] and all(secret not in text for text in texts)
        keys = _keys(s3_server, orders)
        prefix = orders.split("/", 3)[3]
        assert all(k.startswith(prefix.split("/")[0] + "/") for k in keys)
        assert any("/_deltamerge_catalog/v00000000000000000001/_spark_metadata/0" in k for k in keys)

    def test_optimize_vacuum_and_convert_on_s3(self, project, spark, s3_server, lake):
        from dbt.tests.util import run_dbt, run_dbt_and_capture

        orders = f"{lake}/orders"
        if not storage.is_dir(Stores(), orders):
            run_dbt(["run"])
            run_dbt(["run", "--vars", "batch: 2"])
        before = sorted((r["id"], r["status"]) for r in _live(orders))
        relation = f"{project.test_schema}.orders"
        run_dbt(["run-operation", "optimize", "--args", json.dumps({"relation": relation})])
        assert _delta(orders).history(1)[0]["operation"] == "OPTIMIZE"
        assert sorted((r["id"], r["status"]) for r in _live(orders)) == before

        def data_keys() -> list[str]:
            return [k for k in _table_keys(s3_server, orders) if k.endswith(".parquet")]

        files_before = [k for k in data_keys() if _data_file(k)]
        args = {"relation": relation, "retain_hours": 0, "enforce_retention": False}
        _, out = run_dbt_and_capture(["run-operation", "vacuum", "--args", json.dumps(args)])
        assert "Deleted " in out
        files_after = [k for k in data_keys() if _data_file(k)]
        assert len(files_after) == len(_delta(orders).file_uris()) < len(files_before)
        assert sorted((r["id"], r["status"]) for r in _live(orders)) == before
        catalog = project.run_sql(f"select count(*) from {relation}", fetch="one")
        assert catalog[0] == len(before)

        raw = f"{lake}/raw_events"
        spark.range(20).selectExpr("id", "id * 2 as twice").write.parquet(raw)
        convert_args = {"path": raw, "relation_name": f"{project.test_schema}.raw_events"}
        _, out = run_dbt_and_capture(
            ["run-operation", "convert_to_delta", "--args", json.dumps(convert_args)]
        )
        assert _delta(raw).version() == 0 and len(_live(raw)) == 20
        total = project.run_sql(f"select sum(twice) from {project.test_schema}.raw_events", fetch="one")
        assert total[0] == sum(i * 2 for i in range(20))
        # An existing table on S3 registered by its location, then written by a statement.
        registered = f"{project.test_schema}.orders_again"
        project.run_sql(f"create table {registered} using delta location '{orders}'")
        assert project.run_sql(f"select count(*) from {registered}", fetch="one")[0] == len(before)
        project.run_sql(f"delete from {registered} where id = 1")
        assert sorted(r["id"] for r in _live(orders)) == sorted(i for i, _ in before if i != 1)
        assert project.run_sql(f"select count(*) from {registered}", fetch="one")[0] == len(before) - 1


# --- separate dbt processes on one S3 table (each its own warehouse: two machines sharing a bucket)

DBT = str(Path(sys.executable).with_name("dbt"))
RACE_ORDERS = ["ab", "ba"] if os.environ.get("DELTAMERGE_RACE_ROUNDS") == "all" else ["ab"]
S3_KILL_POINTS = (
    ["after_staging", "commit_file_written", "before_catalog_bind"]
    if os.environ.get("DELTAMERGE_KILL_POINTS") == "all"
    else ["after_staging"]
)
PROFILE = """s3:
  target: dev
  outputs:
    dev:
      type: deltamerge
      method: session
      schema: s3
      warehouse: ./warehouse
      threads: 1
      storage_options: {}
      server_side_parameters: {spark.master: "local[1]", spark.sql.shuffle.partitions: "2"}
"""


def _project(root: Path, name: str, lake: str) -> Path:
    """A dbt project whose merge model ``orders`` lives at ``<lake>/orders``; the batch is a var:
    ``{start: n, count: k, status: s}`` upserts ids ``start .. start+k-1``."""
    project = root / name
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(
        f"name: {name}\nversion: '1.0'\nprofile: s3\nconfig-version: 2\n"
    )
    (project / "profiles.yml").write_text(PROFILE)
    (project / "models" / "orders.sql").write_text(
        "{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id', "
        f"location_root={lake!r}) }}}}\n"
        "select cast(id as bigint) as id, '{{ var('status', '') }}' as status "
        "from range({{ var('start', 0) }}, {{ var('start', 0) + var('count', 0) }})"
    )
    return project


def _dbt(project: Path, batch: dict[str, Any], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DBT, "run", "--profiles-dir", ".", "--vars", json.dumps(batch)],
        cwd=project,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.parametrize("order", RACE_ORDERS)
def test_two_dbt_processes_race_on_one_s3_table(s3_server, tmp_path, order):
    lake = f"s3a://{s3_server.make_bucket('race')}/{uuid.uuid4().hex[:8]}"
    a, b = _project(tmp_path, "a", lake), _project(tmp_path, "b", lake)
    created = _dbt(a, {"start": 0, "count": 10, "status": "base"})
    assert created.returncode == 0, created.stdout[-3000:]
    gate = tmp_path / "gate"
    gate.mkdir()
    roles = {"a": "first", "b": "second"} if order == "ab" else {"a": "second", "b": "first"}
    batches = {"a": {"start": 5, "count": 10, "status": "a"}, "b": {"start": 100, "count": 5, "status": "b"}}
    with ThreadPoolExecutor(2) as pool:
        runs = {
            name: pool.submit(_dbt, project, batches[name], DELTAMERGE_COMMIT_GATE=f"{gate}:{roles[name]}")
            for name, project in (("a", a), ("b", b))
        }
        results = {name: run.result() for name, run in runs.items()}
    for name, result in results.items():
        assert result.returncode == 0, f"{name}: {result.stdout[-3000:]}"
    table = _delta(f"{lake}/orders")
    assert table.version() == 2
    assert [h["operation"] for h in table.history()] == ["MERGE", "MERGE", "CREATE TABLE AS SELECT"]
    live = {r["id"]: r["status"] for r in _live(f"{lake}/orders")}
    expected = (
        {i: "base" for i in range(5)} | {i: "a" for i in range(5, 15)} | {i: "b" for i in range(100, 105)}
    )
    assert live == expected


def _with_profile(tmp_path: Path, profile: str) -> dict[str, str]:
    """The environment of a user whose S3 keys are only in a profile of the shared credentials file."""
    from tests.s3server import ACCESS_KEY, SECRET_KEY

    credentials = tmp_path / "aws-credentials"
    keys_of_lake = f"aws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n"
    credentials.write_text(f"[lake]\n{keys_of_lake}")
    keys = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
    env = {k: v for k, v in os.environ.items() if k not in keys}
    env.update(
        AWS_PROFILE=profile,
        AWS_SHARED_CREDENTIALS_FILE=str(credentials),
        AWS_CONFIG_FILE=str(tmp_path / "aws-config"),
        AWS_EC2_METADATA_DISABLED="true",
    )
    return env


def test_an_aws_profile_alone_reaches_the_store_from_dbt_and_spark(s3_server, tmp_path):
    lake = f"s3a://{s3_server.make_bucket('profile')}/{uuid.uuid4().hex[:8]}"
    project = _project(tmp_path, "p", lake)

    def run(batch: dict[str, Any], profile: str) -> subprocess.CompletedProcess[str]:
        command = [DBT, "run", "--profiles-dir", ".", "--vars", json.dumps(batch)]
        env = _with_profile(tmp_path, profile)
        return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=900)

    unknown = run({"start": 0, "count": 5, "status": "x"}, "no-such-profile")
    assert unknown.returncode != 0, unknown.stdout[-3000:]
    assert "the AWS profile 'no-such-profile'" in unknown.stdout, unknown.stdout[-3000:]
    assert not storage.exists(Stores(), f"{lake}/orders/_delta_log")
    for batch in ({"start": 0, "count": 5, "status": "one"}, {"start": 3, "count": 5, "status": "two"}):
        done = run(batch, "lake")
        assert done.returncode == 0, done.stdout[-3000:]
    table = _delta(f"{lake}/orders")
    assert [h["operation"] for h in table.history()] == ["MERGE", "CREATE TABLE AS SELECT"]
    assert {r["id"]: r["status"] for r in _live(f"{lake}/orders")} == {
        **{i: "one" for i in range(3)},
        **{i: "two" for i in range(3, 8)},
    }
    assert "deltamerge-test-secret" not in done.stdout


def test_spark_uploads_data_files_at_their_final_keys_never_copying_them(s3_server, tmp_path):
    """A dbt run whose every request (Spark's S3A and the engine's obstore) goes through the counting
    proxy: S3A's magic committer uploads each file to its key (multipart, completed at job commit);
    nothing is written under ``_temporary/`` and then copied, as Spark's default committer does."""
    from tests.s3faults import FaultProxy

    lake = f"s3a://{s3_server.make_bucket('magic')}/{uuid.uuid4().hex[:8]}"
    project = _project(tmp_path, "m", lake)
    proxy = FaultProxy(s3_server.endpoint)
    try:
        for batch in ({"start": 0, "count": 5, "status": "one"}, {"start": 3, "count": 5, "status": "two"}):
            done = _dbt(project, batch, AWS_ENDPOINT_URL=proxy.endpoint)
            assert done.returncode == 0, done.stdout[-3000:]
        requests = proxy.requests()
    finally:
        proxy.stop()
    sent = [(kind, unquote(f"{path}?{query}")) for kind, path, query in requests]
    staged = [p for kind, p in sent if kind in ("PUT", "POST") and "_temporary" in p]
    assert not staged, f"files were written under _temporary/ (to be copied into place): {staged[:3]}"
    assert [p for _, p in sent if "__magic" in p], "no upload went through S3A's magic committer"
    completions = [p for kind, p in sent if kind == "POST" and "uploadId=" in p]
    live = {uri.split("/", 3)[3] for uri in _delta(f"{lake}/orders").file_uris()}
    assert live and all(any(key in p for p in completions) for key in live), (live, completions)
    assert {r["id"]: r["status"] for r in _live(f"{lake}/orders")} == {
        **{i: "one" for i in range(3)},
        **{i: "two" for i in range(3, 8)},
    }


@pytest.mark.parametrize("point", S3_KILL_POINTS)
def test_a_dbt_process_killed_on_s3_leaves_a_valid_version_and_the_next_run_converges(
    s3_server, tmp_path, point
):
    lake = f"s3a://{s3_server.make_bucket('kill')}/{uuid.uuid4().hex[:8]}"
    project = _project(tmp_path, "k", lake)
    first, second = {"start": 0, "count": 10, "status": "one"}, {"start": 5, "count": 10, "status": "two"}
    assert _dbt(project, first).returncode == 0
    killed = _dbt(project, second, DELTAMERGE_CRASH_AT=point)
    assert killed.returncode == -9, killed.stdout[-3000:]
    table = f"{lake}/orders"
    committed = point == "before_catalog_bind"
    assert _delta(table).version() == (1 if committed else 0)
    one = {i: "one" for i in range(10)}
    two = {**one, **{i: "two" for i in range(5, 15)}}
    assert {r["id"]: r["status"] for r in _live(table)} == (two if committed else one)
    again = _dbt(project, second)
    assert again.returncode == 0, again.stdout[-3000:]
    assert {r["id"]: r["status"] for r in _live(table)} == two
    # The killed write's files are orphans no version names: VACUUM (no retention) removes them,
    # with the files older versions removed, leaving exactly the latest version's.
    before = {k for k in _table_keys(s3_server, table) if k.endswith(".parquet") and _data_file(k)}
    named = {uri.split("/", 3)[3] for uri in _delta(table).file_uris()}
    assert named < before
    vacuum = {"relation": "s3.orders", "retain_hours": 0, "enforce_retention": False}
    vacuumed = subprocess.run(
        [DBT, "run-operation", "vacuum", "--profiles-dir", ".", "--args", json.dumps(vacuum)],
        cwd=project, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert vacuumed.returncode == 0, vacuumed.stdout[-3000:]
    assert {k for k in _table_keys(s3_server, table) if k.endswith(".parquet") and _data_file(k)} == named
    assert {r["id"]: r["status"] for r in _live(table)} == two


SHOP = Path(__file__).resolve().parents[2] / "examples" / "shop"


@pytest.mark.skipif(not SLOW, reason="the slow tier: DELTAMERGE_SLOW=1 runs it (two minutes)")
def test_the_example_project_runs_with_its_warehouse_on_s3(s3_server, tmp_path):
    """The README's example project, its profile's `s3` target: the warehouse on S3 (its tables), the
    metastore and the warm server's state on this machine; delta-rs reads every table there."""
    project = tmp_path / "shop"
    shutil.copytree(SHOP, project, ignore=shutil.ignore_patterns("warehouse", "target", "logs"))
    warehouse = f"s3a://{s3_server.make_bucket('shop')}/dbt"
    home = tmp_path / "data"
    env = {**os.environ, "SHOP_WAREHOUSE": warehouse, "XDG_DATA_HOME": str(home), "AWS_ALLOW_HTTP": "true"}
    try:
        demo = subprocess.run(
            [sys.executable, "demo.py", "--target", "s3"], cwd=project, env=env,
            capture_output=True, text=True, timeout=1500,
        )  # fmt: skip
        (tmp_path / "demo.log").write_text(demo.stdout + demo.stderr)
        assert demo.returncode == 0, demo.stdout[-4000:] + demo.stderr[-2000:]
    finally:
        stopped = subprocess.run(
            [str(Path(sys.executable).parent / "deltamerge-server"), "stop", "--warehouse", warehouse],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert stopped.stdout.startswith("Stopped the server"), stopped.stdout + stopped.stderr
    orders = _delta(f"{warehouse}/shop.db/orders")
    merge = orders.history()[0]
    assert (merge["operation"], orders.version()) == ("MERGE", 1)
    metrics = {k: merge["operationMetrics"][k] for k in ("numTargetRowsInserted", "numTargetRowsUpdated")}
    assert {k: int(v) for k, v in metrics.items()} == {"numTargetRowsInserted": 2, "numTargetRowsUpdated": 1}
    assert "orders: Delta version 1, 6 rows" in demo.stdout
    assert "order   6  insert            status=placed" in demo.stdout
    for name in ("raw_orders", "customers", "order_changes", "daily_revenue"):
        assert _delta(f"{warehouse}/shop.db/{name}").version() >= 0, name
    # Only the metastore, the server's state and logs are local: no table data left this bucket.
    local = [p for p in home.rglob("*") if p.is_file()]
    assert any("metastore_db" in p.parts for p in local)
    assert not [p for p in local if p.suffix == ".parquet" or "_delta_log" in p.parts]
