"""Every write path enforces the table's constraints: a violating write fails with Delta's text,
naming the model, and commits nothing (the table stays at its version, read by delta-rs).

One dbt project holds a model per write path, each with an enforced contract (``id`` NOT NULL,
``v`` CHECK ``positive``): table, incremental append, insert_overwrite, microbatch, the classic
merge, the insert-only merge and CDC apply. A first run writes good rows; a second run gives every
model a row that breaks the CHECK constraint, a third one a null ``id``. SQL INSERT, UPDATE and
MERGE statements, snapshots and Python models are checked on the same tables. It runs on both
backends (the Connect half too: the errors come back through Spark Connect).
"""

from __future__ import annotations

import datetime as dt
import re

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file
from deltalake import DeltaTable

from tests import files
from tests.functional.helpers import live_rows, table_path

# Rows are stamped yesterday (UTC), so a microbatch's batches are in the past whatever the time.
_DAY = dt.datetime.now(dt.timezone.utc).date() - dt.timedelta(days=1)
_BEGIN = _DAY.isoformat()
_ROW = (
    "select cast({{ var('id', 1) }} as int) as id, cast({{ var('v', 1) }} as int) as v, "
    "1 as p, cast('" + _BEGIN + " 0{{ var('hour', 1) }}:00:00' as timestamp) as ts"
)
# The microbatch model reads its batch's window (its SQL has no ref dbt could filter).
_BATCH = (
    " where ts >= timestamp'{{ model.batch.event_time_start }}'"
    " and ts < timestamp'{{ model.batch.event_time_end }}'"
)
_CONFIGS = {
    "m_table": "materialized='table'",
    "m_append": "materialized='incremental', incremental_strategy='append'",
    "m_overwrite": "materialized='incremental', incremental_strategy='insert_overwrite', partition_by=['p']",
    "m_micro": (
        "materialized='incremental', incremental_strategy='microbatch', event_time='ts', "
        f"begin='{_BEGIN}', batch_size='day'"
    ),
    "m_merge": "materialized='incremental', incremental_strategy='delta_merge', unique_key='id'",
    "m_insert_only": (
        "materialized='incremental', incremental_strategy='delta_merge', unique_key='id', when_matched=[]"
    ),
    "m_cdc": (
        "materialized='incremental', incremental_strategy='delta_merge', unique_key='p', sequence_by='ts'"
    ),
}
_FAIL = ", on_schema_change='fail'"  # dbt's rule for incremental models with a contract
# Every path also computes a generated and an identity column the model's SQL leaves out.
_DECLARED = ", generated_columns={'g': 'v * 2'}, identity_columns={'sk': {}}"
_COLUMNS = """
      - name: id
        data_type: int
        constraints: [{type: not_null}]
      - name: v
        data_type: int
        constraints: [{type: check, name: positive, expression: "v > 0"}]
      - name: p
        data_type: int
      - name: ts
        data_type: timestamp
"""
_SCHEMA_YML = "version: 2\nmodels:\n" + "".join(
    f"  - name: {name}\n    config:\n      contract: {{enforced: true}}\n    columns:{_COLUMNS}"
    for name in _CONFIGS
)
_PYTHON = """
def model(dbt, session):
    dbt.config(materialized="incremental")
    return dbt.ref("py_src").select("id", "v")
"""
_SNAPSHOT = """
snapshots:
  - name: s_rows
    relation: ref('snap_src')
    config: {unique_key: p, strategy: check, check_cols: all}
"""


