"""Generated, identity and default columns: declared by a model's config or by SQL, computed by
every insert and update that leaves them out, checked where a write gives them; tables delta-rs
made with generated columns and CHECK constraints are merged into by the same rules, and
delta-rs writes ours by them too (a violating row is refused by both writers)."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file
from deltalake import DeltaTable, Field, Schema, write_deltalake

from tests.functional.helpers import live_rows, table_path
from tests.validator import problems

_EVENTS = """
{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='event_key',
          partition_by=['event_date'], on_schema_change='append_new_columns',
          generated_columns={'event_date': 'CAST(ts AS DATE)'},
          identity_columns={'id': {'start': 100, 'step': 10}},
          column_defaults={'status': "'new'"}) }}
select * from values {{ var('rows') }} as s(event_key, ts)
"""
_FIRST = "('a', timestamp'2024-01-01 10:00:00'), ('b', timestamp'2024-01-02 10:00:00')"
_SECOND = "('b', timestamp'2024-03-05 10:00:00'), ('c', timestamp'2024-03-06 23:00:00')"
UTC = dt.timezone.utc


def _by_key(path: str) -> dict[str, dict]:
    return {r["event_key"]: r for r in live_rows(path)}


class TestDeclaredColumns:
    @pytest.fixture(scope="class")
    def models(self):
        return {"events.sql": _EVENTS}

    def test_generated_identity_and_default_columns_of_a_model(self, project):
        run_dbt(["run", "--vars", json.dumps({"rows": _FIRST})])
        path = table_path(project, "events")
        first = _by_key(path)
        assert {k: (r["id"], r["event_date"], r["status"]) for k, r in first.items()} == {
            "a": (100, dt.date(2024, 1, 1), "new"),
            "b": (110, dt.date(2024, 1, 2), "new"),
        }
        run_dbt(["run", "--vars", json.dumps({"rows": _SECOND})])
        second = _by_key(path)
        # The update recomputed b's date and kept its id; c got the next id.
        assert {k: (r["id"], r["event_date"]) for k, r in second.items()} == {
            "a": (100, dt.date(2024, 1, 1)),
            "b": (110, dt.date(2024, 3, 5)),
            "c": (120, dt.date(2024, 3, 6)),
        }
        table = DeltaTable(path)
        fields = {f["name"]: f for f in json.loads(table.schema().to_json())["fields"]}
        assert fields["event_date"]["metadata"]["delta.generationExpression"] == "CAST(ts AS DATE)"
        assert fields["id"]["metadata"]["delta.identity.highWaterMark"] == 120
        assert fields["status"]["metadata"]["CURRENT_DEFAULT"] == "'new'"
        features = set(table.protocol().writer_features or ())
        assert {"generatedColumns", "identityColumns", "allowColumnDefaults"} <= features
        assert table.metadata().partition_columns == ["event_date"]
        assert problems(path) == []
        # A given generated value that differs from its expression fails, as in Delta.
        name = f"{project.test_schema}.events"
        with pytest.raises(Exception, match=r"CHECK constraint Generated Column .*event_date"):
            project.run_sql(
                f"insert into {name} (event_key, ts, event_date) "
                "values ('d', timestamp'2024-05-05 00:00:00', date'2020-01-01')"
            )
        with pytest.raises(Exception, match="UPDATE on IDENTITY column id is not supported"):
            project.run_sql(f"update {name} set id = 1")
        assert DeltaTable(path).version() == table.version()

    def test_a_config_error_names_the_column(self, project):
        write_file(
            "{{ config(materialized='table', identity_columns={'id': {'step': 0}}) }} select 1 as v",
            project.project_root,
            "models",
            "bad_identity.sql",
        )
        _, out = run_dbt_and_capture(["run", "--select", "bad_identity"], expect_pass=False)
        assert "identity_columns: `id` takes {start: <int>, step: <non-zero int>" in out


def _delta_rs_table(path: str) -> None:
    schema = Schema(
        [
            Field("id", "long"),
            Field("ts", "timestamp"),
            Field("d", "date", metadata={"delta.generationExpression": "CAST(ts AS DATE)"}),
        ]
    )
    DeltaTable.create(path, schema=schema)
    rows = pa.table(
        {
            "id": [1, 2],
            "ts": pa.array([dt.datetime(2024, 1, 2, 3, tzinfo=UTC)] * 2, pa.timestamp("us", "UTC")),
        }
    )
    write_deltalake(path, rows, mode="append", schema_mode="merge")
    DeltaTable(path).alter.add_constraint({"positive": "id > 0"})


def test_a_delta_rs_table_with_generated_columns_and_constraints_takes_our_merges(project, tmp_path):
    path = str(tmp_path / "rs_generated")
    _delta_rs_table(path)
    name = f"{project.test_schema}.rs_generated"
    project.run_sql(f"create table {name} using delta location '{path}'")
    project.run_sql(
        f"merge into {name} t using (select 2 as id, timestamp'2025-06-07 08:00:00' as ts "
        "union all select 3, timestamp'2025-07-08 09:00:00') s on t.id = s.id "
        "when matched then update set ts = s.ts when not matched then insert (id, ts) values (s.id, s.ts)"
    )
    found = {r["id"]: r["d"] for r in DeltaTable(path).to_pyarrow_table().to_pylist()}
    assert found == {1: dt.date(2024, 1, 2), 2: dt.date(2025, 6, 7), 3: dt.date(2025, 7, 8)}
    version = DeltaTable(path).version()
    with pytest.raises(Exception, match=r"CHECK constraint positive \(id > 0\) violated"):
        project.run_sql(f"insert into {name} (id, ts) values (-1, timestamp'2025-01-01 00:00:00')")
    with pytest.raises(Exception, match="1 rows failed validation check"):
        write_deltalake(
            path, pa.table({"id": [-1], "ts": pa.array([None], pa.timestamp("us", "UTC"))}), mode="append"
        )
    assert DeltaTable(path).version() == version
    assert problems(path) == []


def test_delta_rs_writes_our_table_by_its_generated_columns_and_constraints(project, tmp_path):
    path = str(tmp_path / "ours")
    name = f"{project.test_schema}.ours_generated"
    project.run_sql(
        f"create table {name} (id bigint not null, ts timestamp, "
        "d date generated always as (cast(ts as date)), constraint positive check (id > 0)) "
        f"using delta location '{path}'"
    )
    project.run_sql(f"insert into {name} (id, ts) values (1, timestamp'2024-02-03 04:00:00')")
    rows = pa.table(
        {"id": [2], "ts": pa.array([dt.datetime(2024, 5, 6, 7, tzinfo=UTC)], pa.timestamp("us", "UTC"))}
    )
    write_deltalake(path, rows, mode="append", schema_mode="merge")
    found = {r["id"]: r["d"] for r in DeltaTable(path).to_pyarrow_table().to_pylist()}
    assert found == {1: dt.date(2024, 2, 3), 2: dt.date(2024, 5, 6)}
    version = DeltaTable(path).version()
    with pytest.raises(Exception, match="1 rows failed validation check"):
        write_deltalake(path, pa.table({"id": [-4], "ts": rows["ts"]}), mode="append", schema_mode="merge")
    with pytest.raises(Exception, match=r"CHECK constraint positive \(id > 0\) violated"):
        project.run_sql(f"insert into {name} (id, ts) values (-4, null)")
    assert DeltaTable(path).version() == version
    # Our reads of what delta-rs wrote: its generated values pass our check on rewrite.
    project.run_sql(f"update {name} set ts = ts + interval 1 day")
    found = {r["id"]: r["d"] for r in DeltaTable(path).to_pyarrow_table().to_pylist()}
    assert found == {1: dt.date(2024, 2, 4), 2: dt.date(2024, 5, 7)}


_BY_DAY = """
{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key=['event_key', 'ts'],
          partition_by=['event_date'], generated_columns={'event_date': 'CAST(ts AS DATE)'},
          tblproperties={'delta.dataSkippingNumIndexedCols': '0'}) }}
