"""Crash safety of CDC apply: real dbt processes SIGKILLed between the table's and the state's commits.

One SCD 1 model per crash point (each its own table and state). Batch 1 is applied normally;
batch 2 (updates, deletes, events older than stored deletes, new keys) is run once per model
with ``DELTAMERGE_CRASH_AT`` naming its point: the state's commit recorded and the table not
committed yet; the table committed, the state not (the catalog entry dropped, the merge
harness's and the DELETE's point, with ``DELTAMERGE_KILL_POINTS=all``; the merge harness kills
the shared commit path at every point). After
every kill delta-rs reads batch 1's or batch 2's rows and the log validator finds every file;
a re-run converges to batch 2's rows. Then batch 3 (events older than what batch 2 applied or
deleted, and newer ones) must give every model the rows an uninterrupted model has: the hidden
state converged too. ``DELTAMERGE_KILL_POINTS=all`` kills at every point.

Each point is a whole dbt process: this runs on the Connect backend (light dbt processes
against the test cluster); ``DELTAMERGE_KILL_SHAPES=all`` runs it on the embedded one too.
"""

from __future__ import annotations

import os

import pytest

from dbt.adapters.deltamerge.delta import CDC_POINTS, POINTS
from tests.conftest import ON_CONNECT
from tests.functional.test_kill_statements import _dbt, _project, _rows
from tests.validator import problems

pytestmark = [
    pytest.mark.connect,
    pytest.mark.skipif(
        not ON_CONNECT and os.environ.get("DELTAMERGE_KILL_SHAPES") != "all",
        reason="runs on the Connect backend (DELTAMERGE_KILL_SHAPES=all: here too)",
    ),
]
KILLS = (
    [*CDC_POINTS, *(p for p in POINTS if p != "after_deletion_vectors")]  # CDC targets: copy-on-write
    if os.environ.get("DELTAMERGE_KILL_POINTS") == "all"
    else ["cdc_state_recorded", "cdc_table_committed"]
)
# Batch 1: keys 0-39 upserted at 1, keys 40-44 deleted at 1. Batch 2: keys 0-9 updated at 2,
# keys 30-39 deleted at 2, keys 40-44 upserted at 0 (older than their delete: ignored), keys
# 50-54 new. Batch 3: keys 30-34 at 1 (older than their delete), keys 0-4 at 2 again with other
# values (already applied), keys 10-14 at 3.
MODEL = """{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id',
                  sequence_by='seq', apply_as_deletes="op = 'D'", except_column_list=['op', 'seq']) }}
{% set b = var('batch') %}
select id, 'U' as op, 1 as seq, concat('v', cast(id as string)) as v from range(40) where {{ b }} = 1
union all select id, 'D', 1, null from range(40, 45) where {{ b }} = 1
union all select id, 'U', 2, concat('w', cast(id as string)) from range(10) where {{ b }} = 2
union all select id, 'D', 2, null from range(30, 40) where {{ b }} = 2
union all select id, 'U', 0, 'back' from range(40, 45) where {{ b }} = 2
union all select id, 'U', 1, concat('n', cast(id as string)) from range(50, 55) where {{ b }} = 2
union all select id, 'U', 1, 'back' from range(30, 35) where {{ b }} = 3
union all select id, 'U', 2, 'other' from range(5) where {{ b }} = 3
union all select id, 'U', 3, concat('x', cast(id as string)) from range(10, 15) where {{ b }} = 3
"""


def test_cdc_runs_killed_between_commits_converge(tmp_path, request):
    project, tables, _ = _project(tmp_path, request)
    for name in ["reference", *KILLS]:
        (project / "models" / f"cdc_{name}.sql").write_text(MODEL)

    def run(batch: int, select: str = "cdc_*", crash: str | None = None):
        return _dbt(project, "run", "--vars", f"{{batch: {batch}}}", "--select", select, crash=crash)

    assert run(1).returncode == 0
    old = _rows(tables / "cdc_reference")
    done = run(2, "cdc_reference")
    assert done.returncode == 0, done.stdout[-3000:]
    new = _rows(tables / "cdc_reference")
    assert new != old

    for point in KILLS:
        table = tables / f"cdc_{point}"
        killed = run(2, f"cdc_{point}", crash=point)
        assert killed.returncode == -9, f"{point}: not reached:\n{killed.stdout[-2000:]}"
        assert _rows(table) in (old, new), f"{point}: neither batch 1's nor batch 2's rows"
        assert problems(str(table)) == [], point
        done = run(2, f"cdc_{point}")
        assert done.returncode == 0, done.stdout[-3000:]
        assert _rows(table) == new, f"{point}: no convergence after the kill"

    done = run(3)
    assert done.returncode == 0, done.stdout[-3000:]
    expected = _rows(tables / "cdc_reference")
    assert expected != new
    for point in KILLS:
        assert _rows(tables / f"cdc_{point}") == expected, f"{point}: the state did not converge"
        assert not os.listdir(tables / f"cdc_{point}" / "_deltamerge_cdc" / "_pending"), point
