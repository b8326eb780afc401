"""A package written for dbt-spark and Databricks (shaped like Fivetran's), run unchanged by a project.

The package (written here, no third-party code) does what such packages do: its source's
``database`` is Jinja that tests ``target.type`` and otherwise reads ``target.database``; its
models branch on ``target.type in ('spark', 'databricks')`` for ``partition_by`` (a list there,
dbt-bigquery's dict elsewhere) and ``incremental_strategy`` (``insert_overwrite`` there,
``delete+insert`` elsewhere); a non-dispatched macro decides a materialization from a list of
adapter names; its dispatched macros have ``spark__`` versions (found through deltamerge's
``spark`` parent), or only a ``databricks__`` one beside a ``default__`` Spark cannot run (the
project's own ``deltamerge__`` takes over through dbt's ``dispatch`` search order); staging
models fill missing columns from ``adapter.get_columns_in_relation``, a generic test of its
own, dbt's cross-database macros (``date_trunc``, ``datediff``, ``hash``, ``concat``,
``listagg``, ``date_spine``).

A deltamerge target is not ``spark``: the package takes its generic branches, and the adapter
does what they ask (``target.database`` is none, as Spark has no database above schemas;
the BigQuery date form of ``partition_by`` partitions by the column; ``delete+insert`` replaces
by key in one commit). Built, tested, then built again incrementally after new source rows;
rows read back by delta-rs. ``test_the_package_on_the_warm_server`` does the same with real dbt
processes on a warm server (the server tier).
"""

# ruff: noqa: E501  (the package's SQL and YAML keep the long lines such packages have)

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from dbt.tests.util import run_dbt
from deltalake import DeltaTable

from dbt.adapters.deltamerge.spark import server
from tests.functional.helpers import live_rows

