"""Where Spark has Delta's jars: tables registered ``USING delta`` at their location.

A dbt project whose profile adds Delta Lake (``spark.jars.packages``, Delta's extension and its
catalog as the session catalog), run on its warm server (``method: server``, a Spark Connect
session, as a cluster with delta-spark is). Checked: the catalog entry of every Delta model is
Delta's own (provider ``delta``, the table's location, no properties of ours, no link folders),
registered without a commit; Spark reads it with Delta's reader, the latest version another
writer committed included, and time travel through the name; our engine still writes every
version (``engineInfo``), models and SQL ``MERGE`` / ``UPDATE`` alike; a Delta table another
writer made is registered by its location and written by ours. The tables are read back by Delta
on Spark (``tests/delta_spark.py``) and delta-rs, and checked by the validator.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from deltalake import DeltaTable

from tests.delta_spark import DELTA_PACKAGE
from tests.functional.test_delta_concurrent import CLI, _dbt, _start
from tests.validator import problems

pytestmark = [pytest.mark.delta]

PROFILE = f"""dc:
  target: t
  outputs:
    t:
      type: deltamerge
      method: server
      schema: dc
      threads: 1
      warehouse: ./warehouse
      server_warmup_rounds: 0
      server_side_parameters:
        spark.master: "local[1]"
        spark.driver.memory: 1g
        spark.sql.shuffle.partitions: "1"
        spark.jars.packages: "{DELTA_PACKAGE}"
        spark.sql.extensions: "io.delta.sql.DeltaSparkSessionExtension"
        spark.sql.catalog.spark_catalog: "org.apache.spark.sql.delta.catalog.DeltaCatalog"
"""
MODELS = {
    "m": "{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id') }}\n"
    "select id, {{ var('batch', 0) }} as batch from range({{ var('rows', 10) }})\n",
    "t": "{{ config(materialized='table') }}\nselect id, id * 2 as twice from range(5)\n",
    "counted": "select count(*) as n, sum(batch) as b from {{ ref('m') }}\n",
    "raced": "{{ config(materialized='table') }}\nselect id, {{ var('batch', 0) }} as batch from range(5)\n",
}
# Runs statements in one dbt invocation, logging each one's rows (a dbt command costs seconds).
MACROS = """{% macro run_sql(statements) %}
  {% for sql in statements %}
    {% set result = run_query(sql) %}
    {% for row in (result.rows if result else []) %}
      {{ log('ROW ' ~ loop.index0 ~ ' ' ~ tojson(row.values() | list), info=True) }}
    {% endfor %}
    {{ log('DONE', info=True) }}
  {% endfor %}
{% endmacro %}
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("dc")
    for folder in ("models", "macros"):
        (root / folder).mkdir()
    (root / "dbt_project.yml").write_text(
        'name: dc\nversion: "1.0"\nprofile: dc\nconfig-version: 2\n'
        "flags:\n  send_anonymous_usage_stats: false\n"
    )
    (root / "profiles.yml").write_text(PROFILE)
    (root / "macros" / "m.sql").write_text(MACROS)
    for name, sql in MODELS.items():
        (root / "models" / f"{name}.sql").write_text(sql)
    yield root
    subprocess.run([CLI, "stop", "--force", "--warehouse", str(root / "warehouse")], timeout=120)


def _ok(project: Path, *args: str) -> str:
    done = _dbt(project, *args)
    assert done.returncode == 0, done.stdout[-3000:]
    return done.stdout


def _run_sql(project: Path, *statements: str) -> list[list[list]]:
    """Each statement's rows (lists of values), run in order in one ``dbt run-operation``."""
    out = _ok(project, "run-operation", "run_sql", "--args", json.dumps({"statements": list(statements)}))
    results: list[list[list]] = [[]]
    for line in out.splitlines():
        if line.endswith("DONE"):
            results.append([])
        elif " ROW " in line:
            results[-1].append(json.loads(line.split(" ROW ", 1)[1].split(" ", 1)[1]))
    return results[:-1]


def _entry(rows: list[list]) -> dict[str, str]:
    """``DESCRIBE TABLE EXTENDED``'s detail rows."""
    return {str(r[0]): str(r[1]) for r in rows if r[0]}


def _engines(path: str) -> list[str]:
    """Each version's ``engineInfo``, oldest first."""
    log = Path(path, "_delta_log")
    found = []
    for name in sorted(n for n in os.listdir(log) if n.endswith(".json")):
        actions = [json.loads(line) for line in (log / name).read_text().splitlines() if line]
        found.append(next(a["commitInfo"].get("engineInfo", "") for a in actions if "commitInfo" in a))
    return found


