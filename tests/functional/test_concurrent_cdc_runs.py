"""Two dbt invocations of one CDC model (SCD 1) at the same time, round after round.

Two projects hold a model of one name at one ``location_root`` (as in
``test_concurrent_dbt_runs.py``), each run fed its own batch of change events, started
together. Whatever the timing: an invocation that reports success applied its batch (table
and hidden state), one that failed names a Delta conflict and changed nothing, and re-running
it (as a user would) applies it. After every round the table equals the pure reference with
every batch applied once, in the order the invocations committed; late events stay ignored
across the two writers (a key's state written by one is honoured by the other).

Runs on the Connect backend of ``make test`` (a light client per invocation); on the embedded
one with ``DELTAMERGE_RACE_ROUNDS=all``.
"""

from __future__ import annotations

import os

import pytest
from deltalake import DeltaTable

from tests.backend import ON_CONNECT
from tests.cdc_reference import Scd1
from tests.functional.test_concurrent_dbt_runs import _finish, _project, _responses, _start
from tests.validator import problems

pytestmark = [
    pytest.mark.connect,
    pytest.mark.skipif(
        not ON_CONNECT and os.environ.get("DELTAMERGE_RACE_ROUNDS") != "all",
        reason="a JVM per dbt invocation on the embedded backend; runs on the Connect backend of make test",
    ),
]
CONFIG = (
    "{{{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id', "
    "sequence_by='ts', apply_as_deletes=\"op = 'D'\", except_column_list=['op', 'ts'], "
    "location_root='{location}') }}}}\n"
)
# (project a's events, project b's events) per round: (id, op, ts, v).
ROUNDS = [
    # a inserts new keys, b updates stored ones: both may commit.
    ([(100, "U", 10, "a1"), (101, "U", 10, "a1")], [(1, "U", 10, "b1"), (2, "D", 10, None)]),
    # both change key 3 (and a deletes 4): the later commit conflicts, or applies after the first.
    ([(3, "U", 20, "a2"), (4, "D", 20, None)], [(3, "U", 21, "b2"), (5, "U", 21, "b2")]),
    # a's event for key 1 is older than b1's (late), b's for key 100 newer than a1's.
    ([(1, "U", 5, "late"), (6, "U", 30, "a3")], [(100, "U", 30, "b3"), (1, "U", 31, "b3")]),
]


def _sql(events: list[tuple]) -> str:
    values = ", ".join(
        "({}, '{}', {}, {})".format(i, op, ts, "null" if v is None else f"'{v}'") for i, op, ts, v in events
    )
    return (
        "select cast(id as int) id, op, cast(ts as int) ts, cast(v as string) v "
        f"from values {values} as t(id, op, ts, v)"
    )


def _write(project, location, events: list[tuple]) -> None:
    (project / "models" / "people.sql").write_text(CONFIG.format(location=location) + _sql(events))


def _events(batch: list[tuple]) -> list[dict]:
    return [{"id": i, "op": op, "seq": ts, "v": v} for i, op, ts, v in batch]


def _table(path: str) -> list[dict]:
    rows = DeltaTable(path).to_pyarrow_table().to_pylist()
    return sorted(({"id": r["id"], "v": r["v"]} for r in rows), key=lambda r: r["id"])


def test_two_invocations_of_one_cdc_model(request, tmp_path_factory):
    root = tmp_path_factory.mktemp("cdc_race")
    location = root / "tables"
    url = request.getfixturevalue("cluster").connect_url if ON_CONNECT else None
    projects = {name: _project(root, name, url) for name in ("a", "b")}
    first = [(k, "U", 1, "v0") for k in range(1, 8)]
    _write(projects["a"], location, first)
    code, out = _finish(_start(projects["a"], None, None))
    assert code == 0, out[-3000:]
    path = str(location / "people")
    reference = Scd1(("v",))
    reference.run(_events(first))

    for number, batches in enumerate(ROUNDS):
        for project, batch in zip(projects.values(), batches, strict=True):
            _write(project, location, batch)
        before = DeltaTable(path).version()
        processes = {name: _start(project, None, None) for name, project in projects.items()}
        outcome = {name: _finish(p) for name, p in processes.items()}
        results = {name: _responses(projects[name])["people"] for name in projects}
        won = sorted(
            (r["adapter_response"]["delta_version"], name)
            for name, r in results.items()
            if r["status"] == "success"
        )
        assert won, {n: o[1][-2000:] for n, o in outcome.items()}
        assert [v for v, _ in won] == list(range(before + 1, before + 1 + len(won))), number
        for _, name in won:
            reference.run(_events(batches["ab".index(name)]))
        assert _table(path) == reference.rows(), number
        for name, result in results.items():
            if result["status"] == "success":
                continue
            assert "Concurrent" in result["message"] and "re-run the model" in result["message"], outcome[
                name
            ]
            code, out = _finish(_start(projects[name], None, None))  # the user re-runs it
            assert code == 0, out[-3000:]
            reference.run(_events(batches["ab".index(name)]))
            assert _table(path) == reference.rows(), (number, name)
        assert problems(path) == []
        assert problems(os.path.join(path, "_deltamerge_cdc")) == []
    assert {"id": 1, "v": "b3"} in reference.rows()  # a's late event for key 1 was ignored