PACKAGE_PROJECT = """
name: helpdesk
version: "0.3.0"
config-version: 2
require-dbt-version: [">=1.3.0", "<2.0.0"]
models:
  helpdesk:
    +materialized: table
    +schema: helpdesk
    staging:
      +materialized: view
      +schema: helpdesk_staging
vars:
  helpdesk:
    ticket: "{{ source('helpdesk', 'ticket') }}"
    ticket_field_history: "{{ source('helpdesk', 'ticket_field_history') }}"
"""
SOURCES = """
version: 2
sources:
  - name: helpdesk
    database: "{% if target.type not in ('spark', 'databricks') %}{{ var('helpdesk_database', target.database) }}{% endif %}"
    schema: "{{ var('helpdesk_schema', 'helpdesk') }}"
    tables:
      - name: ticket
        identifier: "{{ var('helpdesk_ticket_identifier', 'ticket') }}"
        columns:
          - name: id
            data_tests: [not_null]
      - name: ticket_field_history
"""
MACROS = """
{% macro is_incremental_compatible() %}
  {% if target.type in ('bigquery', 'snowflake', 'postgres', 'redshift', 'databricks') %}
    {{ return(true) }}
  {% endif %}
  {{ return(false) }}
{% endmacro %}

{% macro ticket_columns() %}
  {{ return([
      {'name': 'id', 'datatype': dbt.type_bigint()},
      {'name': 'created_at', 'datatype': dbt.type_timestamp()},
      {'name': 'status', 'datatype': dbt.type_string()},
      {'name': 'custom', 'datatype': dbt.type_string()},
      {'name': 'assignee', 'datatype': dbt.type_string()},
  ]) }}
{% endmacro %}

{% macro fill_columns(source_columns, wanted) %}
  {%- set present = source_columns | map(attribute='name') | map('lower') | list -%}
  {%- for column in wanted %}
    {% if column.name | lower in present -%}
      cast({{ adapter.quote(column.name) }} as {{ column.datatype }}) as {{ column.name }}
    {%- else -%}
      cast(null as {{ column.datatype }}) as {{ column.name }}
    {%- endif -%}
    {{ "," if not loop.last }}
  {%- endfor %}
{% endmacro %}

{% macro json_field(column, key) -%}
  {{ return(adapter.dispatch('json_field', 'helpdesk')(column, key)) }}
{%- endmacro %}
{% macro default__json_field(column, key) -%}
  json_extract_path_text({{ column }}, '{{ key }}')
{%- endmacro %}
{% macro databricks__json_field(column, key) -%}
  get_json_object({{ column }}, '$.{{ key }}')
{%- endmacro %}

{% macro hours_between(start, finish) -%}
  {{ return(adapter.dispatch('hours_between', 'helpdesk')(start, finish)) }}
{%- endmacro %}
{% macro default__hours_between(start, finish) -%}
  extract(epoch from ({{ finish }} - {{ start }})) / 3600
{%- endmacro %}
{% macro spark__hours_between(start, finish) -%}
  (unix_timestamp({{ finish }}) - unix_timestamp({{ start }})) / 3600
{%- endmacro %}

{% test has_rows(model) %}
  select 1 as failure from (select count(*) as n from {{ model }}) counted where n = 0
{% endtest %}
"""
STG_TICKET_TMP = "select * from {{ var('ticket') }}"
STG_TICKET = """
with fields as (
    select
        {{ helpdesk.fill_columns(adapter.get_columns_in_relation(ref('stg_helpdesk__ticket_tmp')),
                                 helpdesk.ticket_columns()) }}
    from {{ ref('stg_helpdesk__ticket_tmp') }}
)
select id as ticket_id, created_at, status, assignee, {{ helpdesk.json_field('custom', 'priority') }} as priority
from fields
"""
STG_HISTORY = """
select cast(ticket_id as {{ dbt.type_bigint() }}) as ticket_id, field_name, value,
       cast(updated_at as {{ dbt.type_timestamp() }}) as updated_at
from {{ var('ticket_field_history') }}
"""
DAILY_HISTORY = """
{{ config(
    materialized='incremental',
    partition_by={'field': 'date_day', 'data_type': 'date'} if target.type not in ('spark', 'databricks') else ['date_day'],
    unique_key='ticket_day_id',
    incremental_strategy='insert_overwrite' if target.type in ('bigquery', 'spark', 'databricks') else 'delete+insert',
    file_format='delta'
) }}
with history as (
    select ticket_id, value as status, cast({{ dbt.date_trunc('day', 'updated_at') }} as date) as date_day
    from {{ ref('stg_helpdesk__ticket_field_history') }}
    where field_name = 'status'
    {% if is_incremental() %}
    and cast(updated_at as date) >= (select max(date_day) from {{ this }})
    {% endif %}
),
spine as (
    {{ dbt.date_spine('day', "cast('2024-01-01' as date)", "cast('2024-01-05' as date)") }}
)
select
    {{ dbt.hash(dbt.concat(['cast(ticket_id as ' ~ dbt.type_string() ~ ')', "'-'",
                            'cast(history.date_day as ' ~ dbt.type_string() ~ ')'])) }} as ticket_day_id,
    ticket_id, history.date_day, max(status) as status, count(*) as changes
from history join spine on history.date_day = cast(spine.date_day as date)
group by ticket_id, history.date_day
"""
ENHANCED = """
{{ config(materialized='incremental' if helpdesk.is_incremental_compatible() else 'table',
          unique_key='ticket_id') }}
select
    t.ticket_id, t.status, t.priority, t.assignee,
    {{ dbt.listagg('h.value', "', '", "order by h.updated_at") }} as statuses,
    {{ dbt.datediff('t.created_at', 'max(h.updated_at)', 'hour') }} as hours_open,
    {{ helpdesk.hours_between('t.created_at', 'max(h.updated_at)') }} as hours_between
from {{ ref('stg_helpdesk__ticket') }} t
join {{ ref('stg_helpdesk__ticket_field_history') }} h on h.ticket_id = t.ticket_id and h.field_name = 'status'
group by t.ticket_id, t.status, t.priority, t.assignee, t.created_at
"""
PACKAGE_TESTS = """
version: 2
models:
  - name: helpdesk__ticket_daily_history
    data_tests: [has_rows]
    columns:
      - name: ticket_day_id
        data_tests: [unique, not_null]
  - name: helpdesk__ticket_enhanced
    columns:
      - name: ticket_id
        data_tests: [unique]
      - name: status
        data_tests:
          - accepted_values:
              arguments: {values: ['open', 'pending', 'closed', 'solved']}
"""
PACKAGE = {
    "dbt_project.yml": PACKAGE_PROJECT,
    "macros/helpdesk.sql": MACROS,
    "models/staging/src_helpdesk.yml": SOURCES,
    "models/staging/stg_helpdesk__ticket_tmp.sql": STG_TICKET_TMP,
    "models/staging/stg_helpdesk__ticket.sql": STG_TICKET,
    "models/staging/stg_helpdesk__ticket_field_history.sql": STG_HISTORY,
    "models/helpdesk__ticket_daily_history.sql": DAILY_HISTORY,
    "models/helpdesk__ticket_enhanced.sql": ENHANCED,
    "models/helpdesk.yml": PACKAGE_TESTS,
}
# The project's own answer for the one dispatched macro without a Spark version.
OVERRIDE = """
{% macro deltamerge__json_field(column, key) -%}
  {{ return(helpdesk.databricks__json_field(column, key)) }}
{%- endmacro %}
"""
DISPATCH = [{"macro_namespace": "helpdesk", "search_order": ["shop", "helpdesk"]}]
TICKETS = (
    "id,created_at,status,custom\n"
    '1,2024-01-01 10:00:00,pending,"{""priority"": ""high""}"\n'
    '2,2024-01-02 11:00:00,closed,"{""priority"": ""low""}"\n'
)
HISTORY = (
    "ticket_id,field_name,value,updated_at\n"
    "1,status,open,2024-01-01 10:00:00\n"
    "1,status,pending,2024-01-02 09:00:00\n"
    "2,status,closed,2024-01-02 11:00:00\n"
)
LATER_HISTORY = "2,status,solved,2024-01-02 18:00:00\n2,status,open,2024-01-03 08:00:00\n"


