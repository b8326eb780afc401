"""Which table features the engine reads and writes, and the refusals of the others: pure checks."""

from __future__ import annotations

import pytest

from dbt.adapters.deltamerge.delta.errors import UnsupportedTableFeature
from dbt.adapters.deltamerge.delta.log.features import check_writable, feature_problems
from dbt.adapters.deltamerge.delta.log.protocol import Protocol


def test_plain_tables_are_writable():
    check_writable(Protocol(1, 2), {}, "", table="t")
    # Features whose writer requirements this writer implements (removes carry deletion vectors,
    # stamps.py assigns row ids and in-commit timestamps, domains are kept).
    dv = {"delta.enableDeletionVectors": "true"}
    check_writable(Protocol(3, 7, ("deletionVectors",), ("deletionVectors",)), dv, "", table="t")
    rows = {"delta.enableRowTracking": "true", "delta.enableInCommitTimestamps": "true"}
    features = ("rowTracking", "domainMetadata", "inCommitTimestamp", "liquid", "clustering")
    check_writable(Protocol(3, 7, ("v2Checkpoint",), (*features, "v2Checkpoint")), rows, "", table="t")
    check_writable(Protocol(3, 7, ("timestampNtz",), ("timestampNtz", "appendOnly")), {}, "", table="t")
    check_writable(Protocol(1, 4), {"delta.enableChangeDataFeed": "true"}, "", table="t")
    # IcebergCompatV2 (UniForm): column mapping on, no deletion vectors, Iceberg's types.
    uniform = {
        "delta.enableIcebergCompatV2": "true",
        "delta.universalFormat.enabledFormats": "iceberg",
        "delta.columnMapping.mode": "name",
    }
    check_writable(Protocol(2, 7, None, ("icebergCompatV2", "columnMapping")), uniform, "", table="t")
    check_writable(
        Protocol(1, 7, None, ("changeDataFeed",)), {"delta.enableChangeDataFeed": "true"}, "", table="t"
    )


@pytest.mark.parametrize(
    ("protocol", "configuration", "schema", "named"),
    [
        (
            Protocol(3, 7, ("variantShredding-preview",), ("variantShredding-preview",)),
            {},
            "",
            "variantShredding",
        ),
        (Protocol(1, 7, None, ("icebergCompatV1",)), {}, "", "icebergCompatV1"),
        (
            Protocol(2, 7, None, ("icebergCompatV2", "columnMapping")),
            {"delta.enableIcebergCompatV2": "true"},
            "",
            "needs column mapping",
        ),
        (
            Protocol(
                3,
                7,
                ("columnMapping", "deletionVectors"),
                ("icebergCompatV2", "columnMapping", "deletionVectors"),
            ),
            {
                "delta.enableIcebergCompatV2": "true",
                "delta.columnMapping.mode": "name",
                "delta.enableDeletionVectors": "true",
            },
            "",
            "needs deletion vectors off",
        ),
        (
            Protocol(2, 7, None, ("icebergCompatV2", "columnMapping")),
            {"delta.enableIcebergCompatV2": "true", "delta.columnMapping.mode": "name"},
            '{"type":"struct","fields":[{"name":"tags","type":{"type":"array","elementType":"string",'
            '"containsNull":true},"nullable":true,"metadata":{}}]}',
            "column `tags` is an array",
        ),
        (Protocol(1, 7), {"delta.universalFormat.enabledFormats": "hudi"}, "", "enabledFormats=hudi"),
        (Protocol(3, 7, ("typeWidening",), ("typeWidening",)), {}, "", "typeWidening"),
        (Protocol(1, 7, None, ("madeUpFeature",)), {}, "", "madeUpFeature"),
        (Protocol(2, 5), {"delta.columnMapping.mode": "byMagic"}, "", "columnMapping"),
        (Protocol(1, 4), {"delta.enableTypeWidening": "true"}, "", "typeWidening"),
        (
            Protocol(1, 4),
            {},
            '{"type":"struct","fields":[{"name":"s","type":{"type":"struct","fields":[{"name":"g",'
            '"type":"long","nullable":true,"metadata":{"delta.generationExpression":"1"}}]},'
            '"nullable":true,"metadata":{}}]}',
            "nested field `s.g`",
        ),
        (Protocol(4, 8), {}, "", "reader 4, writer 8"),
    ],
)
def test_unsupported_features_are_named(protocol, configuration, schema, named):
    problems = feature_problems(protocol, configuration, schema)
    assert any(named in p for p in problems), problems
    with pytest.raises(UnsupportedTableFeature, match="Nothing was written"):
        check_writable(protocol, configuration, schema, table="/t")


def test_constraints_generated_identity_and_default_columns_are_written():
    schema = (
        '{"type":"struct","fields":[{"name":"g","type":"long","nullable":false,'
        '"metadata":{"delta.generationExpression":"1"}},{"name":"i","type":"long","nullable":true,'
        '"metadata":{"delta.identity.start":1,"delta.identity.step":1}},{"name":"d","type":"string",'
        '"nullable":true,"metadata":{"CURRENT_DEFAULT":"\'x\'","delta.invariants":"{}"}}]}'
    )
    features = ("checkConstraints", "generatedColumns", "identityColumns", "invariants")
    features += ("allowColumnDefaults",)
    protocol = Protocol(1, 7, None, features)
    assert feature_problems(protocol, {"delta.constraints.positive": "g > 0"}, schema) == []


def test_a_feature_is_switched_on_only_where_this_writer_keeps_it():
    from dbt.adapters.deltamerge.delta.log.features import configuration_problems

    ict, rows = {"delta.enableInCommitTimestamps": "true"}, {"delta.enableRowTracking": "true"}
    dv = {"delta.enableDeletionVectors": "true"}
    assert configuration_problems(ict, None) == []  # a new table: timestamps from its first version
    assert configuration_problems(dv, None) == [] and configuration_problems(dv, {}) == []
    assert configuration_problems(ict, ict) == [] and configuration_problems(rows, rows) == []
    # Switched on for an existing table: needs enablement properties / row id backfills.
    assert configuration_problems(ict, {}) == [
        "table property delta.enableInCommitTimestamps=true (inCommitTimestamp)"
    ]
    assert configuration_problems(rows, None) == []  # a new table: row ids from its first file
    assert configuration_problems(rows, {}) == ["table property delta.enableRowTracking=true (rowTracking)"]


def test_append_only_tables_refuse_removing_rows_with_delta_s_error():
    from dbt.adapters.deltamerge.delta.errors import DeltaError
    from dbt.adapters.deltamerge.delta.log.features import check_removable

    check_removable({}, table="t")
    check_removable({"delta.appendOnly": "false"}, table="t")
    with pytest.raises(DeltaError, match=r"only allow appends.*delta.appendOnly=false"):
        check_removable({"delta.appendOnly": "true"}, table="db.t")
