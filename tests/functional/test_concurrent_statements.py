"""A SQL statement in one dbt process races a ``dbt run`` of the same table in another.

Project ``a`` runs two ``delta_merge`` models (as in ``test_concurrent_dbt_runs.py``); project
``b`` binds the same Delta tables by ``LOCATION`` and changes them with ``dbt run-operation``
(a macro's ``run_query``, as a hook or a clean-up macro would): a DELETE of a row in another
file of one table, an UPDATE of a row in the very file the merge rewrites in the other. The
commit gate (``DELTAMERGE_COMMIT_GATE``) lines the two processes up on each table, so both
read the same version and Delta's rules decide, in both commit orders:

- ``stmt_disjoint``: the merge and the DELETE touch different files: both commit, and the
  table equals applying both;
- ``stmt_same_file``: the later of the merge and the UPDATE fails with
  ``ConcurrentDeleteRead`` naming the table and "re-run", committing nothing.

Runs on the Connect backend of ``make test`` (a light client per invocation); on the embedded
one with ``DELTAMERGE_RACE_ROUNDS=all``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from deltalake import DeltaTable

from tests.backend import ON_CONNECT
from tests.functional.test_concurrent_dbt_runs import (
    FIRST_RUN,
    _config,
    _finish,
    _project,
    _responses,
    _rows,
    _start,
)
from tests.validator import problems

pytestmark = [
    pytest.mark.connect,
    pytest.mark.skipif(
        not ON_CONNECT and os.environ.get("DELTAMERGE_RACE_ROUNDS") != "all",
        reason="a JVM per dbt invocation on the embedded backend; runs on the Connect backend of make test",
    ),
]
DISJOINT, SAME_FILE = "stmt_disjoint", "stmt_same_file"
# Ids are even 0..3998 in 20 files of 100 rows: file i holds 200*i .. 200*i + 198.
# Per round r: the merge updates `merged` and inserts `merged + 1`; the DELETE removes `deleted`
# (another file); the UPDATE changes `updated` (the merge's file).
KEYS = [
    {"merged": 400, "deleted": 3000, "updated": 410},
    {"merged": 420, "deleted": 3020, "updated": 430},
]
WHO_COMMITS_FIRST = ["statement", "merge"]


def _write_models(project: Path, location: Path, round_: int) -> None:
    merged = KEYS[round_]["merged"]
    value = f"m{round_}"
    sql = f"select {merged} as id, '{value}' as v union all select {merged + 1} as id, '{value}' as v"
    (project / "models" / f"{DISJOINT}.sql").write_text(_config(location) + sql)
    after_disjoint = f"-- depends_on: {{{{ ref('{DISJOINT}') }}}}\n"  # one order of tables in both processes
    (project / "models" / f"{SAME_FILE}.sql").write_text(_config(location) + after_disjoint + sql)


def _write_macro(project: Path, location: Path, round_: int) -> None:
    keys = KEYS[round_]
    binds = "\n".join(
        f'{{% do run_query("create table if not exists " ~ target.schema ~ ".{t} '
        f"location '{location / t}'\") %}}"
        for t in (DISJOINT, SAME_FILE)
    )
    (project / "macros" / "race.sql").write_text(
        "{% macro race() %}\n"
        '{% do run_query("create schema if not exists " ~ target.schema) %}\n'
        f"{binds}\n"
        f'{{% do run_query("delete from " ~ target.schema ~ ".{DISJOINT} where id = {keys["deleted"]}") %}}\n'
        f'{{% do run_query("update " ~ target.schema ~ ".{SAME_FILE} set v = \'s{round_}\' '
        f'where id = {keys["updated"]}") %}}\n'
        "{% endmacro %}\n"
    )


@pytest.fixture(scope="module")
def race(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("statement_race")
    location = root / "tables"
    url = request.getfixturevalue("cluster").connect_url if ON_CONNECT else None
    runner, statements = _project(root, "a", url), _project(root, "b", url)
    (statements / "macros").mkdir()
    for model in (DISJOINT, SAME_FILE):
        (runner / "models" / f"{model}.sql").write_text(_config(location) + FIRST_RUN)
    code, out = _finish(_start(runner, None, None))
    assert code == 0, out[-3000:]
    expected = {model: {i * 2: "v0" for i in range(2000)} for model in (DISJOINT, SAME_FILE)}
    return {
        "root": root,
        "location": location,
        "runner": runner,
        "statements": statements,
        "expected": expected,
    }


@pytest.mark.parametrize("round_", range(len(KEYS)), ids=[f"{w}-commits-first" for w in WHO_COMMITS_FIRST])
def test_a_statement_races_a_dbt_run_of_the_same_table(race, round_):
    location, runner, statements = race["location"], race["runner"], race["statements"]
    keys, first = KEYS[round_], WHO_COMMITS_FIRST[round_]
    _write_models(runner, location, round_)
    _write_macro(statements, location, round_)
    before = {m: DeltaTable(str(location / m)).version() for m in (DISJOINT, SAME_FILE)}
    gate = race["root"] / f"gate{round_}"
    gate.mkdir()

    roles = (
        {"statement": "first", "merge": "second"}
        if first == "statement"
        else {"statement": "second", "merge": "first"}
    )
    merge = _start(runner, gate, roles["merge"])
    time.sleep(1.0)
    statement = _start(statements, gate, roles["statement"], ("run-operation", "race"))
    (merge_code, merge_out), (statement_code, statement_out) = _finish(merge), _finish(statement)

    # stmt_disjoint: both commit, in the gate's order, and the rows are both changes applied.
    assert _responses(runner)[DISJOINT]["status"] == "success", merge_out[-3000:]
    disjoint = DeltaTable(str(location / DISJOINT))
    assert disjoint.version() == before[DISJOINT] + 2, statement_out[-3000:]
    history = [h["operation"] for h in disjoint.history(2)]
    assert history == (["DELETE", "MERGE"] if first == "merge" else ["MERGE", "DELETE"])
    race["expected"][DISJOINT].update({keys["merged"]: f"m{round_}", keys["merged"] + 1: f"m{round_}"})
    del race["expected"][DISJOINT][keys["deleted"]]
    assert _rows(location / DISJOINT) == race["expected"][DISJOINT]

    # stmt_same_file: the first committer wins; the other names the conflict and commits nothing.
    same_file = DeltaTable(str(location / SAME_FILE))
    assert same_file.version() == before[SAME_FILE] + 1
    if first == "statement":
        assert statement_code == 0, statement_out[-3000:]
        assert merge_code == 1, merge_out[-3000:]
        lost = _responses(runner)[SAME_FILE]
        assert lost["status"] == "error" and "ConcurrentDeleteRead" in lost["message"]
        assert "files this MERGE read were removed" in lost["message"] and "UPDATE" in lost["message"]
        assert same_file.history(1)[0]["operation"] == "UPDATE"
        race["expected"][SAME_FILE][keys["updated"]] = f"s{round_}"
    else:
        assert merge_code == 0, merge_out[-3000:]
        assert statement_code == 1, statement_out[-3000:]
        assert (
            "ConcurrentDeleteRead" in statement_out and "files this UPDATE read were removed" in statement_out
        )
        assert str(location / SAME_FILE) in statement_out and "re-run the model or statement" in statement_out
        assert same_file.history(1)[0]["operation"] == "MERGE"
        race["expected"][SAME_FILE].update({keys["merged"]: f"m{round_}", keys["merged"] + 1: f"m{round_}"})
    assert _rows(location / SAME_FILE) == race["expected"][SAME_FILE]
    for model in (DISJOINT, SAME_FILE):
        assert problems(str(location / model)) == []