def write_package(folder: Path) -> Path:
    for name, text in PACKAGE.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def daily_rows(path: str) -> list[tuple]:
    return sorted((r["ticket_id"], str(r["date_day"]), r["status"], r["changes"]) for r in live_rows(path))


FIRST_DAYS = [(1, "2024-01-01", "open", 1), (1, "2024-01-02", "pending", 1), (2, "2024-01-02", "closed", 1)]
# Run again after two later changes of ticket 2: its 2024-01-02 row is replaced (the new row for
# that key holds both changes of the day), 2024-01-03 is new, ticket 1's rows stay.
LATER_DAYS = [
    (1, "2024-01-01", "open", 1),
    (1, "2024-01-02", "pending", 1),
    (2, "2024-01-02", "solved", 2),
    (2, "2024-01-03", "open", 1),
]


def check_tables(warehouse: Path, schema: str, *, later: bool) -> None:
    daily = str(warehouse / f"{schema}_helpdesk.db" / "helpdesk__ticket_daily_history")
    assert daily_rows(daily) == (LATER_DAYS if later else FIRST_DAYS)
    table = DeltaTable(daily)
    assert table.metadata().partition_columns == ["date_day"]
    assert table.version() == (1 if later else 0)
    if later:
        commit = table.history(1)[0]
        assert commit["operation"] == "WRITE"
        predicate = json.loads(commit["operationParameters"]["predicate"])
        assert predicate == ["((`ticket_day_id`) IN (the new rows' keys))"]
    enhanced = live_rows(str(warehouse / f"{schema}_helpdesk.db" / "helpdesk__ticket_enhanced"))
    by_ticket = {r["ticket_id"]: r for r in enhanced}
    assert by_ticket[1]["priority"] == "high" and by_ticket[1]["assignee"] is None
    assert by_ticket[1]["statuses"] == "open, pending"
    assert by_ticket[1]["hours_open"] == 23 and by_ticket[1]["hours_between"] == 23


