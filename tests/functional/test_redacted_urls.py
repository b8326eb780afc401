"""Tables whose paths Spark redacts: names and folders with ``url``, ``URL``, ``password``,
``token``, a space, ``%``, ``#`` and unicode, read and written as any other.

Spark replaces a table property's value in what it prints (``SHOW TBLPROPERTIES``, ``SHOW TABLE
EXTENDED``, ``DESCRIBE``) when its key or value matches ``spark.sql.redaction.options.regex``
(default ``(?i)url``) or ``spark.redaction.regex`` (default ``secret|password|token|...``). This
module's name puts ``url`` into the test schema, so every table in its warehouse folder carries
it; the models' ``location_root`` adds the rest. Seeds, tables, a merge model, a merge-on-read
model (its entry a view), a snapshot and a view are built, merged, read by ``dbt show``, tested
and documented, then all again with the SQL redaction pattern set to ``.*`` (every property value
redacted). Rows are read back by delta-rs, which knows nothing of our catalog.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from dbt.tests.util import run_dbt
from deltalake import DeltaTable, write_deltalake

from tests.backend import ON_CONNECT, ON_S3
from tests.functional.helpers import live_rows

pytestmark = pytest.mark.skipif(
    ON_CONNECT or ON_S3, reason="local folders of the embedded session's warehouse"
)

SEED = "id,url,password_token\n1,https://a.example/x,p1\n2,https://b.example/y,p2\n3,https://c.example/z,p3\n"
TABLE = "{{ config(materialized='table') }} select id, url from {{ ref('data_urls') }}"
MERGE = """
{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id') }}
select id, upper(password_token) as token, {{ var('batch', 1) }} as batch from {{ ref('data_urls') }}
{% if var('batch', 1) > 1 %} where id >= 2 union all select 4, 'P4', {{ var('batch') }} {% endif %}
"""
DELETES = """
{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id',
          deletion_vectors=true,
          when_matched=[{'action': 'delete', 'condition': 'DBT_INTERNAL_SOURCE.gone'}]) }}
select id, url, id = {{ var('batch', 1) }} and {{ var('batch', 1) }} > 1 as gone from {{ ref('data_urls') }}
"""
VIEW = (
    "{{ config(materialized='view') }} "
    "select t.id, m.token from {{ ref('api_URL_table') }} t join {{ ref('user_tokens') }} m using (id)"
)
SNAPSHOT = """
{% snapshot password_snap %}
{{ config(unique_key='id', strategy='check', check_cols=['url'], target_schema=target.schema) }}
select id, url from {{ ref('api_URL_table') }}
{% endsnapshot %}
"""
SCHEMA = """
models:
  - name: user_tokens
    columns:
      - name: id
        data_tests: [not_null, unique]
  - name: secret_urls_view
    columns:
      - name: token
        data_tests: [not_null]
