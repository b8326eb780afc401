"""Crash safety: real `dbt run` processes SIGKILLed at every step of a merge, then recovered.

One project has a model per table shape (unpartitioned, partitioned with every writer feature
a table of ours may have: row tracking, in-commit timestamps, deletion vectors, column mapping;
change data feed on) and crash point, each with its own seeded data. Batch 1 is merged normally; batch
2 is run once per model with ``DELTAMERGE_CRASH_AT`` naming its point, so the process
kills itself there. After every kill: delta-rs opens the table, its rows are exactly
batch 1's or batch 2's expected rows, and the log validator finds every referenced file.
Then one normal `dbt run` must converge every model to batch 2's rows, in Delta and in
the catalog. ``DELTAMERGE_KILL_ROUNDS`` repeats with more seeds (default 1).

The shapes are split between the backends (``make test`` runs both), each process of the
harness being a whole dbt run: the embedded backend, where every process starts its own JVM
and Derby metastore, kills the change-feed shape (data, change and catalog files); the
Connect backend, where each dbt process is a light client of the test cluster's server, kills
the partitioned one; the crash points are split between them (``KILL_POINTS``).
``DELTAMERGE_KILL_SHAPES=all`` runs every shape (the unpartitioned one too) on either backend.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from dbt.adapters.deltamerge.delta import POINTS
from tests.cluster import connect_profile
from tests.conftest import ON_CONNECT
from tests.functional.helpers import FEATURE_PROPERTIES, live_rows
from tests.validator import problems

pytestmark = pytest.mark.connect
DBT = str(Path(sys.executable).with_name("dbt"))
ROUNDS = int(os.environ.get("DELTAMERGE_KILL_ROUNDS", "1"))
# An identity column on the shapes `make test` kills: every inserting merge's commit advances its
# high-water mark (a metaData action), and the validator checks no value is past it or repeated.
ALL_SHAPES = {
    "unpartitioned": {},
    "partitioned": {
        "partition_by": ["p"],
        "tblproperties": FEATURE_PROPERTIES,
        "identity_columns": {"sk": {}},
    },
    # Merge-on-read too: the second batch's merge marks rows in deletion vectors beside the feed.
    "change_feed": {"change_data_feed": True, "deletion_vectors": True, "identity_columns": {"sk": {}}},
}
SHAPES = {
    name: shape
    for name, shape in ALL_SHAPES.items()
    if os.environ.get("DELTAMERGE_KILL_SHAPES") == "all"
    or name == ("partitioned" if ON_CONNECT else "change_feed")
}
# The points are split between the backends, so that `make test` kills at every point once: on
# the embedded one (a fresh JVM and Derby metastore per kill, ~45 s each on 2 cores) the two where
# the change feed's files and the embedded catalog are in flight, on Connect (a light client per
# kill) the others. DELTAMERGE_KILL_POINTS=all: every point on either.
_EMBEDDED_POINTS = ("commit_file_written", "mid_catalog_bind")
KILL_POINTS = (
    POINTS
    if os.environ.get("DELTAMERGE_KILL_POINTS") == "all"
    else tuple(p for p in POINTS if (p in _EMBEDDED_POINTS) != ON_CONNECT)
)
CLAUSES = {
    "when_matched": [
        {"condition": "DBT_INTERNAL_SOURCE.op = 'D'", "action": "delete"},
        {"action": "update", "set": "*"},
    ],
    "when_not_matched": [{"condition": "DBT_INTERNAL_SOURCE.op != 'D'", "action": "insert", "values": "*"}],
}
PROFILE = """
kill:
  target: local
  outputs:
    local:
      type: deltamerge
      schema: kill
      warehouse: ./warehouse
      threads: 1
      server_side_parameters:
        spark.master: "local[1]"
        spark.sql.shuffle.partitions: "2"
"""
READ_CATALOG = """
import json, sys
if sys.argv[1].startswith("sc://"):
    from dbt.adapters.deltamerge.spark.connect import connect_session
    spark = connect_session(sys.argv[1], {})
else:
    from dbt.adapters.deltamerge.spark.embedded import start_session
    spark = start_session(sys.argv[1], {"spark.master": "local[1]"})