class TestPackageWrittenForSpark:
    @pytest.fixture(scope="class")
    def package_folder(self, tmp_path_factory) -> Path:
        return write_package(tmp_path_factory.mktemp("helpdesk"))

    @pytest.fixture(scope="class")
    def packages(self, package_folder):
        return {"packages": [{"local": str(package_folder)}]}

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"name": "shop", "dispatch": DISPATCH}

    @pytest.fixture(scope="class")
    def seeds(self):
        return {"ticket.csv": TICKETS, "ticket_field_history.csv": HISTORY}

    @pytest.fixture(scope="class")
    def macros(self):
        return {"helpdesk_on_deltamerge.sql": OVERRIDE}

    def test_built_tested_and_built_again(self, project, package_folder):
        schema = project.test_schema
        project.created_schemas += [f"{schema}_helpdesk", f"{schema}_helpdesk_staging"]
        run_dbt(["deps"])
        variables = ["--vars", json.dumps({"helpdesk_schema": schema})]
        run_dbt(["seed", *variables])
        run_dbt(["run", *variables])
        run_dbt(["test", *variables])
        warehouse = Path(project.adapter.config.credentials.warehouse)
        check_tables(warehouse, schema, later=False)
        seed = Path(project.project_root, "seeds", "ticket_field_history.csv")
        seed.write_text(HISTORY + LATER_HISTORY)
        run_dbt(["seed", *variables])
        run_dbt(["run", *variables])
        run_dbt(["test", *variables])
        check_tables(warehouse, schema, later=True)


PROFILE = """shop:
  target: warm
  outputs:
    warm:
      type: deltamerge
      method: server
      schema: support
      warehouse: ./warehouse
      server_warmup_rounds: 0
      server_side_parameters:
        spark.master: "local[1]"
        spark.driver.memory: 1g
        spark.sql.shuffle.partitions: "2"
"""
DBT = str(Path(sys.executable).with_name("dbt"))
CLI = str(Path(sys.executable).with_name("deltamerge-server"))


def _dbt(project: Path, *args: str) -> str:
    done = subprocess.run(
        [DBT, *args, "--profiles-dir", "."], cwd=project, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return done.stdout


@pytest.mark.server
def test_the_package_on_the_warm_server(tmp_path):
    package, project = write_package(tmp_path / "helpdesk"), tmp_path / "shop"
    for name, text in {
        "dbt_project.yml": json.dumps(
            {"name": "shop", "version": "1.0", "profile": "shop", "config-version": 2, "dispatch": DISPATCH}
        ),
        "packages.yml": json.dumps({"packages": [{"local": str(package)}]}),
        "profiles.yml": PROFILE,
        "macros/helpdesk_on_deltamerge.sql": OVERRIDE,
        "seeds/ticket.csv": TICKETS,
        "seeds/ticket_field_history.csv": HISTORY,
    }.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    variables = ["--vars", json.dumps({"helpdesk_schema": "support"})]
    try:
        _dbt(project, "deps")
        _dbt(project, "seed", *variables)
        _dbt(project, "build", *variables)
        check_tables(project / "warehouse", "support", later=False)
        (project / "seeds" / "ticket_field_history.csv").write_text(HISTORY + LATER_HISTORY)
        _dbt(project, "seed", *variables)
        _dbt(project, "build", *variables)
        check_tables(project / "warehouse", "support", later=True)
    finally:
        if server.status(str(project / "warehouse")) is not None:
            subprocess.run(
                [CLI, "stop", "--warehouse", str(project / "warehouse")], capture_output=True, timeout=300
            )
