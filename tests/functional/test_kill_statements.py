"""Crash safety of SQL statements and snapshots: real dbt processes SIGKILLed while committing.

A DELETE statement (``dbt run-operation``), an OPTIMIZE statement and a snapshot run (its MERGE
statement) are killed at crash points of their commit, one table per point: by default the points where a
statement's own steps meet the shared commit path (files placed and not committed; committed
with the catalog entry dropped, the DELETE's; the commit file written; the merge harness kills
before the catalog binding),
every point with ``DELTAMERGE_KILL_POINTS=all`` (the merge harness kills a model's merge at
every point). After every kill delta-rs reads either the
old or the new rows and the log validator finds every referenced file; a re-run converges
to the rows an uninterrupted run leaves, in Delta and in the catalog.

Each point is a whole dbt process: this runs on the Connect backend (light dbt processes
against the test cluster); ``DELTAMERGE_KILL_SHAPES=all`` runs it on the embedded one too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from deltalake import DeltaTable

from dbt.adapters.deltamerge.delta import POINTS
from tests.cluster import connect_profile
from tests.conftest import ON_CONNECT
from tests.functional.test_kill_harness import PROFILE, READ_CATALOG
from tests.validator import problems

pytestmark = [
    pytest.mark.connect,
    pytest.mark.skipif(
        not ON_CONNECT and os.environ.get("DELTAMERGE_KILL_SHAPES") != "all",
        reason="runs on the Connect backend (DELTAMERGE_KILL_SHAPES=all: here too)",
    ),
]
DBT = str(Path(sys.executable).with_name("dbt"))
KILLS = (
    [
        (kind, point)
        for kind in ("delete", "snapshot", "optimize")
        for point in POINTS
        if point != "after_deletion_vectors"
    ]
    if os.environ.get("DELTAMERGE_KILL_POINTS") == "all"
    else [
        ("delete", "mid_placement"),
        ("delete", "mid_catalog_bind"),
        ("snapshot", "commit_file_written"),
        ("optimize", "commit_file_written"),
    ]
)
PREFIX = {"delete": "del", "snapshot": "snap", "optimize": "opt"}
# Four small files: an OPTIMIZE compacts them into one, rows unchanged.
SMALL_FILES = (
    "{{ config(materialized='table') }}\n"
    "select /*+ REPARTITION(4) */ id, concat('v', cast(id as string)) as v from range(40)\n"
)
RUN_SQL = "{% macro run_sql(sql) %}{% do run_query(sql) %}{% endmacro %}\n"
TABLE = "{{ config(materialized='table') }}\nselect id, concat('v', cast(id as string)) as v from range(40)\n"
# Batch 2 changes ids 0-9 (a later updated_at), removes 30-39 and adds 40-44.
SOURCE = """{{ config(materialized='table') }}
{% set later = var("batch") if var("batch") == 2 else 1 %}
select id, concat('v', cast(id as string), '-{{ var("batch") }}') as v,
       timestamp'2026-01-01 00:00:00'
         + make_interval(0, 0, 0, case when id < 10 then {{ later }} else 1 end) as updated_at
