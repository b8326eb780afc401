"""What Delta refuses in a MERGE's SQL by its form, before Spark is asked (pure)."""

from __future__ import annotations

import pytest

from dbt.adapters.deltamerge.merge.refusals import refusals, subquery_relations
from dbt.adapters.deltamerge.merge.spec import MergeSpec


def spec(**clauses) -> MergeSpec:
    return MergeSpec.from_config(
        "m",
        {
            "merge_condition": clauses.pop("on", "t.k = s.k"),
            "source_alias": "s",
            "target_alias": "t",
            **clauses,
        },
    )


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"on": "t.k = max(s.k)"}, "Aggregate functions are not supported in the search condition of MERGE"),
        (
            {"when_matched": [{"action": "delete", "condition": "count(*) > 1"}]},
            "[DELTA_AGGREGATION_NOT_SUPPORTED] Aggregate functions are not supported in the DELETE condition",
        ),
        (
            {"when_not_matched": [{"action": "insert", "condition": "s.k in (select 1)"}]},
            "[DELTA_UNSUPPORTED_SUBQUERY] Subqueries are not supported in the INSERT condition of MERGE "
            "operation "
            "(condition = s.k in (select 1)).",
        ),
        (
            {"when_not_matched_by_source": [{"action": "delete", "condition": "exists(select 1)"}]},
            "Subqueries are not supported in the DELETE condition",
        ),
        (
            {"when_matched": [{"action": "update", "condition": "row_number() over (order by s.k) > 1"}]},
            "[UNSUPPORTED_EXPR_FOR_OPERATOR]",
        ),
        (
            {"when_matched": [{"action": "update", "set": {"v": "max(s.v)"}}]},
            "Invalid expressions: [MAX(s.v)]",
        ),
    ],
)
def test_each_refusal_names_deltas_error(config, expected):
    problems = refusals(spec(**config))
    assert len(problems) == 1 and expected in problems[0]


def test_what_delta_allows_is_not_refused():
    allowed = spec(
        on="t.k = s.k AND t.d > date_sub(current_date(), 3)",
        when_matched=[
            {"action": "update", "condition": "s.v > t.v", "set": {"v": "rand()", "w": "(select 1)"}}
        ],
        when_not_matched=[{"action": "insert", "values": {"k": "s.k", "v": "s.v"}}],
    )
    assert refusals(allowed) == []


def test_the_relations_a_subquery_reads_are_named_for_spark_to_resolve_first():
    spec = MergeSpec.from_config(
        "m",
        {
            "merge_condition": "t.k = s.k",
            "source_alias": "s",
            "target_alias": "t",
            "when_matched": [
                {"action": "delete", "condition": "s.v in (select v from t)"},
                {"action": "update", "set": {"v": "(select max(id) from range(3))"}},
            ],
            "when_not_matched": [{"action": "insert", "condition": "exists (select 1 from `my db`.`T`)"}],
        },
    )
    assert subquery_relations(spec) == ["`t`", "`my db`.`T`"]
    assert subquery_relations(MergeSpec.from_config("m", {"unique_key": "id"})) == []