print(json.dumps({m: sorted([r.id, r.v] for r in spark.table("kill." + m).collect()) for m in sys.argv[2:]}))
"""


def _batches(seed: int) -> tuple[list[tuple], list[tuple], dict, dict]:
    rng = random.Random(seed)
    first = [(i, f"a{i}", "U", i % 3) for i in range(30)]
    second = []
    for i in rng.sample(range(40), 15):  # updates, deletes, inserts of new keys
        second.append((i, f"b{i}", rng.choice("UUD"), i % 3))
    one = {i: v for i, v, _, _ in first}
    two = dict(one)
    for i, v, op, _ in second:
        if op == "D":
            two.pop(i, None)
        else:
            two[i] = v
    return first, second, one, two


def _model(first: list[tuple], second: list[tuple], shape: dict) -> str:
    config = {"materialized": "incremental", "incremental_strategy": "delta_merge", "unique_key": "id"}
    config.update(CLAUSES)
    config.update(shape)
    rows = [(1, *r) for r in first] + [(2, *r) for r in second]
    values = ", ".join(f"({b}, {i}, '{v}', '{op}', {p})" for b, i, v, op, p in rows)
    return (
        "{{ config(" + ", ".join(f"{k}={v!r}" for k, v in config.items()) + ") }}\n"
        f"select id, v, op, p from values {values} as t(batch, id, v, op, p)\n"
        "where batch = {{ var('batch') }}"
    )


def _writes_vectors(shape: dict) -> bool:
    return bool(shape.get("deletion_vectors")) or "delta.enableDeletionVectors" in shape.get(
        "tblproperties", {}
    )


def _dbt(project: Path, *args: str, crash: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("DELTAMERGE_CRASH_AT", None)
    if crash:
        env["DELTAMERGE_CRASH_AT"] = crash
    return subprocess.run(
        [DBT, *args, "--profiles-dir", "."], cwd=project, env=env, capture_output=True, text=True, timeout=900
    )


def _rows(path: str) -> dict[int, str]:
    return {r["id"]: r["v"] for r in live_rows(path)}


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_kill_at_every_point_then_converge(tmp_path, round_, request):
    project = tmp_path / "kill"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text("name: kill\nversion: '1.0'\nprofile: kill\nconfig-version: 2\n")
    warehouse, session = project / "warehouse", str(project / "warehouse")
    if ON_CONNECT:
        cluster = request.getfixturevalue("cluster")
        warehouse, session = Path(cluster.warehouse), cluster.connect_url
        (project / "profiles.yml").write_text(connect_profile("kill", cluster.connect_url, "kill"))
    else:
        (project / "profiles.yml").write_text(PROFILE)
    expected = {}
    for shape, config in SHAPES.items():
        for point in KILL_POINTS:
            if point == "after_deletion_vectors" and not _writes_vectors(config):
                continue  # a copy-on-write table's merge writes no vector file
            model = f"{shape}__{point}"
            first, second, one, two = _batches(zlib.crc32(f"{model}:{round_}".encode()))
            (project / "models" / f"{model}.sql").write_text(_model(first, second, config))
            expected[model] = (one, two)
    done = _dbt(project, "run", "--vars", "{batch: 1}")
    assert done.returncode == 0, done.stdout[-3000:]
    table = warehouse / "kill.db"

    for model in expected:
        point = model.split("__")[1]
        killed = _dbt(project, "run", "--select", model, "--vars", "{batch: 2}", crash=point)
        assert killed.returncode == -9, (
            f"{model}: the crash point was never reached:\n{killed.stdout[-2000:]}"
        )
        path = str(table / model)
        assert _rows(path) in expected[model], f"{model}: after the kill, neither the old nor the new rows"
        assert problems(path) == [], model

    done = _dbt(project, "run", "--vars", "{batch: 2}")
    assert done.returncode == 0, done.stdout[-3000:]
    for model in expected:
        path = str(table / model)
        assert _rows(path) == expected[model][1], f"{model}: no convergence after the kill"
        assert problems(path) == [], model
    read = subprocess.run(
        [sys.executable, "-c", READ_CATALOG, session, *expected],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert read.returncode == 0, read.stderr[-3000:]
    catalog = json.loads(read.stdout.strip().splitlines()[-1])
    for model, (_, two) in expected.items():
        assert catalog[model] == sorted([k, v] for k, v in two.items()), model
