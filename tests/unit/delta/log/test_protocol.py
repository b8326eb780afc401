"""The protocol a table's properties and schema need: pure checks."""

from __future__ import annotations

from dbt.adapters.deltamerge.delta.log.protocol import Protocol, protocol_for, table_features, upgraded


def test_protocols_of_new_tables_list_reader_writer_features_on_both_sides():
    features = table_features(
        {"delta.enableDeletionVectors": "true", "delta.enableInCommitTimestamps": "true"}, set()
    )
    protocol = protocol_for(features)
    assert protocol.reader_features == ("deletionVectors",)
    assert protocol.writer_features == ("deletionVectors", "inCommitTimestamp")
    assert Protocol.from_action(protocol.to_action()["protocol"]) == protocol


def test_a_legacy_protocol_that_implies_column_mapping_is_kept():
    # Writer version 5 (reader 2) is column mapping: writing to such a table raises nothing.
    assert upgraded(Protocol(2, 5), {"columnMapping"}) == Protocol(2, 5)
    assert table_features({"delta.columnMapping.mode": "name"}, set()) == {"columnMapping"}


def test_a_new_table_with_row_tracking_gets_its_domain_feature_and_materialized_column_names():
    from dbt.adapters.deltamerge.delta.log.protocol import ROW_ID_COLUMN, with_row_tracking_columns

    rows = {"delta.enableRowTracking": "true"}
    assert table_features(rows, set()) == {"rowTracking", "domainMetadata"}
    named = with_row_tracking_columns(rows, {})
    assert named[ROW_ID_COLUMN].startswith("_row-id-col-")
    assert with_row_tracking_columns(rows, named) == named  # a replaced table keeps its names
    assert with_row_tracking_columns({}, named) == {}
