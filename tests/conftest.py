"""Shared fixtures: one warehouse and one Spark session per pytest process.

Spark fixes its warehouse and metastore when the JVM starts, so every dbt invocation in
this process (dbt-tests-adapter runs dbt in-process) uses the same warehouse; each test
gets its own schema inside it.

``DELTAMERGE_TEST_BACKEND=connect`` runs the functional tests on a real standalone cluster
(master, worker, Spark Connect server started from the installed pyspark) with
``method: connect``; pyspark cannot mix both kinds of session in one process, so that is a
second pytest run (``make test`` does both). There, only tests marked ``connect`` run
unless ``DELTAMERGE_CONNECT_ALL=1``.
"""

from __future__ import annotations

import filecmp
import os
import uuid
from pathlib import Path

import pytest

from tests.backend import ON_CONNECT, ON_S3

pytest_plugins = ["dbt.tests.fixtures.project"]

SPARK_PARAMS = {
    "spark.master": "local[2]",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "2g",
}


def _installed_matches_source() -> None:
    """Stop at once when the installed package is not this source tree (run `make install`)."""
    import dbt.adapters.deltamerge as package
    import dbt.include.deltamerge as macros

    root = Path(__file__).resolve().parent.parent
    for installed, source in (
        (Path(package.__file__).parent, root / "dbt" / "adapters" / "deltamerge"),
        (Path(macros.__file__).parent, root / "dbt" / "include" / "deltamerge"),
    ):
        if installed.resolve() == source.resolve():
            continue
        files = [p.relative_to(source) for p in source.rglob("*") if p.suffix in (".py", ".sql", ".yml")]
        stale = [
            str(f)
            for f in files
            if not (installed / f).exists() or not filecmp.cmp(source / f, installed / f, shallow=False)
        ]
        if stale:
            pytest.exit(
                f"installed dbt-deltamerge differs from this source tree ({stale[:3]}): run `make install`"
            )


_installed_matches_source()

