"""A run that finds no new source rows (the daily case of an incremental model).

The merge's source has no rows: no row can be matched, inserted or updated, so the engine reads
the source once and not the target (executor ``empty_source``), commits nothing, and reports
Delta's metrics as the full merge would (data skipping from the log). A NOT MATCHED BY SOURCE
clause can change rows with an empty source, so such a merge still runs: every row deleted.
"""

from __future__ import annotations

import pytest
from dbt.tests.util import run_dbt
from deltalake import DeltaTable

from tests.functional.helpers import table_path

NEW_ROWS_ONLY = """
{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id') }}
select /*+ REPARTITION_BY_RANGE(3, id) */ id, concat('v', cast(id as string)) as v from range(90)
{% if is_incremental() %} where id > (select max(id) from {{ this }}) {% endif %}
"""
MIRRORED = """
{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id',
    when_not_matched_by_source=[{'action': 'delete'}]) }}
select id, 'v' as v from range(10)
{% if is_incremental() %} where id > (select max(id) from {{ this }}) {% endif %}
"""


class TestNoOpIncremental:
    @pytest.fixture(scope="class")
    def models(self):
        return {"new_rows_only.sql": NEW_ROWS_ONLY, "mirrored.sql": MIRRORED}

    def test_an_empty_source_reads_no_target_and_commits_nothing(self, project):
        run_dbt(["run"])
        path = table_path(project, "new_rows_only")
        files = len(DeltaTable(path).file_uris())
        assert files == 3

        preview = run_dbt(["run", "-s", "new_rows_only", "--vars", "{deltamerge_dry_run: true}"])
        assert preview.results[0].adapter_response["plan"]["executor"] == "empty_source"

        again = run_dbt(["run"])
        responses = {r.node.name: r.adapter_response for r in again.results}
        noop = responses["new_rows_only"]
        assert noop["_message"] == "OK MERGE: no change, Delta version stays 0"
        assert "delta_version" not in noop
        metrics = noop["operation_metrics"]
        assert metrics["numSourceRows"] == 0 and metrics["numOutputRows"] == 0
        assert metrics["numTargetFilesBeforeSkipping"] == files
        assert metrics["numTargetFilesAfterSkipping"] == files  # Delta skips nothing by an empty source
        assert metrics["numTargetRowsCopied"] == metrics["numTargetFilesRemoved"] == 0
        assert DeltaTable(path).version() == 0
        assert DeltaTable(path).to_pyarrow_table().num_rows == 90

        # BY SOURCE deletes every target row when the source is empty: that merge runs.
        mirrored = responses["mirrored"]
        assert mirrored["operation_metrics"]["numTargetRowsNotMatchedBySourceDeleted"] == 10
        assert DeltaTable(table_path(project, "mirrored")).to_pyarrow_table().num_rows == 0
