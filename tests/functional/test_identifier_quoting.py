"""Property-based: identifiers from config are rejected or reach Spark as exactly one identifier."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.merge import MergeSpec

names = st.text(min_size=1, max_size=12)

pytestmark = pytest.mark.embedded_only  # parses with Spark's JVM parser as the reference


def _parts(spark, expression: str) -> list[str] | None:
    parsed = spark._jsparkSession.sessionState().sqlParser().parseExpression(expression)
    if parsed.getClass().getSimpleName() != "UnresolvedAttribute":
        return None
    return [str(parsed.nameParts().apply(i)) for i in range(parsed.nameParts().size())]


@settings(max_examples=300, deadline=None)
@given(key=names, column=names)
def test_unique_key_and_set_keys_cannot_inject_sql(spark, key, column):
    config = {"unique_key": key, "when_matched": [{"action": "update", "set": {column: "1"}}]}
    try:
        spec = MergeSpec.from_config("m", config)
    except SpecError:
        return  # rejected, with our error
    on = spark._jsparkSession.sessionState().sqlParser().parseExpression(spec.on_condition)
    assert on.getClass().getSimpleName() == "EqualNullSafe"
    left, right = on.children().apply(0), on.children().apply(1)
    assert _parts(spark, left.sql()) is not None
    assert [str(left.nameParts().apply(i)) for i in range(2)] == ["DBT_INTERNAL_DEST", key.strip()]
    assert [str(right.nameParts().apply(i)) for i in range(2)] == ["DBT_INTERNAL_SOURCE", key.strip()]
    assignment = spec.matched[0].assignments[0]
    from dbt.adapters.deltamerge.common.sql import quote_identifier

    assert _parts(spark, quote_identifier(assignment.column)) == [assignment.column]