select * from values {{ var('rows') }} as s(event_key, ts, v)
"""


class TestGeneratedPartitionsPruneMerges:
    @pytest.fixture(scope="class")
    def models(self):
        return {"by_day.sql": _BY_DAY}

    def test_the_source_keys_date_range_skips_other_days(self, project):
        days = ", ".join(f"('k{d}', timestamp'2024-01-0{d} 10:00:00', 1)" for d in (1, 2, 3))
        run_dbt(["run", "--vars", json.dumps({"rows": days})])
        path = table_path(project, "by_day")
        assert len(DeltaTable(path).file_uris()) == 3  # one file per day, no statistics
        one_day = "('k2', timestamp'2024-01-02 10:00:00', 5), ('k9', timestamp'2024-01-02 11:00:00', 6)"
        variables = json.dumps({"rows": one_day, "deltamerge_dry_run": True})
        results = run_dbt(["run", "--vars", variables])
        plan = results[0].adapter_response["plan"]
        assert (plan["files_before_skipping"], plan["files_after_skipping"]) == (3, 1), plan
        run_dbt(["run", "--vars", json.dumps({"rows": one_day})])
        found = {r["event_key"]: (r["v"], r["event_date"]) for r in live_rows(path)}
        assert found["k2"] == (5, dt.date(2024, 1, 2)) and found["k9"] == (6, dt.date(2024, 1, 2))
        assert found["k1"] == (1, dt.date(2024, 1, 1)) and problems(path) == []


def test_constraint_and_column_statements_on_a_column_mapped_table(project):
    name = f"{project.test_schema}.ddl_columns"
    project.run_sql(
        f"create table {name} (id bigint generated by default as identity (start with 10 increment by -5), "
        "`full name` string not null, amount int, status string default 'new', "
        "constraint sane check (amount < 1000)) using delta "
        "tblproperties ('delta.columnMapping.mode' = 'name')"
    )
    path = table_path(project, "ddl_columns")

    def run(sql: str) -> None:
        project.run_sql(sql)

    run(f"insert into {name} (`full name`, amount) values ('ann', 1), ('bo', 2)")
    run(f"insert into {name} (id, `full name`, amount) values (-100, 'cy', 3)")  # BY DEFAULT: given
    rows = {r["full name"]: r for r in live_rows(path)}
    assert {k: (r["id"], r["status"]) for k, r in rows.items()} == {
        "ann": (10, "new"),
        "bo": (5, "new"),
        "cy": (-100, "new"),
    }
    # The mark is the smallest value in the column (step < 0), the given one too (PROTOCOL.md).
    fields = {f["name"]: f for f in json.loads(DeltaTable(path).schema().to_json())["fields"]}
    assert fields["id"]["metadata"]["delta.identity.highWaterMark"] == -100
    for statement, error in (
        (f"alter table {name} add constraint sane check (amount > 0)", "DELTA_CONSTRAINT_ALREADY_EXISTS"),
        (f"alter table {name} drop constraint missing", "DELTA_CONSTRAINT_DOES_NOT_EXIST"),
        (
            f"alter table {name} add constraint odd check (nope > 0)",
            r"\['nope'\] are not columns of the table",
        ),
        (f"alter table {name} add constraint big check (amount > 2)", r"2 rows in .* violate the new CHECK"),
        (f"alter table {name} add columns (extra int not null)", "DELTA_NEW_NOT_NULL_VIOLATION"),
        (f"insert into {name} (`full name`, amount) values ('dee', 5000)", "CHECK constraint sane"),
        (
            f"update {name} set `full name` = null where amount = 1",
            r"NOT NULL constraint violated for column: full name\.",
        ),
    ):
        version = DeltaTable(path).version()
        with pytest.raises(Exception, match=error):
            run(statement)
        assert DeltaTable(path).version() == version, statement
    run(f"alter table {name} drop constraint if exists missing")
    run(f"alter table {name} alter column status drop default")
    run(f"alter table {name} alter column amount set not null")
    run(f"alter table {name} add column note string default 'x'")  # existing rows get it too
    run(f"insert into {name} (`full name`, amount) values ('eve', 4)")
    rows = {r["full name"]: r for r in live_rows(path)}
    assert (rows["eve"]["id"], rows["eve"]["status"], rows["eve"]["note"]) == (-105, None, "x")
    assert {r["note"] for r in rows.values()} == {"x"}
    with pytest.raises(Exception, match="NOT NULL constraint violated for column: amount"):
        run(f"insert into {name} (`full name`) values ('fay')")
    run(f"alter table {name} drop constraint sane")
    run(f"insert into {name} (`full name`, amount) values ('gus', 5000)")
    table = DeltaTable(path)
    assert not [k for k in table.metadata().configuration if k.startswith("delta.constraints.")]
    ops = [h["operation"] for h in reversed(table.history())]
    assert ops.count("DROP CONSTRAINT") == 1 and ops.count("CHANGE COLUMN") == 2
    assert problems(path) == []
