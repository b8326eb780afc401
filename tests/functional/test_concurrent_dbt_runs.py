"""Two separate dbt projects run the same model into one Delta table at the same time.

Each project has its own dbt process, Spark and metastore (on the Connect backend: its own
dbt process and schema, one shared server); both models are named alike and live at one
``location_root``, so two invocations of one model write one table. The commit
gate (``DELTAMERGE_COMMIT_GATE``) makes both read the same version and commit one after the
other, so every round is a real race decided by Delta's rules, never by timing luck:

- ``upsert_disjoint``: each invocation updates and inserts keys of its own file; both
  commit, and the table equals the serial application of both merges;
- ``upsert_same_file``: both change keys of one file; the first commits, the second fails
  with ``ConcurrentDeleteRead``, the table and "re-run the model", committing nothing.

Rounds cover both commit orders (the later-started invocation committing first is the case
that lost a merge before) and, with ``DELTAMERGE_RACE_ROUNDS=all``, both orders of the two
projects' start times. They run on the Connect backend of ``make test`` (both commit orders),
where a dbt process is a light client (on the embedded one every invocation starts its own JVM
and Derby metastore: ~60 s a round on 2 cores, for the same engine and commit protocol);
``DELTAMERGE_RACE_ROUNDS=all`` runs all four on either backend. Free rounds
(``DELTAMERGE_FREE_RACES``, default 1 on the Connect backend, 0 on the embedded one for the
same reason) start both invocations at once with no gate: whatever the timing, every
invocation that reports success committed its own version, the failed ones name a Delta
conflict, and the rows equal the successful merges applied in turn.

A registered UniForm model (``database='lake'``, both profiles naming one Iceberg REST catalog
server): two gated invocations merge disjoint partitions, in both commit orders; both succeed and
the catalog ends at the latest Delta version with exactly Delta's rows (runs where the gated
rounds run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from deltalake import DeltaTable

from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
from tests.cluster import connect_profile
from tests.conftest import ON_CONNECT
from tests.functional.helpers import FEATURE_PROPERTIES, live_rows
from tests.validator import problems

pytestmark = pytest.mark.connect

DBT = str(Path(sys.executable).with_name("dbt"))
PROFILE = """
race:
  target: local
  outputs:
    local:
      type: deltamerge
      schema: race
      warehouse: ./warehouse
      threads: 1
      server_side_parameters:
        spark.master: "local[1]"
        spark.sql.shuffle.partitions: "2"
