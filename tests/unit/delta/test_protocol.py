"""Which protocols and table features the writer takes: pure checks."""

from __future__ import annotations

import pytest

from dbt.adapters.deltamerge.delta.errors import UnsupportedTableFeature
from dbt.adapters.deltamerge.delta.protocol import Protocol, check_writable, feature_problems


def test_plain_tables_are_writable():
    check_writable(Protocol(1, 2), {}, "", table="t")
    check_writable(Protocol(3, 7, ("timestampNtz",), ("timestampNtz", "appendOnly")), {}, "", table="t")
    check_writable(Protocol(1, 4), {"delta.enableChangeDataFeed": "true"}, "", table="t")
    check_writable(
        Protocol(1, 7, None, ("changeDataFeed",)), {"delta.enableChangeDataFeed": "true"}, "", table="t"
    )


@pytest.mark.parametrize(
    ("protocol", "configuration", "schema", "named"),
    [
        (Protocol(3, 7, ("deletionVectors",), ("deletionVectors",)), {}, "", "deletionVectors"),
        (Protocol(2, 5), {"delta.columnMapping.mode": "name"}, "", "columnMapping"),
        (Protocol(1, 7, None, ("rowTracking", "domainMetadata")), {}, "", "rowTracking"),
        (Protocol(1, 3), {"delta.constraints.positive": "x > 0"}, "", "positive"),
        (Protocol(1, 4), {"delta.enableTypeWidening": "true"}, "", "typeWidening"),
        (
            Protocol(1, 4),
            {},
            '{"type":"struct","fields":[{"name":"g","type":"long","nullable":true,'
            '"metadata":{"delta.generationExpression":"1"}}]}',
            "generated column `g`",
        ),
        (Protocol(4, 8), {}, "", "reader 4, writer 8"),
    ],
)
def test_unsupported_features_are_named(protocol, configuration, schema, named):
    problems = feature_problems(protocol, configuration, schema)
    assert any(named in p for p in problems), problems
    with pytest.raises(UnsupportedTableFeature, match="Nothing was written"):
        check_writable(protocol, configuration, schema, table="/t")