"""
REDACTED = "*********(redacted)"  # Spark's ``Utils.REDACTION_REPLACEMENT_TEXT``
FOLDER = "ünï €/data URLs 50% #1/password_token"


def _delta_rows(path: Path, key: str = "id") -> list[dict]:
    """Live rows as delta-rs reads them (deletion vectors applied)."""
    return sorted(live_rows(str(path)), key=lambda r: r[key])


@pytest.fixture(scope="class")
def lake(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("lake") / FOLDER


class TestRedactedPaths:
    EVERY_VALUE = False  # whether the session redacts every property value (``.*``)

    @pytest.fixture(scope="class")
    def project_config_update(self, lake):
        return {kind: {"+location_root": str(lake)} for kind in ("models", "seeds", "snapshots")}

    @pytest.fixture(scope="class")
    def seeds(self):
        return {"data_urls.csv": SEED}

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "api_URL_table.sql": TABLE,
            "user_tokens.sql": MERGE,
            "password_deletes.sql": DELETES,
            "secret_urls_view.sql": VIEW,
            "schema.yml": SCHEMA,
        }

    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"password_snap.sql": SNAPSHOT}

    def test_names_and_folders_spark_redacts(self, project, lake):
        run_dbt(["seed"])
        run_dbt(["run"])
        run_dbt(["snapshot"])
        run_dbt(["run", "--vars", "{batch: 2}"])  # merges: updates, an insert, a delete (a vector)
        run_dbt(["snapshot"])
        # What Spark prints of the entries is redacted (else this test would prove nothing).
        shown = dict(project.run_sql(f"show tblproperties {project.test_schema}.user_tokens", fetch="all"))
        assert shown["deltamerge.location"] == REDACTED
        assert (shown["deltamerge.version"] == REDACTED) == self.EVERY_VALUE
        assert _delta_rows(lake / "user_tokens") == [
            {"id": 1, "token": "P1", "batch": 1},
            {"id": 2, "token": "P2", "batch": 2},
            {"id": 3, "token": "P3", "batch": 2},
            {"id": 4, "token": "P4", "batch": 2},
        ]
        assert [r["id"] for r in _delta_rows(lake / "password_deletes")] == [1, 3]
        assert DeltaTable(str(lake / "password_deletes")).version() == 1
        entry = project.run_sql(f"show create table {project.test_schema}.password_deletes", fetch="one")[0]
        assert (
            entry.startswith("CREATE VIEW") and "WITH _deltamerge_binding AS (" in entry
        )  # a vector: a view
        assert len(_delta_rows(lake / "password_snap")) == 3
        # Read through the catalog (our binding of the latest versions), the view included.
        assert _show("select count(*) as n, sum(id) as s from {{ ref('secret_urls_view') }}") == [(3, 6)]
        # rows 1 and 3: the row the vector deletes is not read back
        assert _show("select sum(id) as s from {{ ref('password_deletes') }}") == [(4,)]
        assert _show("select count(*) as n from {{ ref('password_snap') }}") == [(3,)]
        run_dbt(["test"])
        run_dbt(["docs", "generate"])
        catalog = json.loads((Path(project.project_root) / "target" / "catalog.json").read_text())
        stats = {
            node.split(".")[-1]: entry["stats"].get("rows", {}).get("value")
            for node, entry in catalog["nodes"].items()
        }
        assert (stats["user_tokens"], stats["password_deletes"], stats["data_urls"]) == (4, 2, 3)


class TestEveryValueRedacted(TestRedactedPaths):
    """The same with ``spark.sql.redaction.options.regex`` ``.*`` in the profile: every property
    value in what Spark prints is redacted (``spark.redaction.regex``, a setting Spark takes only
    at its start, is set in the warm server's test)."""

    EVERY_VALUE = True

    @pytest.fixture(scope="class")
    def dbt_profile_target(self, dbt_profile_target, spark):
        key = "spark.sql.redaction.options.regex"
        yield {
            **dbt_profile_target,
            "server_side_parameters": {**dbt_profile_target["server_side_parameters"], key: ".*"},
        }
        spark.conf.unset(key)  # the process's session outlives this class


def _show(sql: str) -> list[tuple]:
    shown = run_dbt(["show", "--inline", sql])
    return [tuple(r) for r in shown.results[0].agate_table.rows]


def test_a_redaction_pattern_spark_refuses_fails_the_connection_naming_it(spark):
    """A profile whose redaction pattern does not compile: the connection's settings fail with one
    error naming the setting and its value (dbt's connection opens before any statement runs, so
    nothing is written), and the session keeps its pattern."""
    from dbt_common.exceptions import DbtRuntimeError

    from dbt.adapters.deltamerge.spark import connect

    key = "spark.sql.redaction.options.regex"
    before = spark.conf.get(key)
    with pytest.raises(
        DbtRuntimeError, match=r"spark\.sql\.redaction\.options\.regex to '\(url'.*INVALID_CONF_VALUE"
    ):
        connect.apply_settings(spark, {key: "(url"})
    assert spark.conf.get(key) == before
    with pytest.raises(DbtRuntimeError):  # said again, not remembered as applied
        connect.apply_settings(spark, {key: "(url"})


class TestEntriesAnOlderReleaseBound:
    """A warehouse an older release wrote keeps working: its views have no record of their folder
    (their files table's location says it) and its registered tables' roots no ``_table_path``
    (their property value says it, where Spark shows it whole). The next binding writes the new
    form. The entries are put back into the older form here with the statements that release ran."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"password_deletes.sql": DELETES}

    @pytest.fixture(scope="class")
    def seeds(self):
        return {"data_urls.csv": SEED}

    @pytest.fixture(scope="class")
    def project_config_update(self, lake):
        return {kind: {"+location_root": str(lake)} for kind in ("models", "seeds")}

    def _as_older_view(self, project, name: str) -> None:
        """The view as the older release created it: the same statement without the record."""
        text = project.run_sql(f"show create table {project.test_schema}.{name}", fetch="one")[0]
        assert text.count("WITH _deltamerge_binding AS (") == 1
        start = text.index("WITH _deltamerge_binding AS (")
        older = text[:start] + text[text.index(" AS folder)", start) + len(" AS folder)") :].lstrip()
        older = older.replace("CREATE VIEW", "CREATE OR REPLACE VIEW", 1)
        project.run_sql(older)
        assert (
            "_deltamerge_binding"
            not in project.run_sql(f"show create table {project.test_schema}.{name}", fetch="one")[0]
        )

    def test_older_entries_read_and_rebound_in_the_new_form(self, project, lake, tmp_path):
        run_dbt(["seed"])
        run_dbt(["run", "--select", "password_deletes"])
        run_dbt(["run", "--select", "password_deletes", "--vars", "{batch: 2}"])  # a vector: a view
        self._as_older_view(project, "password_deletes")
        # Its values redacted (the path holds "url"): read through its files table's location.
        assert _show("select sum(id) as s from {{ ref('password_deletes') }}") == [(4,)]
        # Row 3 deleted; row 2, gone from the table, is inserted again (the default WHEN NOT MATCHED).
        run_dbt(["run", "--select", "password_deletes", "--vars", "{batch: 3}"])
        assert [r["id"] for r in _delta_rows(lake / "password_deletes")] == [1, 2]
        assert _show("select sum(id) as s from {{ ref('password_deletes') }}") == [(3,)]
        entry = project.run_sql(f"show create table {project.test_schema}.password_deletes", fetch="one")[0]
        if entry.startswith("CREATE VIEW"):  # rebound in the new form: a view with its record
            assert "WITH _deltamerge_binding AS (" in entry
        else:  # or a table over the new version's folder
            assert "/v00000000000000000002'" in entry

        # Tables registered by their location, their roots' files gone as before: one under a
        # folder Spark shows whole reads its property value; one under a folder it redacts is
        # refused naming what to do, never read as another table.
        for folder, readable in (("plain", True), ("curly", False)):
            events = tmp_path / folder / "events"
            write_deltalake(str(events), pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
            name = f"{project.test_schema}.events_{folder}"
            run_dbt(
                [
                    "run-operation",
                    "convert_to_delta",
                    "--args",
                    json.dumps({"path": str(events), "relation_name": name}),
                ]
            )
            catalog = Path(project.adapter.config.credentials.warehouse) / "_deltamerge_catalog"
            (root_file,) = [f for f in catalog.glob("*/_table_path") if f.read_text() == str(events)]
            root_file.unlink()
            if readable:
                assert _show(f"select sum(id) from {name}") == [(6,)]
            else:
                with pytest.raises(Exception, match=r"register the table again \(convert_to_delta"):
                    run_dbt(["show", "--inline", f"select sum(id) from {name}"], expect_pass=False)
