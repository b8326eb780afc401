"""dbt's standard adapter suites (dbt-tests-adapter) against the deltamerge session profile.

Every model, seed and snapshot in them is a Delta table written by the engine (Delta is the
default file format). The suites, and where each runs:

- here: `basic` (materializations, singular/generic tests, ephemeral, empty, incremental,
  adapter methods, validate connection) and `incremental` (unique keys, on_schema_change,
  predicates, merge_exclude_columns, microbatch);
- `test_dbt_suites_utils.py`: `utils` (every cross-database macro and data-type macro,
  current timestamps, validate_sql);
- `test_dbt_suites_project.py`: `aliases`, `caching`, `concurrency`, `dbt_show`, `empty`,
  `ephemeral`, `hooks` (model, seed, snapshot and run hooks), `persist_docs`, `query_comment`,
  `relations`, `sample_mode`, `simple_copy`, `simple_seed`, `store_test_failures_tests`,
  `unit_testing`, and `basic`'s docs generate suites (the catalog and references);
- `test_snapshots.py`: `simple_snapshot` (every class) and `basic`'s snapshot suites;
- `test_python_models.py`: `python_model` (Python models, incremental, PySpark/pandas).

Not run, each for a reason of Spark or of the suite itself:

- `aliases` BaseSameAliasDifferentDatabases, `relations` across databases: Spark relations
  have no database part (two-part names).
- `simple_seed` BaseSeedConfigFullRefreshOn and the `--full-refresh` case: they expect
  Postgres' DROP ... CASCADE to drop the views on a seed; Spark's catalog keeps no dependencies.
- `simple_seed` BaseSeedSpecificFormats: a seed named `seed.with.dots`, which Spark's catalog
  refuses as a table name; BaseTestEmptySeedFlag: `dbt seed --empty` is dbt-core 1.12's.
- `simple_copy` materialized views: Spark runs them only inside a declarative pipeline;
  BaseSimpleCopyUppercase replaces the profile with a Postgres one; EmptyModelsArentRunBase
  reads Postgres' `information_schema.tables`, which Spark's catalog does not have.
- `basic` BaseGetCatalogForSingleRelation: an optional adapter method that no dbt-core 1.11
  command calls (dbt-spark has none either).
- `dbt_debug`: its checks are Postgres credentials (user, password, port).
- `grants`, `constraints`, `dbt_clone`, `materialized_view`, `functions`,
  `catalog_integrations`: dbt-spark runs them only on Databricks (Unity Catalog grants,
  enforced constraints, shallow clone, materialized views, UDFs, catalogs).

BaseIncrementalUniqueKey's fixture changes its seed with plain SQL `INSERT INTO` (string
literals into a DATE column): the statement runs as a Delta append through the engine.
"""

from __future__ import annotations

import pytest
from dbt.artifacts.schemas.results import RunStatus
from dbt.tests.adapter.basic.test_adapter_methods import BaseAdapterMethod
from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations
from dbt.tests.adapter.basic.test_empty import BaseEmpty
from dbt.tests.adapter.basic.test_ephemeral import BaseEphemeral
from dbt.tests.adapter.basic.test_generic_tests import BaseGenericTests
from dbt.tests.adapter.basic.test_incremental import BaseIncremental
from dbt.tests.adapter.basic.test_singular_tests import BaseSingularTests
from dbt.tests.adapter.basic.test_singular_tests_ephemeral import BaseSingularTestsEphemeral
from dbt.tests.adapter.basic.test_validate_connection import BaseValidateConnection
from dbt.tests.adapter.incremental.test_incremental_merge_exclude_columns import BaseMergeExcludeColumns
from dbt.tests.adapter.incremental.test_incremental_microbatch import BaseMicrobatch
from dbt.tests.adapter.incremental.test_incremental_on_schema_change import BaseIncrementalOnSchemaChange
from dbt.tests.adapter.incremental.test_incremental_predicates import BaseIncrementalPredicates
from dbt.tests.adapter.incremental.test_incremental_unique_id import BaseIncrementalUniqueKey
from dbt.tests.util import run_dbt


class TestSimpleMaterializations(BaseSimpleMaterializations):
    pass


class TestSingularTests(BaseSingularTests):
    pass


class TestSingularTestsEphemeral(BaseSingularTestsEphemeral):
    pass


class TestEmpty(BaseEmpty):
    pass


class TestEphemeral(BaseEphemeral):
    pass


class TestIncremental(BaseIncremental):
    pass


class TestGenericTests(BaseGenericTests):
    pass


class TestAdapterMethod(BaseAdapterMethod):
    pass


class TestValidateConnection(BaseValidateConnection):
    pass


class TestMicrobatch(BaseMicrobatch):
    """Each batch replaces its event-time window in one Delta commit (replace-where)."""


class TestMergeExcludeColumns(BaseMergeExcludeColumns):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"+incremental_strategy": "delta_merge"}}


class TestIncrementalPredicates(BaseIncrementalPredicates):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {
            "models": {
                "+incremental_predicates": ["dbt_internal_dest.id != 2"],
                "+incremental_strategy": "delta_merge",
            }
        }


class TestIncrementalUniqueKey(BaseIncrementalUniqueKey):
    """All of dbt's unique-key cases, with five replaced by the contract's rules.

    dbt's base expects a merge without a unique key to append every row. A `delta_merge`
    model without `unique_key` or `merge_condition` is an error instead (CONTRACT.md §3),
    which says what to add; those three cases assert that error and that nothing was
    written. dbt's base also lets a key that is not a column pass the first run; here that run
    fails (the two bad-key cases).
    """

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"+incremental_strategy": "delta_merge"}}

    def _refused_without_key(self, project, model):
        run_dbt(["seed", "--select", "seed", "--full-refresh"])
        results = run_dbt(["run", "--select", model], expect_pass=False)
        assert results[0].status == RunStatus.Error
        assert f"Model '{model}': invalid config" in results[0].message
        assert "needs `unique_key`" in results[0].message and "`merge_condition`" in results[0].message
        assert len(project.run_sql(f"show tables in {project.test_schema} like '{model}'", fetch="all")) == 0

    def _refused_on_the_first_run(self, project, model):
        """dbt's base lets the first run pass ("unique keys are not applied on first run"): here the
        run that creates the table checks the key its later merges need (issue 55)."""
        run_dbt(["seed", "--select", "seed", "--full-refresh"])
        results = run_dbt(["run", "--select", model, "--full-refresh"], expect_pass=False)
        assert results[0].status == RunStatus.Error
        assert "unique_key column `thisisnotacolumn` is not in the model's result" in results[0].message
        assert len(project.run_sql(f"show tables in {project.test_schema} like '{model}'", fetch="all")) == 0

    def test__bad_unique_key(self, project):
        self._refused_on_the_first_run(project, "not_found_unique_key")

    def test__bad_unique_key_list(self, project):
        self._refused_on_the_first_run(project, "not_found_unique_key_list")

    def test__empty_unique_key_list(self, project):
        self._refused_without_key(project, "empty_unique_key_list")

    def test__no_unique_keys(self, project):
        self._refused_without_key(project, "no_unique_key")

    def test__empty_str_unique_key(self, project):
        self._refused_without_key(project, "empty_str_unique_key")


class TestIncrementalOnSchemaChange(BaseIncrementalOnSchemaChange):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"+incremental_strategy": "delta_merge"}}
