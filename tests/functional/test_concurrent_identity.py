"""Separate dbt invocations insert into one table with an identity column at the same time.

Two projects (own dbt process, Spark, metastore; one shared server on the Connect backend) run
an append model into one table at one ``location_root``. Each insert assigns new values past
the identity column's high-water mark and advances the mark in its commit (a ``metaData``
action): as in Delta, two such commits from the same version conflict, the later one fails with
``MetadataChanged`` and commits nothing, and re-running it takes values past the winner's mark.
Rounds: one gated by ``DELTAMERGE_COMMIT_GATE`` (both read the same version: a real conflict),
then free ones (``DELTAMERGE_IDENTITY_ROUNDS``, default 2) started together. After every round
the identity values are unique, equal in number to the rows the successful invocations wrote,
and none is past the mark (the validator); a failed invocation re-run succeeds.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from deltalake import DeltaTable

from tests.conftest import ON_CONNECT
from tests.functional.helpers import live_rows
from tests.functional.test_concurrent_dbt_runs import _finish, _project, _responses, _start
from tests.validator import problems

pytestmark = pytest.mark.connect
# Each dbt process on the embedded backend starts its own JVM (~60 s a round on 2 cores): the
# rounds run on the Connect backend of `make test`; DELTAMERGE_RACE_ROUNDS=all runs them on either.
RUN = ON_CONNECT or os.environ.get("DELTAMERGE_RACE_ROUNDS") == "all"
FREE_ROUNDS = int(os.environ.get("DELTAMERGE_IDENTITY_ROUNDS", "2"))
ROWS = 500


def _write_model(project: Path, name: str, round_: int, location: Path) -> None:
    config = (
        "{{ config(materialized='incremental', incremental_strategy='append', "
        f"location_root='{location}', identity_columns={{'sk': {{'start': 1, 'step': 1}}}}) }}}}\n"
    )
    sql = f"select '{name}{round_}' as batch, cast(id as int) as n from range({ROWS})"
    (project / "models" / "events.sql").write_text(config + sql)


def _check(path: Path, expected_rows: int) -> int:
    values = [r["sk"] for r in live_rows(str(path))]
    assert len(values) == expected_rows and len(set(values)) == expected_rows
    fields = json.loads(DeltaTable(str(path)).schema().to_json())["fields"]
    mark = next(f for f in fields if f["name"] == "sk")["metadata"]["delta.identity.highWaterMark"]
    assert mark == max(values)
    assert problems(str(path)) == []
    return mark


@pytest.fixture(scope="module")
def identity_race(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("identity")
    location = root / "tables"
    url = request.getfixturevalue("cluster").connect_url if ON_CONNECT else None
    projects = {"a": _project(root, "a", url), "b": _project(root, "b", url)}
    _write_model(projects["a"], "a", 0, location)
    code, out = _finish(_start(projects["a"], None, None))
    assert code == 0, out[-3000:]
    return {"root": root, "location": location, "projects": projects, "rows": ROWS}


@pytest.mark.skipif(not RUN, reason="dbt processes race on the Connect backend (DELTAMERGE_RACE_ROUNDS=all)")
def test_two_inserting_invocations_from_one_version_conflict_on_the_mark(identity_race):
    location, projects = identity_race["location"], identity_race["projects"]
    gate = identity_race["root"] / "gate"
    gate.mkdir()
    for name in ("a", "b"):
        _write_model(projects[name], name, 1, location)
    processes = {"a": _start(projects["a"], gate, "first"), "b": _start(projects["b"], gate, "second")}
    outcome = {name: _finish(p) for name, p in processes.items()}
    assert outcome["a"][0] == 0, outcome["a"][1][-3000:]
    assert outcome["b"][0] == 1, outcome["b"][1][-3000:]
    lost = _responses(projects["b"])["events"]
    assert "MetadataChanged" in lost["message"] and "re-run the model" in lost["message"]
    identity_race["rows"] += ROWS
    _check(location / "events", identity_race["rows"])
    code, out = _finish(_start(projects["b"], None, None))  # the re-run takes values past the mark
    assert code == 0, out[-3000:]
    identity_race["rows"] += ROWS
    _check(location / "events", identity_race["rows"])


@pytest.mark.skipif(not RUN, reason="dbt processes race on the Connect backend (DELTAMERGE_RACE_ROUNDS=all)")
@pytest.mark.parametrize("round_", range(FREE_ROUNDS))
def test_inserting_invocations_started_together_never_share_a_value(identity_race, round_):
    location, projects = identity_race["location"], identity_race["projects"]
    for name in ("a", "b"):
        _write_model(projects[name], name, 2 + round_, location)
    processes = {name: _start(projects[name], None, None) for name in ("a", "b")}
    outcome = {name: _finish(p) for name, p in processes.items()}
    for name, (code, out) in outcome.items():
        result = _responses(projects[name])["events"]
        if code == 0:
            identity_race["rows"] += ROWS
        else:
            assert "Concurrent" in result["message"] or "MetadataChanged" in result["message"], out[-3000:]
    _check(location / "events", identity_race["rows"])
