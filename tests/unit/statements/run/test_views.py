"""A temp view's analyzed plan -> the Delta table a MERGE into it writes (pure)."""

from __future__ import annotations

import pytest

from dbt.adapters.deltamerge.statements.run.views import ViewError, underlying_table

TABLE = """      +- SubqueryAlias spark_catalog.s.tab
         +- Relation spark_catalog.s.tab[key#2,value#3] parquet"""


def plan(*nodes: str) -> str:
    return "\n".join(["key: int, value: int", "Project [key#13, value#14]", *nodes, TABLE])


def test_the_table_itself_through_aliases_views_and_passing_projections():
    assert underlying_table(
        plan(
            "+- SubqueryAlias v",
            "   +- View (`v`, [key#13, value#14])",
            "      +- Project [cast(key#2 as int) AS key#13, cast(value#3 as decimal(10,2)) AS value#14]",
            "         +- Project [value#3, key#2]",
            "            +- SubqueryAlias t1",
        )
    ) == ("s", "tab")


@pytest.mark.parametrize(
    ("node", "said"),
    [
        ("   +- Filter (key#2 > 1)", "DELTA_UNEXPECTED_PARTIAL_SCAN"),
        ("   +- Project [value#3 AS key#13, key#2 AS value#14]", "renames a column (value#3 AS key#13)"),
        (
            "   +- Project [(key#2 + 1) AS key#13, value#3]",
            "computes or renames a column ((key#2 + 1) AS key#13)",
        ),
        ("   +- Aggregate [key#2], [key#2, max(value#3) AS value#14]", "its plan has a Aggregate"),
    ],
)
def test_a_view_that_is_not_its_table_is_refused_naming_why(node, said):
    with pytest.raises(ViewError, match=said.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")):
        underlying_table(plan(node))
