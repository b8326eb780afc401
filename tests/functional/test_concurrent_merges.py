"""Real processes, each with its own Spark session, racing merges on one table.

Each worker waits at a barrier just before its first commit attempt, so both commits
race for the same version every time: the outcome is decided by Delta's conflict
rules, not by timing luck.

On the Connect backend of ``make test`` the workers are Connect clients of the test cluster's
server (the merge engine and its commits run in each worker's own process, as with ``method:
connect``); on the embedded backend each worker starts its own JVM (~40 s per worker on 2 cores),
so only the same-file conflict runs there unless ``DELTAMERGE_RACE_ROUNDS=all``.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import tempfile

import pytest
from deltalake import DeltaTable

from dbt.adapters.deltamerge.delta import TableLocation
from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
from tests.backend import ON_CONNECT
from tests.validator import problems

pytestmark = pytest.mark.connect
SESSION = {"spark.master": "local[1]", "spark.sql.shuffle.partitions": "1", "spark.driver.memory": "1g"}
connect_only = pytest.mark.skipif(
    not ON_CONNECT and os.environ.get("DELTAMERGE_RACE_ROUNDS") != "all",
    reason="a JVM per worker on the embedded backend; runs on the Connect backend of make test",
)


def _worker(path: str, operations: list[tuple[str, list[int], str]], barrier, out, url: str | None) -> None:
    from dbt.adapters.deltamerge.delta import ConcurrentModification, TableLocation, load_snapshot, storage
    from dbt.adapters.deltamerge.merge import MergeSpec, merge_into
    from dbt.adapters.deltamerge.spark.embedded import start_session

    if url:
        from dbt.adapters.deltamerge.spark.connect import connect_session

        spark = connect_session(url, {"spark.sql.shuffle.partitions": "1"})
    else:
        spark = start_session(tempfile.mkdtemp(prefix="worker"), dict(SESSION))
    original = storage.put_if_absent
    waited = {"done": barrier is None}

    def racing_put(target: str, data: bytes) -> bool:
        if not waited["done"]:
            waited["done"] = True
            barrier.wait(timeout=300)
        return original(target, data)

    storage.put_if_absent = racing_put  # type: ignore[assignment]  # the commit's put-if-absent
    results = []
    for kind, keys, value in operations:
        rows = spark.createDataFrame([(k, value) for k in keys], "id int, v string")
        try:
            if kind == "append":
                version = write_dataframe(spark, rows, WriteRequest(TableLocation.of(path), "append")).version
            else:
                config = {"unique_key": "id", **({"when_matched": []} if kind == "insert" else {})}
                snapshot = load_snapshot(TableLocation.of(path))
                assert snapshot is not None
                version = merge_into(spark, rows, snapshot, MergeSpec.from_config("m", config)).version
            results.append((kind, keys, value, version, None))
        except ConcurrentModification as exc:
            results.append((kind, keys, value, None, f"{type(exc).__name__}: {exc}"))
    out.put(results)
    if not url:
        spark.stop()


def _run(
    path: str, plans: list[list[tuple[str, list[int], str]]], url: str | None, *, race: bool = True
) -> list:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(plans)) if race else None
    out = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(path, plan, barrier, out, url)) for plan in plans]
    for p in procs:
        p.start()
    results = [r for _ in procs for r in out.get(timeout=600)]
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    return results


@pytest.fixture
def url(request) -> str | None:
    return request.getfixturevalue("cluster").connect_url if ON_CONNECT else None


@pytest.fixture
def table(spark, tmp_path) -> str:
    path = str(tmp_path / "t")
    # 20 files, each a contiguous range of 100 ids
    rows = spark.range(2000).selectExpr("cast(id as int) as id", "'v' as v").repartitionByRange(20, "id")
    write_dataframe(spark, rows, WriteRequest(TableLocation.of(path), "create_or_replace"))
    assert len(DeltaTable(path).file_uris()) == 20
    return path


def _values(path: str) -> dict[int, str]:
    return {r["id"]: r["v"] for r in DeltaTable(path).to_pyarrow_table().to_pylist()}


@connect_only
def test_merges_touching_disjoint_files_both_commit(table, url):
    results = _run(table, [[("upsert", [5, 6], "a")], [("upsert", [1005, 1006], "b")]], url)
    assert sorted(r[3] for r in results) == [1, 2] and all(r[4] is None for r in results)
    values = _values(table)
    assert [values[k] for k in (5, 6, 1005, 1006)] == ["a", "a", "b", "b"] and len(values) == 2000
    assert problems(table) == []


def test_merges_touching_the_same_file_one_commits_one_fails(table, url):
    results = _run(table, [[("upsert", [5, 6], "a")], [("upsert", [7, 8], "b")]], url)
    won = [r for r in results if r[3] is not None]
    lost = [r for r in results if r[3] is None]
    assert len(won) == 1 and len(lost) == 1 and won[0][3] == 1
    assert lost[0][4].startswith("ConcurrentDeleteRead") and "re-run" in lost[0][4]
    values = _values(table)
    assert all(values[k] == won[0][2] for k in won[0][1]) and all(values[k] == "v" for k in lost[0][1])
    assert problems(table) == []


@connect_only
def test_an_append_racing_an_insert_only_merge_both_land(table, url):
    results = _run(table, [[("append", [5000, 5001], "a")], [("insert", [6000, 5], "b")]], url)
    assert sorted(r[3] for r in results) == [1, 2]
    values = _values(table)
    assert values[5000] == "a" and values[6000] == "b" and values[5] == "v" and len(values) == 2003
    assert problems(table) == []


@connect_only
def test_stress_four_processes_six_merges_each(table, url):
    rng = random.Random(7)
    plans = [[("upsert", rng.sample(range(2100), 3), f"w{w}-{i}") for i in range(6)] for w in range(4)]
    results = _run(table, plans, url, race=False)
    committed = sorted((r for r in results if r[3] is not None), key=lambda r: r[3])
    versions = [r[3] for r in committed]
    assert versions == list(range(1, len(versions) + 1)), "versions must be contiguous"
    assert all(r[4].split(":")[0].startswith("Concurrent") for r in results if r[3] is None)
    expected = {k: "v" for k in range(2000)}
    for _, keys, value, _, _ in committed:  # replay the committed merges serially
        expected.update(dict.fromkeys(keys, value))
    assert _values(table) == expected
    assert problems(table) == []
    assert len(committed) >= 6, os.linesep.join(str(r) for r in results if r[3] is None)