from range({{ 30 if var("batch") == 2 else 40 }})
{% if var("batch") == 2 %}
union all select id, concat('n', cast(id as string)), timestamp'2026-01-05' from range(40, 45)
{% endif %}
"""
SNAPSHOT = """{% snapshot NAME %}
{{ config(unique_key='id', strategy='timestamp', updated_at='updated_at', target_schema='kill') }}
select * from {{ ref('SRC') }}
{% endsnapshot %}
"""


def _dbt(project: Path, *args: str, crash: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "DELTAMERGE_CRASH_AT"}
    if crash:
        env["DELTAMERGE_CRASH_AT"] = crash
    return subprocess.run(
        [DBT, *args, "--profiles-dir", "."], cwd=project, env=env, capture_output=True, text=True, timeout=900
    )


def _rows(path: Path) -> list[tuple]:
    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    return sorted(tuple(sorted((k, str(v)) for k, v in r.items())) for r in rows)


def _project(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Path, Path, str]:
    project = tmp_path / "killsql"
    for folder in ("models", "macros", "snapshots"):
        (project / folder).mkdir(parents=True)
    (project / "dbt_project.yml").write_text("name: kill\nversion: '1.0'\nprofile: kill\nconfig-version: 2\n")
    (project / "macros" / "run_sql.sql").write_text(RUN_SQL)
    if ON_CONNECT:
        cluster = request.getfixturevalue("cluster")
        (project / "profiles.yml").write_text(connect_profile("kill", cluster.connect_url, "kill"))
        return project, Path(cluster.warehouse) / "kill.db", cluster.connect_url
    (project / "profiles.yml").write_text(PROFILE)
    return project, project / "warehouse" / "kill.db", str(project / "warehouse")


def test_a_delete_and_a_snapshot_killed_at_commit_points_then_converge(tmp_path, request):
    project, tables, session = _project(tmp_path, request)
    names = ["reference", *{point for _, point in KILLS}]
    for name in names:
        (project / "models" / f"del_{name}.sql").write_text(TABLE)
        (project / "models" / f"src_{name}.sql").write_text(SOURCE)
        (project / "models" / f"opt_{name}.sql").write_text(SMALL_FILES)
        snapshot = SNAPSHOT.replace("NAME", f"snap_{name}").replace("SRC", f"src_{name}")
        (project / "snapshots" / f"snap_{name}.sql").write_text(snapshot)
    for args in (("run", "--vars", "{batch: 1}"), ("snapshot", "--vars", "{batch: 1}")):
        done = _dbt(project, *args)
        assert done.returncode == 0, done.stdout[-3000:]
    done = _dbt(project, "run", "--vars", "{batch: 2}", "--select", "src_*")
    assert done.returncode == 0, done.stdout[-3000:]

    def command(kind: str, name: str) -> tuple[str, ...]:
        if kind in ("delete", "optimize"):
            sql = (
                f"delete from kill.del_{name} where id % 3 = 0"
                if kind == "delete"
                else f"optimize kill.opt_{name}"
            )
            return ("run-operation", "run_sql", "--args", json.dumps({"sql": sql}))
        return ("snapshot", "--vars", "{batch: 2}", "--select", f"snap_{name}")

    kinds = ("delete", "snapshot", "optimize")
    old = {kind: _rows(tables / f"{PREFIX[kind]}_reference") for kind in kinds}
    for kind in kinds:
        done = _dbt(project, *command(kind, "reference"))
        assert done.returncode == 0, done.stdout[-3000:]
    new = {kind: _rows(tables / f"{PREFIX[kind]}_reference") for kind in kinds}
    assert new["delete"] != old["delete"] and new["snapshot"] != old["snapshot"]
    assert (
        new["optimize"] == old["optimize"] and len(DeltaTable(str(tables / "opt_reference")).file_uris()) == 1
    )

    for kind, point in KILLS:
        table = tables / f"{PREFIX[kind]}_{point}"
        killed = _dbt(project, *command(kind, point), crash=point)
        assert killed.returncode == -9, (
            f"{kind} {point}: the crash point was never reached:\n{killed.stdout[-2000:]}"
        )
        assert _rows(table) in (old[kind], new[kind]), f"{kind} {point}: neither the old nor the new rows"
        assert problems(str(table)) == [], (kind, point)
        done = _dbt(project, *command(kind, point))
        assert done.returncode == 0, done.stdout[-3000:]
        assert _rows(table) == new[kind], f"{kind} {point}: no convergence after the kill"
        assert problems(str(table)) == [], (kind, point)
        if kind == "optimize":  # compacted once, by the killed run or the re-run
            assert len(DeltaTable(str(table)).file_uris()) == 1, point
            assert [h["operation"] for h in DeltaTable(str(table)).history()].count("OPTIMIZE") == 1, point

    read = subprocess.run(
        [
            sys.executable,
            "-c",
            READ_CATALOG.replace("[r.id, r.v]", "sorted(map(str, r))"),
            session,
            *[f"del_{p}" for k, p in KILLS if k == "delete"],
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert read.returncode == 0, read.stderr[-3000:]
    catalog = json.loads(read.stdout.strip().splitlines()[-1])
    expected = sorted(
        sorted(map(str, (r["id"], r["v"])))
        for r in DeltaTable(str(tables / "del_reference")).to_pyarrow_table().to_pylist()
    )
    for kind, point in KILLS:
        if kind == "delete":
            assert catalog[f"del_{point}"] == expected, point
