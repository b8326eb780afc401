"""Config errors a user makes: they fail the model before anything is written, naming model and key."""

from __future__ import annotations

import os

import pytest
from dbt.artifacts.schemas.results import RunStatus
from dbt.tests.util import run_dbt, write_file
from deltalake import DeltaTable

from dbt.adapters.deltamerge.model.keys import KEYS
from tests.config_samples import wrong_values
from tests.functional.helpers import rows, table_path

FIRST = (
    "{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id') }}\n"
    "select 1 as id, 'a' as v union all select 2 as id, 'b' as v"
)
# The user meant to delete the matched rows; the misspelled key would leave the default update.
MISSPELLED = (
    "{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id',\n"
    "          when_matchd=[{'action': 'delete'}], owner='data-team') }}\n"
    "select 1 as id, 'changed' as v"
)


class TestMisspelledKey:
    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": FIRST}

    def test_a_misspelled_key_fails_the_model_and_writes_nothing(self, project):
        run_dbt(["run"])
        path = table_path(project, "orders")
        write_file(MISSPELLED, os.path.join(project.project_root, "models", "orders.sql"))
        results = run_dbt(["run"], expect_pass=False)
        assert results[0].status == RunStatus.Error
        message = results[0].message
        assert "Model 'orders'" in message
        assert "unknown config key `when_matchd`: did you mean `when_matched`?" in message
        assert "owner" not in message  # a custom key stays allowed
        assert DeltaTable(path).version() == 0
        assert [(r["id"], r["v"]) for r in rows(path)] == [(1, "a"), (2, "b")]


BAD_CONDITION = (
    "{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id',\n"
    "          when_matched=[{'action': 'delete', 'condition': \"DBT_INTERNAL_SOURCE.v = 'x'\"},\n"
    "                        {'action': 'update', 'condition': 'DBT_INTERNAL_SOURCE.v >'}],\n"
    "          when_not_matched=[{'action': 'insert', 'values': {'id': 'DBT_INTERNAL_SOURCE.nosuch'}}]) }}\n"
    "select 1 as id, 'changed' as v"
)


class TestErrorsNameTheClause:
    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": FIRST}

    def test_sql_spark_cannot_run_is_named_by_its_config_key(self, project):
        run_dbt(["run"])
        path = table_path(project, "orders")
        write_file(BAD_CONDITION, os.path.join(project.project_root, "models", "orders.sql"))
        results = run_dbt(["run"], expect_pass=False)
        message = results[0].message
        assert "Model 'orders'" in message
        assert "`when_matched[1].condition`: Spark cannot run `DBT_INTERNAL_SOURCE.v >`" in message
        assert (
            "`when_not_matched[0].values.id`: [DELTA_MERGE_UNRESOLVED_EXPRESSION] Cannot resolve "
            "DBT_INTERNAL_SOURCE.nosuch in INSERT clause given columns "
            "DBT_INTERNAL_SOURCE.id, DBT_INTERNAL_SOURCE.v."
        ) in message
        assert "when_matched[0]" not in message  # the good clause is not blamed
        assert "_source_row_present" not in message and "CASE" not in message
        assert DeltaTable(path).version() == 0


# dbt's own parser refuses values of another JSON type for these keys (naming the key) before
# any model runs; a wrong value of their type (empty text) reaches the adapter.
DBT_TYPED = {"incremental_strategy", "unique_key", "on_schema_change"}
MERGE_MODEL = {"materialized": "incremental", "incremental_strategy": "delta_merge", "unique_key": "id"}


def _wrong_value(key: str) -> object:
    if key in DBT_TYPED:
        return ""
    return next(value for name, value in wrong_values(key) if name != "empty text")


def _config(values: dict[str, object]) -> str:
    return "{{ config(" + ", ".join(f"{k}={v!r}" for k, v in values.items()) + ") }}"


def _every_key_model(key: str) -> str:
    wrong = _config({**MERGE_MODEL, key: _wrong_value(key)})
    return (
        f"{{% if var('wrong', false) %}}{wrong}{{% else %}}{_config(MERGE_MODEL)}{{% endif %}}\n"
        "select 1 as id, 'a' as v"
    )


class TestEveryKeyFailsBeforeAnythingIsWritten:
    """Every key of the one list, given a value of a wrong kind, fails its model naming model and key."""

    @pytest.fixture(scope="class")
    def models(self):
        return {f"k_{key}.sql": _every_key_model(key) for key in sorted(KEYS)}

    def test_each_model_fails_naming_itself_and_its_key_and_its_table_stays(self, project):
        first = run_dbt(["run"])
        assert len(first) == len(KEYS) and all(r.status == RunStatus.Success for r in first)
        results = {r.node.name: r for r in run_dbt(["run", "--vars", "{wrong: true}"], expect_pass=False)}
        assert len(results) == len(KEYS)
        for key in KEYS:
            result = results[f"k_{key}"]
            assert result.status == RunStatus.Error, key
            assert f"Model 'k_{key}': invalid config" in result.message, (key, result.message)
            assert key in result.message.split("invalid config", 1)[1], (key, result.message)
            assert DeltaTable(table_path(project, f"k_{key}")).version() == 0, key


# A merge model whose later runs could never merge: a condition naming a missing column, a key
# that is not a column. Its first run creates the table: it must fail there, not the second night.
NEVER_MERGES = (
    "{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key=['id', 'nosuch'],\n"
    "          when_matched=[{'action': 'update', 'condition': 'DBT_INTERNAL_SOURCE.missing > 0'}]) }}\n"
    "select 1 as id, 'a' as v"
)
# Problems at both levels: the table's (change_data_feed) and a clause's (an unknown key).
TWO_LEVELS = (
    "{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id',\n"
    "          change_data_feed='yes', when_matched=[{'action': 'update', 'condition_': 'true'}]) }}\n"
    "select 1 as id, 'a' as v"
)


class TestChecksComeFirst:
    @pytest.fixture(scope="class")
    def models(self):
        return {"never_merges.sql": NEVER_MERGES, "two_levels.sql": TWO_LEVELS}

    def test_a_merge_that_could_never_run_fails_its_first_run_and_creates_nothing(self, project):
        results = run_dbt(["run", "--select", "never_merges"], expect_pass=False)
        message = results[0].message or ""
        assert "Model 'never_merges'" in message
        assert "unique_key column `nosuch` is not in the model's result" in message
        assert (
            "`when_matched[0].condition`: [DELTA_MERGE_UNRESOLVED_EXPRESSION] Cannot resolve "
            "DBT_INTERNAL_SOURCE.missing in "
        ) in message
        assert not os.path.exists(os.path.join(table_path(project, "never_merges"), "_delta_log"))

    def test_table_and_clause_problems_are_reported_at_once(self, project):
        results = run_dbt(["run", "--select", "two_levels"], expect_pass=False)
        message = results[0].message or ""
        assert "change_data_feed" in message and "'yes'" in message
        assert "condition_" in message, message
