"""Delta tables other writers made (delta-rs's fixtures): each read path reads them right, or refuses.

A refusal names the table feature, before anything is read or written.

Registering such a table (``CREATE TABLE t USING delta LOCATION '...'``) and reading it through
the catalog once returned the rows that deletion vectors had deleted, and nulls for every
column-mapped column. Each fixture is copied into the test's own folder; its rows are checked
against delta-rs's DataFusion reader (``QueryBuilder``), which applies deletion vectors and
column mapping.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet
import pytest
from deltalake import DeltaTable, QueryBuilder

from dbt.adapters.deltamerge.delta.change_feed import read_changes
from dbt.adapters.deltamerge.delta.errors import UnsupportedTableFeature
from dbt.adapters.deltamerge.delta.read import read_files
from dbt.adapters.deltamerge.delta.snapshot import load_snapshot
from dbt.adapters.deltamerge.delta.vacuum import vacuum

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "delta-rs"
# Tables whose every reader feature our reads implement (deletion vectors applied, names mapped).
READABLE = (
    "table-without-dv-small",
    "table-with-dv-small",
    "table_with_deletion_logs",
    "cdf-table-with-cdc-and-dvs",
    "table_with_column_mapping",
    "table_with_partitioning_mapping",
    "table_with_liquid_clustering",
    "checkpoint-v2-table",
    "cdc_ict_table",
)
# Tables a read would get wrong, and the feature each refusal names.
REFUSED = {
    "spark-variant-checkpoint": "reader feature 'variantType-preview'",
    "simple_table_features": "reader feature 'blahabl'",
}
ENGINE_READS = (
    "table-with-dv-small",
    "table_with_deletion_logs",
    "cdf-table-with-cdc-and-dvs",
    "table_with_column_mapping",
    "table_with_partitioning_mapping",
)


def _copy(name: str, root: Path) -> str:
    target = root / name
    if not target.exists():
        shutil.copytree(FIXTURES / name, target)
    return str(target)


def _listing(path: str) -> dict[str, int]:
    return {
        os.path.relpath(os.path.join(d, n), path): os.stat(os.path.join(d, n)).st_size
        for d, _, names in os.walk(path)
        for n in names
    }


def _reference(path: str) -> list[tuple]:
    """The live rows as delta-rs's DataFusion reader gives them (deletion vectors and mapping applied)."""
    table = pa.table(QueryBuilder().register("t", DeltaTable(path)).execute("select * from t").read_all())
    return _sorted(tuple(r.values()) for r in table.to_pylist())


def _sorted(rows: Iterable[Sequence[Any]]) -> list[tuple]:
    """Rows comparable across readers: timestamps as naive UTC (Spark's are in the session's zone)."""

    def plain(value: Any) -> Any:
        if isinstance(value, dt.datetime):
            return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return value

    return sorted((tuple(plain(v) for v in row) for row in rows), key=repr)


@pytest.mark.connect
class TestRegisteredTablesOfOtherWriters:
    @pytest.fixture(scope="class")
    def tables(self, tmp_path_factory: pytest.TempPathFactory) -> Path:
        return tmp_path_factory.mktemp("lake")

    @pytest.mark.parametrize("name", READABLE)
    def test_a_table_every_read_implements_reads_what_delta_rs_reads(self, project, tables, name):
        path = _copy(name, tables)
        ident = name.replace("-", "_")
        project.run_sql(f"create table {project.test_schema}.{ident} using delta location '{path}'")
        # The Delta schema's order (Spark's catalog puts partition columns last in `select *`).
        columns = ", ".join(f"`{f.name}`" for f in DeltaTable(path).schema().fields)
        rows = project.run_sql(f"select {columns} from {project.test_schema}.{ident}", fetch="all")
        assert _sorted(rows) == _reference(path)
        assert DeltaTable(path).version() == DeltaTable(str(FIXTURES / name)).version()  # nothing committed
        data = [f for f in _listing(path) if f.endswith(".parquet") and "_deltamerge_catalog" not in f]
        assert sorted(data) == sorted(f for f in _listing(str(FIXTURES / name)) if f.endswith(".parquet"))

    @pytest.mark.parametrize("name", sorted(REFUSED))
    def test_a_table_a_read_would_get_wrong_is_refused_naming_the_feature(self, project, tables, name):
        path = _copy(name, tables)
        before = _listing(path)
        ident = name.replace("-", "_")
        with pytest.raises(Exception) as caught:
            project.run_sql(f"create table {project.test_schema}.{ident} using delta location '{path}'")
        assert REFUSED[name] in str(caught.value), str(caught.value)
        assert "Nothing was read" in str(caught.value)
        assert _listing(path) == before  # not even the catalog binding's folder
        relations = project.run_sql(f"show tables in {project.test_schema}", fetch="all")
        assert ident not in {str(r[1]) for r in relations}


@pytest.mark.parametrize("name", ENGINE_READS)
def test_the_engine_s_reads_apply_deletion_vectors_and_mapped_names(spark, tmp_path, name):
    path = _copy(name, tmp_path)
    snapshot = load_snapshot(path)
    assert snapshot is not None
    columns = [f.name for f in snapshot.schema.fields]
    frame = read_files(spark, snapshot, list(snapshot.files)).select(*[f"`{c}`" for c in columns])
    rows = frame.collect()
    assert _sorted(rows) == _reference(path)
    assert len(rows) == sum(f.live_records or 0 for f in snapshot.files)
    assert not any(all(v is None for v in row) for row in rows)  # a mapped column read by its name is null


@pytest.mark.parametrize("name", ["table-with-dv-small", "table_with_column_mapping"])
def test_the_change_feed_and_vacuum_refuse_what_they_do_not_read(spark, tmp_path, name):
    path = _copy(name, tmp_path)
    before = _listing(path)
    with pytest.raises(UnsupportedTableFeature, match=r"change data feed .*(deletionVectors|columnMapping)"):
        read_changes(spark, path, 0)
    # VACUUM deletes files: not knowing deletion vector files (or mapped columns) could lose data.
    with pytest.raises(UnsupportedTableFeature):
        vacuum(path, retain_hours=0, enforce_retention=False)
    assert _listing(path) == before


def test_the_binding_holds_a_copy_of_the_live_rows_of_each_file_with_a_deletion_vector(project, tmp_path):
    path = _copy("table-with-dv-small", tmp_path)
    name = f"{project.test_schema}.dv_copies"
    project.run_sql(f"create table {name} using delta location '{path}'")
    project.run_sql(f"drop table {name}")
    project.run_sql(f"create table {name} using delta location '{path}'")  # binds the version again
    copies = [p for p in (Path(path) / "_deltamerge_catalog" / "live").iterdir() if p.suffix == ".parquet"]
    assert len(copies) == 1 and os.stat(copies[0]).st_nlink == 2  # the copy and the version's link
    assert pa.parquet.read_table(copies[0]).num_rows == 8  # 10 rows, 2 deleted
    assert project.run_sql(f"select count(*) from {name}", fetch="one")[0] == 8