def test_models_are_registered_using_delta_and_read_by_delta(project, delta_spark):
    _ok(project, "run", "--exclude", "raced")  # the race test's table is new when it starts
    path = str(project / "warehouse" / "dc.db" / "m")
    m, t = (_entry(rows) for rows in _run_sql(project, *(f"DESCRIBE TABLE EXTENDED dc.{n}" for n in "mt")))
    for entry in (m, t):
        assert entry["Provider"] == "delta", entry
        assert "deltamerge." not in entry.get("Table Properties", ""), entry
    assert m["Location"].removeprefix("file:") == path, m
    assert not (Path(path) / "_deltamerge_catalog" / "v00000000000000000000").exists()  # no links
    assert [e.split("/")[0] for e in _engines(path)] == ["dbt-deltamerge"]  # registering committed nothing

    # Another writer commits; Spark reads the latest version through Delta's entry (no re-binding).
    delta_spark.sql(f"INSERT INTO delta.`{path}` VALUES (100, 9)")
    assert _run_sql(project, "select count(*) from dc.m", "select n from dc.counted") == [[[11]], [[11]]]

    # Our engine writes the next versions: a model's merge and SQL statements on the name; time
    # travel through the name is Delta's own.
    _ok(project, "run", "--select", "m", "--vars", "{batch: 1, rows: 12}")
    counts = _run_sql(
        project,
        "UPDATE dc.m SET batch = 2 WHERE id = 0",
        "MERGE INTO dc.m t USING (SELECT 200 AS id, 3 AS batch) s ON t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT *",
        "select count(*) from dc.m version as of 0",
        "select count(*) from dc.m",
    )[2:]
    assert counts == [[[10]], [[14]]]
    engines = _engines(path)
    assert engines[1].startswith("Apache-Spark") and len(engines) == 5, engines
    assert {e.split("/")[0] for e in engines[2:]} == {"dbt-deltamerge"}, engines
    rows = {r["id"]: r["batch"] for r in delta_spark.sql(f"SELECT id, batch FROM delta.`{path}`")}
    assert rows == {0: 2, **dict.fromkeys(range(1, 12), 1), 100: 9, 200: 3}
    assert DeltaTable(path).version() == 4 and problems(path) == []


def test_a_table_delta_wrote_is_registered_by_its_location(project, delta_spark, tmp_path):
    path = str(tmp_path / "theirs")
    delta_spark.sql(f"CREATE TABLE delta.`{path}` (id bigint, v string) USING delta")
    delta_spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a'), (2, 'b')")
    _, described, _, counted = _run_sql(
        project,
        f"CREATE TABLE dc.theirs USING delta LOCATION '{path}'",
        "DESCRIBE TABLE EXTENDED dc.theirs",
        "MERGE INTO dc.theirs t USING (SELECT 2 AS id, 'B' AS v) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET *",
        "select count(*) from dc.theirs where v = 'B'",
    )
    entry = _entry(described)
    assert entry["Provider"] == "delta" and entry["Location"].removeprefix("file:") == path, entry
    assert not (Path(path) / "_deltamerge_catalog").exists()  # nothing written into their table
    assert _engines(path)[-1].startswith("dbt-deltamerge/") and counted == [[1]]
    assert sorted(r["v"] for r in delta_spark.sql(f"SELECT v FROM delta.`{path}`")) == ["B", "a"]
    assert problems(path) == []


def test_two_invocations_racing_register_one_entry(project, delta_spark):
    """Two dbt processes build the same model at once, twice (a new table, then a replace): each
    either commits or, where the other's commit conflicts with it, says nothing was committed (as
    Delta's own writers do); a loser's re-run then commits. The entry is Delta's, registered once,
    and always reads the latest version; no links, the validator clean."""
    path = str(project / "warehouse" / "dc.db" / "raced")
    assert not Path(path).exists()  # round 1 races to create it
    # A loser of the create: the entry or first version was another writer's; of the replace: Delta's
    # MetadataChanged (both replaced the metadata read at the same version).
    lost = ("was committed by another writer", "MetadataChanged: the table's metadata was changed by a")
    for round_ in (1, 2):
        batches = [round_ * 10 + i for i in (1, 2)]
        racers = [
            _start(project, "run", "--select", "raced", "--vars", f"{{batch: {b}}}", env={}) for b in batches
        ]
        outputs = [racer.communicate(timeout=600)[0] for racer in racers]
        won = [b for b, racer in zip(batches, racers, strict=True) if racer.returncode == 0]
        for racer, out in zip(racers, outputs, strict=True):
            said = any(x in out for x in lost) and "Nothing was committed" in out
            assert racer.returncode == 0 or said, out[-3000:]
        assert won, outputs
        for batch in sorted(set(batches) - set(won)):
            _ok(project, "run", "--select", "raced", "--vars", f"{{batch: {batch}}}")
            won.append(batch)
        (described,) = _run_sql(project, "DESCRIBE TABLE EXTENDED dc.raced")
        entry = _entry(described)
        assert entry["Provider"] == "delta" and entry["Location"].removeprefix("file:") == path, entry
        # No version folders (links), and no rebinding marker left: only the binders' lock file.
        assert {p.name for p in (Path(path) / "_deltamerge_catalog").iterdir()} == {".binding.lock"}
        assert DeltaTable(path).version() == 2 * round_ - 1  # one version per successful run
        (latest,) = _run_sql(project, "select count(*), min(batch), max(batch) from dc.raced")
        assert latest == [[5, won[-1], won[-1]]] or latest == [[5, won[0], won[0]]], (latest, won)
        assert problems(path) == []