# Runtime settings a Connect client may set (the master and memory are the cluster's).
CONNECT_PARAMS = {"spark.sql.shuffle.partitions": "2"}


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    if not ON_CONNECT:
        pytest.skip("needs DELTAMERGE_TEST_BACKEND=connect")
    from tests.cluster import start_cluster

    running = start_cluster(str(tmp_path_factory.mktemp("cluster")), {"spark.sql.shuffle.partitions": "2"})
    yield running
    from dbt.adapters.deltamerge.spark.connect import close_sessions

    close_sessions()
    running.stop()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory):
    """A real S3 server (S3Proxy) for this process, its options set for the dbt process's stores."""
    if not ON_S3:
        pytest.skip("needs DELTAMERGE_TEST_STORE=s3")
    from tests.s3server import start_s3_server

    server = start_s3_server(str(tmp_path_factory.mktemp("s3")))
    # As a user would: the standard variables, read by the dbt process, Spark's JVM and delta-rs
    # alike (delta-rs reaches a plain-HTTP endpoint only when allowed); a warehouse on S3 keeps its
    # metastore in a folder of this run (``conf.warehouse_home``), not the user's.
    os.environ.update({**server.options(), "AWS_ALLOW_HTTP": "true"})
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("data"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def delta_spark(tmp_path_factory: pytest.TempPathFactory):
    """Delta Lake on Spark in a process of its own (``tests/delta_spark.py``): the oracle."""
    from tests.delta_spark import REQUIRED, DeltaSpark, DeltaUnavailable

    try:
        oracle = DeltaSpark(str(tmp_path_factory.mktemp("delta")))
    except DeltaUnavailable as error:
        if REQUIRED:
            pytest.fail(f"DELTAMERGE_REQUIRE_DELTA=1: {error}")
        pytest.skip(f"Delta on Spark is not available here (Maven Central unreachable?): {error}")
    yield oracle
    oracle.close()


@pytest.fixture(scope="session")
def warehouse(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The profile's warehouse: a folder, the cluster's, or on S3 (``DELTAMERGE_TEST_STORE=s3``)."""
    if ON_CONNECT:
        return request.getfixturevalue("cluster").warehouse
    if ON_S3:
        bucket = request.getfixturevalue("s3_server").make_bucket("warehouse")
        return f"s3a://{bucket}/{uuid.uuid4().hex[:8]}"
    return str(tmp_path_factory.mktemp("warehouse"))


@pytest.fixture
def lake_root(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A folder for a test's own tables: ``tmp_path``, or a fresh prefix of a bucket on S3."""
    if not ON_S3:
        return str(tmp_path)
    bucket = request.getfixturevalue("s3_server").make_bucket("lake")
    return f"s3a://{bucket}/{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def spark(request: pytest.FixtureRequest, warehouse: str):
    if ON_CONNECT:
        from dbt.adapters.deltamerge.spark.connect import connect_session

        return connect_session(request.getfixturevalue("cluster").connect_url, dict(CONNECT_PARAMS))
    from dbt.adapters.deltamerge.spark.embedded import start_session

    if ON_S3:
        from dbt.adapters.deltamerge.spark.committer import committer_conf, committer_jar
        from dbt.adapters.deltamerge.spark.conf import object_store_conf, warehouse_conf, warehouse_home

        options = request.getfixturevalue("s3_server").options()
        conf = {**SPARK_PARAMS, **object_store_conf(options), **warehouse_conf(warehouse)}
        conf.update(committer_conf(committer_jar(os.environ)))  # as a profile's session gets it
        return start_session(warehouse_home(warehouse, os.environ), conf)
    return start_session(warehouse, dict(SPARK_PARAMS))


@pytest.fixture(scope="class")
def dbt_profile_target(request: pytest.FixtureRequest, warehouse: str, spark) -> dict:
    if ON_CONNECT:
        return {
            "type": "deltamerge",
            "method": "connect",
            "host": request.getfixturevalue("cluster").connect_url,
            "schema": "analytics",
            "warehouse": warehouse,  # unused by `connect`; the tests' helpers find tables by it
            "threads": 1,
            "server_side_parameters": dict(CONNECT_PARAMS),
        }
    target = {
        "type": "deltamerge",
        "method": "session",
        "schema": "analytics",
        "warehouse": warehouse,
        "threads": 1,
        "server_side_parameters": dict(SPARK_PARAMS),
    }
    if ON_S3:
        target["storage_options"] = {}  # the S3 server's variables are the environment's
    return target


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "connect: also runs on the Spark Connect cluster backend by default")
    config.addinivalue_line("markers", "embedded_only: needs the embedded session (JVM access from the test)")
    config.addinivalue_line(
        "markers",
        "server: starts warm local Spark (Connect) servers of its own; runs in the Connect tier "
        "(`make test-connect`), `make test` leaves it out (-m 'not server')",
    )
    config.addinivalue_line(
        "markers", "s3: runs on an S3 server only (DELTAMERGE_TEST_STORE=s3, a run of its own)"
    )
    config.addinivalue_line(
        "markers", "delta: needs Delta Lake on Spark (its jars from Maven Central), the oracle process"
    )
    config.addinivalue_line(
        "markers", "stores: runs on a local disk, and on S3 too in the DELTAMERGE_TEST_STORE=s3 run"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    on_s3 = [item for item in items if item.get_closest_marker("s3") is not None]
    if on_s3 or ON_S3:
        also = [item for item in items if item.get_closest_marker("stores") is not None]
        keep = on_s3 + also if ON_S3 else [item for item in items if item.get_closest_marker("s3") is None]
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep
    if ON_CONNECT:
        run_all = os.environ.get("DELTAMERGE_CONNECT_ALL") == "1"
        keep = [
            item
            for item in items
            if f"{os.sep}functional{os.sep}" in str(item.fspath)
            and item.get_closest_marker("embedded_only") is None
            and (run_all or any(item.get_closest_marker(m) is not None for m in ("connect", "server")))
        ]
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep
    # Unit tests first: they fail fast and need no JVM. Then the longest files: two xdist workers
    # (`--dist loadfile`) take whole files in this order, so a long file collected last would
    # leave one worker running it alone (a stable sort: each file's tests keep their order).
    rank = {name: i for i, name in enumerate(_LONGEST_FIRST)}
    items.sort(
        key=lambda item: (
            0 if f"{os.sep}unit{os.sep}" in str(item.fspath) else 1,
            rank.get(item.path.name, len(rank)),
        )
    )


_LONGEST_FIRST = (
    # The Connect half's longest (left out of the embedded half, skipped at once, or short there):
    # the warm server's two files (~7 min each on 2 cores) first.
    "test_server_faults.py",
    "test_warm_server.py",
    "test_kill_statements.py",
    "test_kill_cdc.py",
    "test_connect.py",
    "test_concurrent_cdc_runs.py",
    "test_cdc_apply.py",
    "test_kill_harness.py",
    "test_dbt_suites_project.py",
    "test_example_project.py",
    "test_dbt_suites_utils.py",
    "test_benchmark_smoke.py",
    "test_snapshots.py",
    "test_merge_differential.py",
    "test_dbt_standard_suites.py",
    "test_concurrent_dbt_runs.py",
    "test_concurrent_statements.py",
    "test_dml_differential.py",
    "test_iceberg_catalog.py",  # ~2 min: a REST catalog server, Spark with Iceberg's runtime
)
