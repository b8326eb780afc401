"""The Delta snapshot behind one catalog entry of ``dbt docs generate`` (a table written by delta-rs)."""

from __future__ import annotations

import pyarrow as pa
from deltalake import write_deltalake

from dbt.adapters.deltamerge.binding import LOCATION_PROPERTY
from dbt.adapters.deltamerge.delta import Stores
from dbt.adapters.deltamerge.docs_catalog import catalog_stats, delta_snapshot, held_snapshot


def _information(path: str) -> str:
    """An entry of ours as dbt's cache lists it, its property value redacted (the folder tells)."""
    return (
        f"Table: t\nType: EXTERNAL\nTable Properties: [{LOCATION_PROPERTY}=*********(redacted)]\n"
        f"Location: file:{path}/_deltamerge_catalog/v00000000000000000001\n"
    )


def test_one_catalog_entry_reads_its_delta_log_once(tmp_path):
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"a": [1, 2, 3]}))
    information = _information(path)
    with held_snapshot(information, Stores({})) as held:
        assert held is not None and delta_snapshot(information, Stores({})) is held
        assert delta_snapshot(_information(str(tmp_path / "other")), Stores({})) is None
    after = delta_snapshot(information, Stores({}))
    assert after is not None and after is not held and after.version == held.version == 0


def test_statistics_are_the_delta_log_s(tmp_path):
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"a": [1, 2, 3]}))
    write_deltalake(path, pa.table({"a": [4]}), mode="append")
    snapshot = delta_snapshot(_information(path), Stores({}))
    assert snapshot is not None
    stats = catalog_stats(snapshot)
    values = {key: stats[f"stats:{key}:value"] for key in ("rows", "files", "version")}
    assert values == {"rows": 4, "files": 2, "version": 1}
    assert stats["stats:bytes:value"] == sum(f.size for f in snapshot.files) > 0
