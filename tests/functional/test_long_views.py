"""Views whose SQL passes the embedded metastore's 32,700 characters (Derby's ``LONG VARCHAR``).

Generated SQL reaches that easily: dbt-spark's ``datediff``, unions of many sources, staging
models of hundreds of columns. A 1 MB view is created, replaced, read, listed by dbt (the second
run finds it in its relation cache) and documented; a long expression over a seed next to it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dbt.tests.util import run_dbt

from dbt.adapters.deltamerge.spark import view_text
from tests.backend import ON_CONNECT

pytestmark = pytest.mark.skipif(ON_CONNECT, reason="the embedded metastore (a cluster's is its own)")

SEED = "id,kind\n" + "".join(f"{i},k{i % 7}\n" for i in range(50))
PADDING = "x" * 1_000_000
# ~40k characters of expression: past Derby's column on its own.
LABELS = " ".join(f"when {i} then 'label {i}'" for i in range(2500))
BIG_VIEW = (
    "{{ config(materialized='view') }}\n"
    f"select id, case id {LABELS} end as label, '{PADDING}' as padding, {{{{ var('round', 1) }}}} as round "
    "from {{ ref('events') }}"
)
OVER_VIEW = (
    "{{ config(materialized='table') }} "
    "select count(*) as n, max(length(padding)) as width, max(round) as round from {{ ref('big_view') }}"
)


class TestViewsOfAnyLength:
    @pytest.fixture(scope="class")
    def seeds(self):
        return {"events.csv": SEED}

    @pytest.fixture(scope="class")
    def models(self):
        return {"big_view.sql": BIG_VIEW, "over_view.sql": OVER_VIEW}

    def test_a_one_megabyte_view_is_created_replaced_read_and_documented(self, project, spark):
        assert len(BIG_VIEW) > 1_000_000
        # Widened when the session started, before dbt's threads could read the metastore.
        mark = view_text.mark_of(spark.conf.get(view_text.METASTORE_URL))
        assert mark is not None and Path(mark).exists()
        run_dbt(["seed"])
        run_dbt(["run"])
        name = f"{project.test_schema}.big_view"
        assert project.run_sql(f"select count(*), max(label) from {name} where id = 7", fetch="one") == (
            1,
            "label 7",
        )
        run_dbt(["run", "--vars", "{round: 2}"])  # replaced: dbt's cache lists the view
        shown = run_dbt(["show", "--inline", "select n, width, round from {{ ref('over_view') }}"])
        assert [tuple(r) for r in shown.results[0].agate_table.rows] == [(50, 1_000_000, 2)]
        text = project.run_sql(f"show create table {name}", fetch="one")[0]
        assert PADDING in text
        run_dbt(["docs", "generate"])
        catalog = json.loads((Path(project.project_root) / "target" / "catalog.json").read_text())
        node = next(n for key, n in catalog["nodes"].items() if key.endswith(".big_view"))
        assert node["metadata"]["type"].lower() == "view"
        assert set(node["columns"]) >= {"id", "label", "padding", "round"}
