from __future__ import annotations

from dbt.adapters.deltamerge.delta.txn.actions import WrittenFile, add_actions

FILE = WrittenFile("p=x/a.parquet", 10, {"p": "x"}, '{"numRecords": 1}', 1)


def test_files_of_an_iceberg_compat_v2_table_are_tagged_as_delta_tags_them():
    (tagged,) = add_actions([FILE], {"delta.enableIcebergCompatV2": "true"})
    assert tagged["add"]["tags"] == {"ICEBERG_COMPAT_VERSION": "2"}


def test_other_tables_files_carry_no_tag():
    for configuration in (None, {}, {"delta.enableIcebergCompatV2": "false"}):
        (plain,) = add_actions([FILE], configuration)
        assert "tags" not in plain["add"]