"""
MODELS = ("upsert_disjoint", "upsert_same_file")
# Even ids 0..3998 in 20 files of 100 rows: file i holds ids 200*i .. 200*i + 198.
FIRST_RUN = "select /*+ REPARTITION_BY_RANGE(20, id) */ cast(id * 2 as int) as id, 'v0' as v from range(2000)"
# (start order, which invocation commits first): "early" started first, "late" second.
ALL_ROUNDS = [("a", "early"), ("a", "late"), ("b", "early"), ("b", "late")]
# make test's Connect half runs both commit orders with ``a`` started first (the projects differ
# only in their keys); DELTAMERGE_RACE_ROUNDS=all runs the four, on either backend.
ROUNDS = (
    ALL_ROUNDS if os.environ.get("DELTAMERGE_RACE_ROUNDS") == "all" else ALL_ROUNDS[:2] if ON_CONNECT else []
)
FREE_RACES = int(os.environ.get("DELTAMERGE_FREE_RACES", "1" if ON_CONNECT else "0"))


def _config(location: Path, model: str | None = None) -> str:
    # Every writer feature on: the second commit's row ids start above the winner's high-water
    # mark, its in-commit timestamp above the winner's; merges mark rows in deletion vectors.
    # upsert_same_file maps no column names: its catalog binding is the view over the linked files.
    properties = dict(FEATURE_PROPERTIES)
    if model == "upsert_same_file":
        del properties["delta.columnMapping.mode"]
    return (
        "{{ config(materialized='incremental', incremental_strategy='delta_merge', "
        f"unique_key='id', location_root='{location}', tblproperties={properties!r}) }}}}\n"
    )


def _keys(model: str, project: str, round_: int) -> tuple[int, int]:
    """(an existing id to update, a new odd id to insert) inside this model's and project's file."""
    if model == "upsert_disjoint":
        base = {"a": 400, "b": 3000}[project] + 4 * round_
    else:
        base = 1000 + 4 * round_ + {"a": 0, "b": 2}[project]
    return base, base + 1


def _write_models(project: Path, name: str, round_: int, location: Path) -> dict[str, dict[int, str]]:
    changes = {}
    for model in MODELS:
        update, insert = _keys(model, name, round_)
        value = f"{name}{round_}"
        changes[model] = {update: value, insert: value}
        sql = f"select {update} as id, '{value}' as v union all select {insert} as id, '{value}' as v"
        (project / "models" / f"{model}.sql").write_text(_config(location, model) + sql)
    return changes


def _project(root: Path, name: str, connect_url: str | None) -> Path:
    project = root / name
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(
        f"name: {name}\nversion: '1.0'\nprofile: race\nconfig-version: 2\n"
    )
    profile = connect_profile("race", connect_url, f"race_{name}") if connect_url else PROFILE
    (project / "profiles.yml").write_text(profile)
    return project


def _start(
    project: Path, gate: Path | None, role: str | None, command: tuple[str, ...] = ("run",)
) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DELTAMERGE_")}
    if gate is not None:
        env["DELTAMERGE_COMMIT_GATE"] = f"{gate}:{role}"
    return subprocess.Popen(
        [DBT, *command, "--profiles-dir", "."],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _finish(process: subprocess.Popen) -> tuple[int, str]:
    out, _ = process.communicate(timeout=900)
    return process.returncode, out


def _responses(project: Path) -> dict[str, dict]:
    results = json.loads((project / "target" / "run_results.json").read_text())["results"]
    return {r["unique_id"].split(".")[-1]: r for r in results}


def _rows(path: Path) -> dict[int, str]:
    return {r["id"]: r["v"] for r in live_rows(str(path))}


@pytest.fixture(scope="module")
def race(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("race")
    location = root / "tables"
    url = request.getfixturevalue("cluster").connect_url if ON_CONNECT else None
    projects = {"a": _project(root, "a", url), "b": _project(root, "b", url)}
    for model in MODELS:
        (projects["a"] / "models" / f"{model}.sql").write_text(_config(location, model) + FIRST_RUN)
    code, out = _finish(_start(projects["a"], None, None))
    assert code == 0, out[-3000:]
    expected = {model: {i * 2: "v0" for i in range(2000)} for model in MODELS}
    return {"root": root, "location": location, "projects": projects, "expected": expected}


@pytest.mark.parametrize(
    ("round_", "case"), list(enumerate(ROUNDS)), ids=[f"{s}-starts-{f}-commits" for s, f in ROUNDS]
)
def test_two_invocations_of_one_model_race(race, round_, case):
    early, first = case
    late = "b" if early == "a" else "a"
    committer = early if first == "early" else late
    second = late if committer == early else early
    location, projects = race["location"], race["projects"]
    gate = race["root"] / f"gate{round_}"
    gate.mkdir()
    changes = {name: _write_models(projects[name], name, round_, location) for name in ("a", "b")}
    before = {m: DeltaTable(str(location / m)).version() for m in MODELS}

    roles = {committer: "first", second: "second"}
    processes = {early: _start(projects[early], gate, roles[early])}
    time.sleep(1.0)  # the late invocation's start time is strictly later
    processes[late] = _start(projects[late], gate, roles[late])
    outcome = {name: _finish(p) for name, p in processes.items()}

    assert outcome[committer][0] == 0, outcome[committer][1][-3000:]
    assert outcome[second][0] == 1, outcome[second][1][-3000:]  # its same-file merge failed

    disjoint = location / "upsert_disjoint"
    responses = {name: _responses(projects[name])["upsert_disjoint"] for name in ("a", "b")}
    assert all(r["status"] == "success" for r in responses.values()), {
        n: r.get("message") for n, r in responses.items()
    }
    versions = sorted(r["adapter_response"]["delta_version"] for r in responses.values())
    assert versions == [before["upsert_disjoint"] + 1, before["upsert_disjoint"] + 2]
    assert DeltaTable(str(disjoint)).version() == before["upsert_disjoint"] + 2
    race["expected"]["upsert_disjoint"].update(
        {**changes[committer]["upsert_disjoint"], **changes[second]["upsert_disjoint"]}
    )
    assert _rows(disjoint) == race["expected"]["upsert_disjoint"]

    same_file = location / "upsert_same_file"
    lost = _responses(projects[second])["upsert_same_file"]
    assert lost["status"] == "error"
    assert "ConcurrentDeleteRead" in lost["message"] and str(same_file) in lost["message"]
    assert "re-run the model" in lost["message"]
    assert DeltaTable(str(same_file)).version() == before["upsert_same_file"] + 1
    race["expected"]["upsert_same_file"].update(changes[committer]["upsert_same_file"])
    assert _rows(same_file) == race["expected"]["upsert_same_file"]

    for model in MODELS:
        history = DeltaTable(str(location / model)).history(1 if model == "upsert_same_file" else 2)
        assert {h["operation"] for h in history} == {"MERGE"}
        assert problems(str(location / model)) == []
        assert _marked(location / model)  # the merges that raced marked rows in deletion vectors


def _marked(path: Path) -> bool:
    snapshot = load_snapshot(TableLocation.of(str(path)))
    return snapshot is not None and any(f.deletion_vector for f in snapshot.files)


@pytest.mark.parametrize("free_round", range(FREE_RACES))
def test_two_invocations_started_together_without_a_gate(race, free_round):
    round_ = len(ROUNDS) + free_round  # keys no gated round used
    location, projects = race["location"], race["projects"]
    changes = {name: _write_models(projects[name], name, round_, location) for name in ("a", "b")}
    before = {m: DeltaTable(str(location / m)).version() for m in MODELS}
    processes = {name: _start(projects[name], None, None) for name in ("a", "b")}
    outcome = {name: _finish(p) for name, p in processes.items()}

    for model in MODELS:
        results = {name: _responses(projects[name])[model] for name in ("a", "b")}
        won = sorted(
            (r["adapter_response"]["delta_version"], name)
            for name, r in results.items()
            if r["status"] == "success"
        )
        for name, result in results.items():
            if result["status"] != "success":
                assert "Concurrent" in result["message"] and "re-run the model" in result["message"], outcome[
                    name
                ]
        if model == "upsert_disjoint":
            assert len(won) == 2, {n: o[1][-2000:] for n, o in outcome.items()}
        # Each success committed a version of its own, and nothing else was committed.
        assert [v for v, _ in won] == list(range(before[model] + 1, before[model] + 1 + len(won)))
        assert DeltaTable(str(location / model)).version() == before[model] + len(won)
        for _, name in won:
            race["expected"][model].update(changes[name][model])
        assert _rows(location / model) == race["expected"][model]
        assert problems(str(location / model)) == []
        assert _marked(location / model)


UNIFORM_SCHEMA = "race_uniform"
UNIFORM_CONFIG = (
    "{{{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key=['id', 'part'], "
    "location_root='{location}', database='lake', partition_by=['part']) }}}}\n"
)


@pytest.fixture(scope="module")
def uniform_race(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Two projects whose profiles name one Iceberg REST catalog ``lake``, and one registered
    UniForm model (``database='lake'``, partitioned by ``part``) both write."""
    from tests.iceberg_rest import start_rest_catalog

    root = tmp_path_factory.mktemp("uniform-race")
    server = start_rest_catalog(str(root / "rest"))
    url = request.getfixturevalue("cluster").connect_url if ON_CONNECT else None
    catalogs = "      iceberg_catalogs:\n        lake: " + json.dumps(server.properties()) + "\n"
    profile = (
        connect_profile("race", url, UNIFORM_SCHEMA)
        if url
        else PROFILE.replace("race\n", f"{UNIFORM_SCHEMA}\n")
    )
    projects = {}
    for name in ("a", "b"):  # one schema: both name the table alike in Spark's and the Iceberg catalog
        projects[name] = _project(root, name, url)
        (projects[name] / "profiles.yml").write_text(profile.rstrip("\n") + "\n" + catalogs)
    location = root / "tables"
    first = "select cast(id as int) as id, 'v0' as v, if(id % 2 = 0, 'a', 'b') as part from range(200)"
    (projects["a"] / "models" / "events.sql").write_text(UNIFORM_CONFIG.format(location=location) + first)
    code, out = _finish(_start(projects["a"], None, None))
    assert code == 0, out[-3000:]
    yield {"root": root, "location": location, "projects": projects, "server": server}
    server.stop()