@pytest.mark.stores
@pytest.mark.connect
class TestEveryWritePathEnforcesConstraints:
    @pytest.fixture(scope="class")
    def models(self):
        found = {
            f"{name}.sql": f"{{{{ config({config}{_DECLARED}{_FAIL if 'incr' in config else ''}) }}}}\n"
            + (f"select * from ({_ROW}) as r{_BATCH}" if name == "m_micro" else _ROW)
            for name, config in _CONFIGS.items()
        }
        snap_src = f"{{{{ config(materialized='ephemeral') }}}}\n{_ROW}"
        py_src = f"{{{{ config(materialized='view') }}}}\n{_ROW}"
        return {
            **found,
            "schema.yml": _SCHEMA_YML,
            "m_python.py": _PYTHON,
            "py_src.sql": py_src,
            "snap_src.sql": snap_src,
        }

    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snapshots.yml": _SNAPSHOT}

    def test_a_violating_write_fails_on_every_path_and_commits_nothing(self, project):
        run_dbt(["run"])
        run_dbt(["snapshot"])
        paths = {name: table_path(project, name) for name in [*_CONFIGS, "m_python", "s_rows"]}
        schema = project.test_schema
        project.run_sql(f"alter table {schema}.m_python add constraint positive check (v > 0)")
        project.run_sql(f"alter table {schema}.m_python alter column id set not null")
        project.run_sql(f"alter table {schema}.s_rows add constraint positive check (v > 0)")
        versions = {name: DeltaTable(path).version() for name, path in paths.items()}
        stored = {name: live_rows(path) for name, path in paths.items()}
        for table in _CONFIGS:  # the contract made Delta constraints of the table itself
            config = DeltaTable(paths[table]).metadata().configuration
            assert config["delta.constraints.positive"] == "v > 0", table
            assert [(r["g"], r["sk"]) for r in stored[table]] == [(2, 1)], table
        check = r"CHECK constraint positive \(v > 0\) violated by row with values:\s+- v : -1"
        null = r"NOT NULL constraint violated for column: id\."
        window = ["--event-time-start", _BEGIN, "--event-time-end", (_DAY + dt.timedelta(1)).isoformat()]
        for variables, expected in (("{v: -1, id: 2, hour: 2}", check), ("{id: 'null', hour: 3}", null)):
            results, out = run_dbt_and_capture(["run", "--vars", variables, *window], expect_pass=False)
            failed = {r.node.name for r in results if r.status == "error"}
            assert failed == {*_CONFIGS, "m_python"}, out
            for result in results:
                if result.node.name in failed - {"m_micro"}:  # a microbatch's message is the log's
                    assert re.search(expected, result.message or ""), (result.node.name, result.message)
            assert len(re.findall(expected, out)) >= len(failed), out
        # The snapshot path: a source row breaking the snapshot table's constraint.
        _, out = run_dbt_and_capture(["snapshot", "--vars", "{v: -1, id: 2, hour: 2}"], expect_pass=False)
        assert re.search(check, out)
        # SQL statements on the model tables.
        table = f"{schema}.m_merge"
        for statement in (
            f"insert into {table} values (2, -1, 1, null)",
            f"update {table} set v = -1",
            f"merge into {table} t using (select 1 as id) s on t.id = s.id "
            "when matched then update set v = -1",
            f"merge into {table} t using (select 9 as id) s on t.id = s.id "
            "when not matched then insert (id, v, p) values (s.id, -5, 1)",
        ):
            with pytest.raises(Exception, match="CHECK constraint positive"):
                project.run_sql(statement)
        with pytest.raises(Exception, match=null):
            project.run_sql(f"insert into {table} (v, p) values (3, 1)")
        for name, path in paths.items():
            assert DeltaTable(path).version() == versions[name], name
            assert live_rows(path) == stored[name], name
        assert all(files.list_names(files.join(p, "_delta_log")) for p in paths.values())


_EVOLVING = """
{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id',
          on_schema_change='fail') }}
select cast({{ var('id', 1) }} as int) as id, cast({{ var('v', 10) }} as int) as v
"""


def _contract(id_constraints: str, v_constraints: str) -> str:
    return (
        "version: 2\nmodels:\n  - name: evolving\n    config:\n      contract: {enforced: true}\n"
        f"    columns:\n      - name: id\n        data_type: int\n        constraints: {id_constraints}\n"
        f"      - name: v\n        data_type: int\n        constraints: {v_constraints}\n"
    )


@pytest.mark.stores
class TestContractChangesOnLaterRuns:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "evolving.sql": _EVOLVING,
            "schema.yml": _contract(
                "[{type: not_null}]", "[{type: check, name: positive, expression: 'v > 0'}]"
            ),
        }

    def test_constraints_follow_the_contract_and_others_stay(self, project):
        run_dbt(["run"])
        path = table_path(project, "evolving")
        name = f"{project.test_schema}.evolving"
        project.run_sql(f"alter table {name} add constraint theirs check (id < 1000)")

        def state() -> tuple[dict, dict]:
            table = DeltaTable(path)
            checks = {
                k.removeprefix("delta.constraints."): v
                for k, v in table.metadata().configuration.items()
                if k.startswith("delta.constraints.")
            }
            nullable = {f.name: f.nullable for f in table.schema().fields}
            return checks, nullable

        assert state() == ({"positive": "v > 0", "theirs": "id < 1000"}, {"id": False, "v": True})
        # The contract swaps its check and moves NOT NULL from id to v: one definition commit,
        # then the merge; the other writer's constraint stays.
        write_file(
            _contract("[]", "[{type: not_null}, {type: check, name: small, expression: 'v < 100'}]"),
            project.project_root,
            "models",
            "schema.yml",
        )
        before = DeltaTable(path).version()
        run_dbt(["run", "--vars", "{id: 2}"])
        assert state() == ({"small": "v < 100", "theirs": "id < 1000"}, {"id": True, "v": False})
        history = [h["operation"] for h in DeltaTable(path).history(2)]
        assert history == ["MERGE", "ADD CONSTRAINT"] and DeltaTable(path).version() == before + 2
        # A check the stored rows break is refused before anything is written, as Delta's ALTER.
        write_file(
            _contract("[]", "[{type: not_null}, {type: check, name: big, expression: 'v > 50'}]"),
            project.project_root,
            "models",
            "schema.yml",
        )
        _, out = run_dbt_and_capture(["run", "--vars", "{id: 3, v: 60}"], expect_pass=False)
        assert "[DELTA_NEW_CHECK_CONSTRAINT_VIOLATION] 2 rows in" in out and "(v > 50)" in out
        assert DeltaTable(path).version() == before + 2
        assert sorted(r["id"] for r in live_rows(path)) == [1, 2]
