"""Dry run (``--vars '{deltamerge_dry_run: true}'``): a merge previewed, nothing written.

The preview's plan and metrics are compared with the real run of the same merge on the same
table version that follows it: every metric a dry run reports is the real run's, and the files
it would rewrite are the files the real commit removes. On both backends (Spark's ``noop`` sink
is a data source like any other over Spark Connect).
"""

from __future__ import annotations

import os

import pytest
from dbt.tests.util import run_dbt
from deltalake import DeltaTable

from tests.functional.helpers import log_actions, rows, table_path

# Round 1: ids 0..99 in 4 files of 25; round 2: delete 5, update 30, insert 1000; ids >= 90
# the source does not have are deleted by source (two files rewritten besides the first two).
MERGED = """
{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id',
    tblproperties={'delta.enableChangeDataFeed': 'true'},
    when_matched=[{'condition': "DBT_INTERNAL_SOURCE.op = 'D'", 'action': 'delete'}, {'action': 'update'}],
    when_not_matched=[{'action': 'insert'}],
    when_not_matched_by_source=[{'condition': 'DBT_INTERNAL_DEST.id >= 90', 'action': 'delete'}],
    post_hook="insert into {{ this }} (id, v, op) values (-1, 'hook', 'U')") }}
{% if var('round', 1) == 1 %}
select /*+ REPARTITION_BY_RANGE(4, id) */ cast(id as int) as id, 'v1' as v, 'U' as op from range(100)
{% else %}
select * from values (5, 'v2', 'D'), (30, 'v2', 'U'), (1000, 'v2', 'U') as s(id, v, op)
{% endif %}
"""
TABLED = "{{ config(materialized='table') }}\nselect {{ var('round', 1) }} as round"
COMPARED = (
    "numSourceRows",
    "numTargetRowsInserted",
    "numTargetRowsUpdated",
    "numTargetRowsDeleted",
    "numTargetRowsCopied",
    "numTargetRowsMatchedUpdated",
    "numTargetRowsMatchedDeleted",
    "numTargetRowsNotMatchedBySourceDeleted",
    "numTargetFilesBeforeSkipping",
    "numTargetFilesAfterSkipping",
    "numTargetFilesRemoved",
    "numTargetBytesBeforeSkipping",
    "numTargetBytesAfterSkipping",
    "numTargetBytesRemoved",
)


def _listing(path: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, n), path) for d, _, names in os.walk(path) for n in names)


@pytest.mark.connect
class TestDryRun:
    @pytest.fixture(scope="class")
    def models(self):
        return {"merged.sql": MERGED, "tabled.sql": TABLED}

    def test_a_dry_run_writes_nothing_and_reports_the_real_run(self, project):
        run_dbt(["run"])
        merged, tabled = table_path(project, "merged"), table_path(project, "tabled")
        before = {p: (DeltaTable(p).version(), _listing(p)) for p in (merged, tabled)}

        dry = run_dbt(["run", "--vars", "{round: 2, deltamerge_dry_run: true}"])
        # Not a file, not a version: no merge, no post-hook insert, no table rewrite.
        assert {p: (DeltaTable(p).version(), _listing(p)) for p in (merged, tabled)} == before
        responses = {r.node.name: r.adapter_response for r in dry.results}
        preview = responses["merged"]
        assert preview["dry_run"] is True and "delta_version" not in preview  # none was written
        plan = preview["plan"]
        assert plan["executor"] == "classic_rewrite" and plan["read_version"] == before[merged][0]
        assert plan["files_before_skipping"] == 5  # 4 files and the post-hook's row
        # The hook's row (id -1) lies outside the source's keys (5..1000) and BY SOURCE's ids >= 90.
        assert plan["files_after_skipping"] == 4
        assert plan["files_skipped_because"] == {"the source's key range misses the file's": 1}
        assert (plan["source_broadcast"], plan["writes_change_data"]) == (True, True)
        assert plan["multiple_match_check"] == "per_target_row"
        assert "numTargetFilesAdded" not in preview
        said = "DRY RUN MERGE (classic_rewrite): would insert 1, update 1, delete 11"
        assert preview["_message"].startswith(said)
        assert responses["tabled"]["dry_run"] is True
        assert responses["tabled"]["_message"].startswith("DRY RUN: nothing written")

        real = run_dbt(["run", "--vars", "{round: 2}"])
        done = {r.node.name: r.adapter_response for r in real.results}["merged"]
        assert {k: preview[k] for k in COMPARED} == {k: done[k] for k in COMPARED}
        removed = sorted(
            a["remove"]["path"] for a in log_actions(merged, done["delta_version"]) if "remove" in a
        )
        assert plan["files_to_rewrite"] == removed and len(removed) == 3
        assert plan["bytes_to_rewrite"] == done["numTargetBytesRemoved"]
        got = {r["id"]: r["v"] for r in rows(merged)}
        assert 5 not in got and got[30] == "v2" and got[1000] == "v2" and max(got) == 1000
        assert DeltaTable(tabled).version() == before[tabled][0] + 1

    def test_a_dry_run_var_that_is_not_a_boolean_fails_naming_it(self, project):
        path = table_path(project, "merged")
        version = DeltaTable(path).version()
        result = run_dbt(
            ["run", "--select", "merged", "--vars", "{deltamerge_dry_run: maybe}"], expect_pass=False
        )
        assert "var deltamerge_dry_run must be true or false, got 'maybe'" in result.results[0].message
        assert DeltaTable(path).version() == version