@pytest.mark.skipif(
    not ON_CONNECT and os.environ.get("DELTAMERGE_RACE_ROUNDS") != "all", reason="JVM per run"
)
@pytest.mark.parametrize("first", ["a", "b"])
def test_two_invocations_race_on_a_registered_uniform_table(uniform_race, first):
    """Both read one version (the commit gate), each merges its own partition, ``first`` commits
    first: both succeed, and the catalog ends at the latest Delta version with Delta's rows (the
    second writer's Iceberg side and catalog commit build on the first's, never overwrite it)."""
    from pyiceberg.catalog.rest import RestCatalog

    root, location, projects = uniform_race["root"], uniform_race["location"], uniform_race["projects"]
    path = str(location / "events")
    before = DeltaTable(path).version()
    for name in ("a", "b"):
        rows = f"select cast(id as int) as id, '{name}{first}' as v, '{name}' as part from range(200, 230)"
        sql = f"{rows} where id % 2 = {0 if name == 'a' else 1}"
        (projects[name] / "models" / "events.sql").write_text(UNIFORM_CONFIG.format(location=location) + sql)
    gate = root / f"gate-{first}"
    gate.mkdir()
    roles = {first: "first", "b" if first == "a" else "a": "second"}
    processes = {name: _start(projects[name], gate, role) for name, role in roles.items()}
    outcome = {name: _finish(p) for name, p in processes.items()}
    assert all(code == 0 for code, _ in outcome.values()), {n: o[-3000:] for n, (_, o) in outcome.items()}
    versions = sorted(_responses(projects[n])["events"]["adapter_response"]["delta_version"] for n in "ab")
    assert versions == [before + 1, before + 2] and DeltaTable(path).version() == before + 2

    client = RestCatalog("check", **uniform_race["server"].properties())
    table = client.load_table((UNIFORM_SCHEMA, "events"))
    assert int(table.metadata.properties["delta-version"]) == before + 2
    shown = table.scan().to_arrow().select(["id", "v", "part"]).to_pylist()
    expected = {(r["id"], r["v"], r["part"]) for r in live_rows(path)}
    assert sorted(tuple(r.values()) for r in shown) == sorted(expected) and len(expected) == 230
    assert {f"{n}{first}" for _, v, _ in expected for n in "ab" if v == f"{n}{first}"} == {
        "a" + first,
        "b" + first,
    }
    assert problems(path) == []
