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
import itertools
import json
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet
import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file
from deltalake import DeltaTable, QueryBuilder
from pyspark.sql import Row
from pyspark.sql.types import VariantVal

import dbt.adapters.deltamerge.binding.links as binding_links
from dbt.adapters.deltamerge import binding
from dbt.adapters.deltamerge.binding import registered_root
from dbt.adapters.deltamerge.delta import Stores, TableLocation, UnsupportedTableFeature, load_snapshot
from dbt.adapters.deltamerge.delta.commands import read_changes, vacuum
from dbt.adapters.deltamerge.delta.data import read_files
from dbt.adapters.deltamerge.delta.log import vector_file
from tests import files
from tests.backend import ON_S3, SLOW
from tests.functional.helpers import live_rows, table_path
from tests.validator import problems

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
    "spark-variant-checkpoint",
)
# Tables a read would get wrong, and the feature each refusal names.
REFUSED = {"simple_table_features": "reader feature 'blahabl'"}
ENGINE_READS = (
    "table-with-dv-small",
    "table_with_deletion_logs",
    "cdf-table-with-cdc-and-dvs",
    "table_with_column_mapping",
    "table_with_partitioning_mapping",
)


def _copy(name: str, root: Path | str) -> str:
    """A copy of a fixture table under ``root`` (a folder, or a prefix of a bucket on S3)."""
    target = files.join(str(root), name)
    if files.is_uri(target) or not os.path.exists(target):
        files.copy_folder(str(FIXTURES / name), target)
    return target


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
    """Rows comparable across readers: timestamps as naive UTC (Spark's are in the session's zone);
    a struct (Spark's Row, pyarrow's dict), a map (Spark's dict, pyarrow's pairs) and a variant
    (Spark's VariantVal, delta-rs's two binaries) each as its sorted (name, value) pairs."""

    def pairs(items: Iterable[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
        return sorted(((k, plain(v)) for k, v in items), key=repr)

    def plain(value: Any) -> Any:
        if isinstance(value, dt.datetime):
            return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        if isinstance(value, VariantVal):
            return pairs([("metadata", bytes(value.metadata)), ("value", bytes(value.value))])
        if isinstance(value, Row):
            return pairs(value.asDict().items())
        if isinstance(value, dict):
            return pairs(value.items())
        if isinstance(value, list) and value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return pairs(value)
        if isinstance(value, list):
            return [plain(v) for v in value]
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
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
        # Registering wrote nothing into the table: its link folders are under the warehouse.
        assert _listing(path) == _listing(str(FIXTURES / name))

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


@pytest.mark.stores
@pytest.mark.parametrize("name", ENGINE_READS)
def test_the_engine_s_reads_apply_deletion_vectors_and_mapped_names(spark, lake_root, name):
    path = _copy(name, lake_root)
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    columns = [f.name for f in snapshot.schema.fields]
    frame = read_files(spark, snapshot, list(snapshot.files)).select(*[f"`{c}`" for c in columns])
    rows = frame.collect()
    assert _sorted(rows) == _reference(path)
    assert len(rows) == sum(f.live_records or 0 for f in snapshot.files)
    assert not any(all(v is None for v in row) for row in rows)  # a mapped column read by its name is null


def test_the_change_feed_refuses_a_column_mapped_table(spark, tmp_path):
    path = _copy("table_with_column_mapping", tmp_path)
    before = _listing(path)
    with pytest.raises(UnsupportedTableFeature, match=r"change data feed .*columnMapping"):
        read_changes(spark, TableLocation.of(path), 0)
    assert _listing(path) == before


def test_vacuum_keeps_the_deletion_vector_files_retained_versions_use(tmp_path):
    # Version 1 deleted one row with a vector; later versions replaced it with another file's.
    path = _copy("table_with_deletion_logs", tmp_path)
    rows = _reference(path)
    vectors = sorted(f for f in _listing(path) if f.startswith("deletion_vector_"))
    live = [f.deletion_vector for f in load_snapshot(TableLocation.of(path)).files if f.deletion_vector]  # type: ignore[union-attr]
    assert len(vectors) == 2 and len(live) == 1
    result = vacuum(TableLocation.of(path), retain_hours=0, enforce_retention=False)
    kept = sorted(f for f in _listing(path) if f.startswith("deletion_vector_"))
    assert kept == [vector_file(live[0])] and [f for f in result.files if f.startswith("deletion_")] == [
        v for v in vectors if v not in kept
    ]
    assert _reference(path) == rows and len(rows) == 98  # the deleted rows stay deleted


def test_the_binding_of_a_table_with_deletion_vectors_is_a_view_that_leaves_deleted_rows_out(
    project, spark, tmp_path
):
    path = _copy("table-with-dv-small", tmp_path)
    name = f"{project.test_schema}.dv_view"
    project.run_sql(f"create table {name} using delta location '{path}'")
    project.run_sql(f"drop table {name}")
    project.run_sql(f"create table {name} using delta location '{path}'")  # binds the version again
    assert _listing(path) == _listing(str(FIXTURES / "table-with-dv-small"))  # nothing written into it
    root = Path(registered_root(spark, TableLocation.of(path)))
    (version,) = [p for p in root.iterdir() if p.name.startswith("v")]
    (data,) = [p for p in version.iterdir() if p.suffix == ".parquet"]
    assert os.stat(data).st_ino == os.stat(Path(path) / data.name).st_ino  # the data file, not a copy
    assert not (root / "live").exists()
    masks = pa.parquet.read_table(version / "_masks").to_pylist()
    deleted = load_snapshot(TableLocation.of(path)).files[0].deleted_rows  # type: ignore[union-attr]
    assert masks == [{"file": data.name, "block": 0, "mask": sum(1 << i for i in deleted)}]
    assert project.run_sql(f"select count(*) from {name}", fetch="one")[0] == 8  # 10 rows, 2 deleted
    assert _sorted(project.run_sql(f"select * from {name}", fetch="all")) == _reference(path)
    tables = {r[1] for r in spark.sql(f"show tables in {project.test_schema}").collect()}
    assert spark.sql(f"describe table extended {name}").where("col_name = 'Type'").first()[1] == "VIEW"
    assert {"dv_view", "dv_view__deltamerge_files"} <= tables  # the view stands on its files table


def test_a_version_s_folder_makes_again_the_live_copies_a_concurrent_prune_removed(
    spark, tmp_path, monkeypatch
):
    # Until a run links a copy into its folder, the copy's only name is its own, and another run
    # binding the same table prunes such copies: the CI race of two dbt invocations on one model
    # of a column-mapped table failed "cannot link" here.
    path = _copy("table_with_column_mapping", tmp_path)
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None and snapshot.files
    root = str(tmp_path / "bindings")
    made = binding_links.live_copies
    pruned: list[int] = []

    def made_then_pruned(*args: Any) -> dict[str, str]:
        copies = made(*args)
        if pruned:  # a copy made again
            return copies
        before = len(os.listdir(os.path.join(root, "live")))
        binding.prune_bindings(Stores(), root, keep=binding.KEEP_BINDINGS)  # the other run's, in the window
        pruned.append(before - len(os.listdir(os.path.join(root, "live"))))
        return copies

    monkeypatch.setattr(binding_links, "live_copies", made_then_pruned)
    folder = binding.link_version(spark, snapshot, root)
    assert pruned[0] == len(snapshot.files)  # every copy was gone before its first link
    linked = [p for p in _listing(folder) if p.endswith(".parquet")]
    assert len(linked) == len(snapshot.files)
    assert all(os.stat(os.path.join(folder, p)).st_nlink == 2 for p in linked)  # folder + live/
    assert _sorted(
        spark.read.parquet(folder).select(*[f"`{f.name}`" for f in snapshot.schema.fields]).collect()
    ) == (_reference(path))


# Statements on each table other writers made, and how a reference computes their result over the
# rows before (delta-rs's DataFusion SQL on the version before): `key` unique; a MERGE whose source
# is the table itself, keys of rows where `shift` holds moved to `new_key` (inserted), others
# matched: deleted where `gone` holds, else `column` set to `value`.
SMALL = {
    "key": "value",
    "shift": "value % 4 = 1",
    "new_key": "value + 1000",
    "gone": "value % 3 = 0",
    "column": "value",
    "value": "value + 100",
    "delete": "value < 2",
    "update": "value > 6",
}
WRITES: dict[str, dict[str, str]] = {
    "table-without-dv-small": SMALL,
    "table-with-dv-small": SMALL,  # the same ten values, two of them deleted by a vector
    "table_with_deletion_logs": {
        "key": "id",
        "shift": "id % 7 = 0",
        "new_key": "id + 1000",
        "gone": "nbr % 5 = 0",
        "column": "name",
        "value": "upper(name)",
        "delete": "company = 'Gr'",
        "update": "id < 40",
    },
    "cdf-table-with-cdc-and-dvs": {
        "key": "id",
        "shift": "id = 1",
        "new_key": "id + 1000",
        "gone": "id = 0",
        "column": "comment",
        "value": "concat(comment, '!')",
        "delete": "id = 12",
        "update": "id >= 3",
    },
    "table_with_liquid_clustering": {
        "key": "id",
        "shift": "id % 3 = 0",
        "new_key": "id + 1000",
        "gone": "id = 4",
        "column": "id",
        "value": "id + 100",
        "delete": "id = 1",
        "update": "id > 7",
    },
    "table_with_column_mapping": {
        "key": "Super Name",
        "shift": "\"Company Very Short\" = 'BME'",
        "new_key": "concat(\"Super Name\", ' Jr')",
        "gone": "\"Super Name\" = 'Nathan Bennett'",
        "column": "Super Name",
        "value": 'upper("Super Name")',
        "delete": "\"Super Name\" = 'Anthony Johnson'",
        "update": "\"Super Name\" like 'S%'",
    },
    "table_with_partitioning_mapping": {
        "key": "newid",
        "shift": "newid = 2",
        "new_key": "newid + 10",
        "gone": "newid = 99",
        "column": "description",
        "value": "concat(description, '!')",
        "delete": "newid = 1",
        "update": "newid = 2",
    },
    "cdc_ict_table": {
        "key": "name",
        "shift": "age > 40",
        "new_key": "concat(name, '-2')",
        "gone": "name = 'Nobody'",
        "column": "age",
        "value": "age + 1",
        "delete": "age < 38",
        "update": "birthyear = 1986",
    },
}

# On an object store, a partitioned table mapping column names without its partition values in
# its files is bound in the catalog only with Delta's jars (``binding/manifest.bindable``): both
# mapping fixtures are such tables, and the S3 run writes to the others;
# ``make test``'s S3 sample takes two of them (deletion vectors with row ids, the change feed).
_ON_THIS_STORE = sorted(
    n
    for n in WRITES
    if not ON_S3
    or ("mapping" not in n and (SLOW or n in ("table_with_deletion_logs", "cdf-table-with-cdc-and-dvs")))
)


def _reference_sql(path: str, version: int, sql: str) -> list[tuple]:
    table = DeltaTable(path, version=version)
    rows = pa.table(QueryBuilder().register("t", table).execute(sql).read_all())
    return _sorted(tuple(r.values()) for r in rows.to_pylist())


def _expected(path: str, version: int, kind: str, spec: dict[str, str]) -> list[tuple]:
    """What DELETE / UPDATE / MERGE of ``spec`` leaves, computed by delta-rs over ``version``.

    delta-rs's SQL projects every expression right but filters a column-mapped partition column
    wrong under NOT / COALESCE (it returns every row): so each predicate is projected as a flag
    and the rows are picked here.
    """
    fields = [f.name for f in DeltaTable(path).schema().fields]
    quoted = [f'"{c}"' for c in fields]
    width = len(fields)
    updated = [spec["value"] if c == spec["column"] else q for c, q in zip(fields, quoted, strict=True)]
    moved = [spec["new_key"] if c == spec["key"] else q for c, q in zip(fields, quoted, strict=True)]
    flags = [f"coalesce({spec[k]}, false)" for k in ("delete", "update", "shift", "gone")]
    projected = ", ".join(f"{e} as c{i}" for i, e in enumerate([*quoted, *updated, *moved, *flags]))
    rows = _reference_sql(path, version, f"select {projected} from t")
    result: list[tuple] = []
    for row in rows:
        old, new, shifted = row[:width], row[width : 2 * width], row[2 * width : 3 * width]
        deleted, hit, shift, gone = row[3 * width :]
        if kind == "DELETE":
            result += [] if deleted else [old]
        elif kind == "UPDATE":
            result.append(new if hit else old)
        elif shift:
            result += [old, shifted]
        elif not gone:
            result.append(new)
    return _sorted(result)


def _statement(kind: str, table: str, spec: dict[str, str], columns: Sequence[str]) -> str:
    """The Spark SQL of ``kind`` (the spec's "quoted" identifiers in backticks)."""
    sql = {k: v.replace('"', "`") for k, v in spec.items()}
    key, column = spec["key"], spec["column"]
    if kind == "DELETE":
        return f"delete from {table} where {sql['delete']}"
    if kind == "UPDATE":
        return f"update {table} set `{column}` = {sql['value']} where {sql['update']}"
    source = ", ".join(
        f"case when {sql['shift']} then {sql['new_key']} else `{key}` end as `{key}`"
        if c == key
        else f"`{c}`"
        for c in columns
    )
    gone, value = _on_source(sql["gone"], columns), _on_source(sql["value"], columns)
    return (
        f"merge into {table} t using (select {source} from {table}) s on t.`{key}` = s.`{key}` "
        f"when matched and {gone} then delete "
        f"when matched then update set t.`{column}` = {value} "
        "when not matched then insert *"
    )


def _on_source(expression: str, columns: Sequence[str]) -> str:
    """``expression`` with each column of the table read from the merge's source ``s``."""
    for column in columns:
        expression = expression.replace(f"`{column}`", f"s.`{column}`")
        if re.fullmatch(r"\w+", column):
            expression = re.sub(rf"(?<![`.\w]){column}\b(?!')", f"s.`{column}`", expression)
    return expression


def _log(path: str, version: int) -> list[dict[str, Any]]:
    text = files.read_text(files.join(path, f"_delta_log/{version:020d}.json"))
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _features(path: str) -> tuple[set[str], set[str], dict[str, str]]:
    table = DeltaTable(path)
    protocol = table.protocol()
    return (
        set(protocol.reader_features or ()),
        set(protocol.writer_features or ()),
        dict(table.metadata().configuration),
    )


@pytest.mark.stores
@pytest.mark.parametrize("name", _ON_THIS_STORE)
def test_delete_update_and_merge_on_tables_of_other_writers_keep_their_features(project, lake_root, name):
    path = _copy(name, lake_root)
    spec = WRITES[name]
    ident = f"{project.test_schema}.{name.replace('-', '_')}"
    project.run_sql(f"create table {ident} using delta location '{path}'")
    readers, writers, properties = _features(path)
    columns = [f.name for f in DeltaTable(path).schema().fields]
    for kind in ("DELETE", "UPDATE", "MERGE"):
        before = DeltaTable(path).version()
        rows_before = _reference(path)
        expected = _expected(path, before, kind, spec)
        project.run_sql(_statement(kind, ident, spec, columns))
        assert DeltaTable(path).version() == before + 1, kind
        assert _reference(path) == expected, kind  # delta-rs reads what the reference computes
        assert _reference_sql(path, before, "select * from t") == rows_before  # time travel to before
        shown = project.run_sql(f"select {', '.join(f'`{c}`' for c in columns)} from {ident}", fetch="all")
        assert _sorted(shown) == expected, kind  # and so does Spark SQL through the catalog binding
        after = _features(path)
        assert after[0] == readers and after[1] == writers, kind  # the protocol is kept
        assert {k: v for k, v in after[2].items() if k in properties} == properties, kind
        actions = _log(path, before + 1)
        assert next(iter(actions[0])) == "commitInfo" and actions[0]["commitInfo"]["operation"] == kind
        _check_feature_rules(path, before, actions, writers, properties)
    # Our versions keep every feature's rules (cdc_ict_table's own v1 breaks one: delta-rs's test
    # of an in-commit timestamp below its predecessor's).
    assert problems(path) == problems(str(FIXTURES / name))


def _check_feature_rules(
    path: str, before: int, actions: list[dict[str, Any]], writers: set[str], properties: dict[str, str]
) -> None:
    """The protocol's writer requirements each feature of the table asks of the commit."""
    info = actions[0]["commitInfo"]
    live_before = {
        f.path: f
        for f in load_snapshot(TableLocation.of(path), before).files  # type: ignore[union-attr]
    }
    for remove in (a["remove"] for a in actions if "remove" in a):
        # A removed logical file is (path, deletion vector): the remove repeats the add's vector.
        assert remove.get("deletionVector") == live_before[remove["path"]].deletion_vector
    if properties.get("delta.enableInCommitTimestamps") == "true":
        previous = _log(path, before)[0]["commitInfo"]["inCommitTimestamp"]
        assert info["inCommitTimestamp"] > previous
    if "rowTracking" in writers:
        adds = [a["add"] for a in actions if "add" in a]
        removes = [a["remove"] for a in actions if "remove" in a]
        # A file given a deletion vector keeps its row ids and commit version (its rows are the same).
        readded = {r["path"] for r in (a["remove"] for a in actions if "remove" in a)}
        fresh = [a for a in adds if not (a["path"] in readded and a.get("deletionVector"))]
        assert all(a["defaultRowCommitVersion"] == before + 1 for a in fresh)
        for add in (a for a in adds if a not in fresh):
            assert add["defaultRowCommitVersion"] == live_before[add["path"]].default_row_commit_version
            assert add["baseRowId"] == live_before[add["path"]].base_row_id
        for remove in removes:
            assert remove["baseRowId"] == live_before[remove["path"]].base_row_id
        snapshot = load_snapshot(TableLocation.of(path))
        assert snapshot is not None
        mark = int(json.loads(snapshot.domains["delta.rowTracking"]["configuration"])["rowIdHighWaterMark"])
        ranges = sorted((f.base_row_id, f.base_row_id + (f.num_records or 0)) for f in snapshot.files)
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(ranges))  # row ids unique in the version
        assert ranges[-1][1] - 1 <= mark
        assert "delta.liquid" in snapshot.domains  # every other domain kept


@pytest.mark.stores
def test_an_incremental_model_on_a_registered_table_of_another_writer_merges_into_it(project, lake_root):
    """Bringing an existing table into a project (README): register it, then a model of that name
    merges into it; never rebuilt (its id, history and features stay)."""
    path = _copy("cdf-table-with-cdc-and-dvs", lake_root)
    project.run_sql(f"create table {project.test_schema}.lake_events using delta location '{path}'")
    before, table_id = DeltaTable(path).version(), DeltaTable(path).metadata().id
    rows = _reference(path)
    write_file(
        "{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id') }}\n"
        "select id, concat(comment, '?') as comment from {{ this }} where id < 2\n"
        "union all select 99 as id, 'from dbt' as comment\n",
        project.project_root,
        "models",
        "lake_events.sql",
    )
    run_dbt(["run", "--select", "lake_events"])
    table = DeltaTable(path)
    assert table.version() == before + 1 and table.metadata().id == table_id
    assert table.history(1)[0]["operation"] == "MERGE"
    expected = [(i, f"{c}?" if i < 2 else c) for i, c in rows] + [(99, "from dbt")]
    assert _reference(path) == _sorted(expected)
    assert set(table.protocol().writer_features or ()) == {"deletionVectors", "changeDataFeed"}


def test_an_append_only_table_takes_inserts_and_refuses_deletes_with_delta_s_error(project):
    name = f"{project.test_schema}.append_only"
    project.run_sql(f"create table {name} (id int) using delta tblproperties ('delta.appendOnly' = 'true')")
    project.run_sql(f"insert into {name} values (1), (2)")
    assert project.run_sql(f"select count(*) from {name}", fetch="one")[0] == 2
    for statement in (f"delete from {name} where id = 1", f"update {name} set id = 3 where id = 1"):
        with pytest.raises(Exception, match=r"This table is configured to only allow appends"):
            project.run_sql(statement)
    assert sorted(r[0] for r in project.run_sql(f"select id from {name}", fetch="all")) == [1, 2]


def test_a_table_with_an_identity_column_from_databricks_takes_new_ids_above_its_mark(project, tmp_path):
    # checkpoint-v2-table: v2 checkpoints and a GENERATED ALWAYS identity `id` (mark 44).
    path = _copy("checkpoint-v2-table", tmp_path)
    name = f"{project.test_schema}.v2_identity"
    project.run_sql(f"create table {name} using delta location '{path}'")
    before = DeltaTable(path).version()
    with pytest.raises(Exception, match="Providing values for GENERATED ALWAYS AS IDENTITY column id"):
        project.run_sql(f"insert into {name} (id, name) values (1, 'x')")
    assert DeltaTable(path).version() == before
    project.run_sql(f"insert into {name} (name, created_at) values ('Zed', null), ('Yan', null)")
    project.run_sql(
        f"merge into {name} t using (select 'Xi' as name) s on t.name = s.name "
        "when not matched then insert (name) values (s.name)"
    )
    found = {r["name"]: r["id"] for r in live_rows(path)}
    assert sorted(found[n] for n in ("Zed", "Yan")) == [45, 46] and found["Xi"] == 47
    assert sorted(r["id"] for r in live_rows(path)) == list(range(1, 48))
    metadata = json.loads(DeltaTable(path).schema().to_json())["fields"][0]["metadata"]
    assert metadata["delta.identity.highWaterMark"] == 47 and DeltaTable(path).version() == before + 2
    assert problems(path) == []


def _v2_checkpoint_table(root: Path) -> str:
    """A table delta-rs made and gave the v2Checkpoint feature (with a deletion-vector-free log)."""
    from deltalake import write_deltalake
    from deltalake.table import TableFeatures

    path = str(root / "v2_checkpoints")
    write_deltalake(path, pa.table({"value": list(range(10))}))
    DeltaTable(path).alter.add_feature(TableFeatures.V2Checkpoint, allow_protocol_versions_increase=True)
    return path


@pytest.mark.parametrize("name", ["table-with-dv-small", "table_with_liquid_clustering", "v2_checkpoints"])
def test_checkpoints_after_our_writes_keep_vectors_row_ids_and_domains(spark, tmp_path, name):
    from dbt.adapters.deltamerge.delta.log import log_state
    from dbt.adapters.deltamerge.delta.txn import maybe_checkpoint
    from dbt.adapters.deltamerge.statements.run.dml import delete_rows, update_rows

    path = _v2_checkpoint_table(tmp_path) if name == "v2_checkpoints" else _copy(name, tmp_path)
    column = DeltaTable(path).schema().fields[0].name
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    update_rows(spark, snapshot, [(column, f"{column} + 100")], f"{column} = 3")
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    version = delete_rows(spark, snapshot, f"{column} = 4").version
    assert version is not None
    kept = ("deletionVector", "baseRowId", "defaultRowCommitVersion")

    def state() -> tuple[dict[str, tuple], dict[str, str]]:
        replayed = log_state(TableLocation.of(path), version)
        files = {p: tuple(a.get(k) for k in kept) for p, a in replayed.adds.items()}
        return files, {d: a["configuration"] for d, a in replayed.domains.items()}

    from_commits, rows = state(), _reference(path)
    assert maybe_checkpoint(TableLocation.of(path), version, 1)
    assert (Path(path) / "_delta_log" / f"{version:020d}.checkpoint.parquet").exists()
    assert state() == from_commits and _reference(path) == rows  # the checkpoint holds the same state
    checkpoint = pa.parquet.read_table(Path(path) / "_delta_log" / f"{version:020d}.checkpoint.parquet")
    if "v2Checkpoint" in (DeltaTable(path).protocol().writer_features or ()):
        # A classic-named checkpoint of the V2 spec: exactly one checkpointMetadata action.
        assert [r for r in checkpoint.column("checkpointMetadata").to_pylist() if r] == [{"version": version}]


def test_a_model_creates_a_column_mapped_table_and_evolves_it_as_delta_rs_reads_it(project):
    """Names Delta needs column mapping for, fresh physical names and ids for a new column."""
    model = (
        "{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id', "
        "on_schema_change='append_new_columns', partition_by=['Region Code'], "
        "tblproperties={'delta.columnMapping.mode': 'name'}) }}\n"
        "select 1 as id, 'a' as `Region Code`, 'first' as `Full Name`"
        "{% if is_incremental() %} union all select 2, 'b', 'second'{% endif %}\n"
    )
    write_file(model, project.project_root, "models", "mapped.sql")
    run_dbt(["run", "--select", "mapped"])
    evolved = (
        model.replace("'second'{% endif %}", "'second'{% endif %}")
        .replace("'first' as `Full Name`", "'first' as `Full Name`, 10 as `Score (pts)`")
        .replace("'second'", "'second', 20")
    )
    write_file(evolved, project.project_root, "models", "mapped.sql")
    run_dbt(["run", "--select", "mapped"])
    path = table_path(project, "mapped")
    table = DeltaTable(path)
    fields = {f.name: f.metadata for f in table.schema().fields}
    assert list(fields) == ["id", "Region Code", "Full Name", "Score (pts)"]
    ids = [int(m["delta.columnMapping.id"]) for m in fields.values()]
    physical = [str(m["delta.columnMapping.physicalName"]) for m in fields.values()]
    assert sorted(ids) == [1, 2, 3, 4] and len(set(physical)) == 4
    assert all(p.startswith("col-") for p in physical)
    assert table.metadata().configuration["delta.columnMapping.maxColumnId"] == "4"
    assert set(table.protocol().reader_features or ()) >= {"columnMapping"}
    assert _reference(path) == [(1, "a", "first", 10), (2, "b", "second", 20)]
    stats = [json.loads(a["add"]["stats"]) for a in _log(path, table.version()) if "add" in a]
    assert stats and all(set(s["minValues"]) <= set(physical) for s in stats)  # by physical name


def test_renaming_and_dropping_columns_of_a_mapped_table_changes_only_its_schema(project):
    name = f"{project.test_schema}.renamed"
    project.run_sql(
        f"create table {name} (id int, b string, c double) using delta "
        "tblproperties ('delta.columnMapping.mode' = 'name')"
    )
    project.run_sql(f"insert into {name} values (1, 'x', 1.5)")
    path = table_path(project, "renamed")
    files = sorted(f for f in _listing(path) if f.endswith(".parquet") and "_deltamerge_catalog" not in f)
    project.run_sql(f"alter table {name} rename column b to `b renamed`")
    project.run_sql(f"alter table {name} drop column c")
    project.run_sql(f"alter table {name} add columns (c double)")  # a new column: no old data
    project.run_sql(f"insert into {name} values (2, 'y', 2.5)")
    table = DeltaTable(path)
    assert [f.name for f in table.schema().fields] == ["id", "b renamed", "c"]
    assert [h["operation"] for h in table.history()][:4] == [
        "WRITE",
        "ADD COLUMNS",
        "DROP COLUMNS",
        "RENAME COLUMN",
    ]
    assert table.metadata().configuration["delta.columnMapping.maxColumnId"] == "4"
    assert _reference(path) == [(1, "x", None), (2, "y", 2.5)]
    shown = project.run_sql(f"select id, `b renamed`, c from {name}", fetch="all")
    assert _sorted(shown) == [(1, "x", None), (2, "y", 2.5)]
    # Only the schema changed: the first file is still live, under its physical names.
    assert all(f in _listing(path) for f in files)
    plain = f"{project.test_schema}.plain"
    project.run_sql(f"create table {plain} (id int, b string) using delta")
    with pytest.raises(Exception, match="DELTA_UNSUPPORTED_RENAME_COLUMN: Column rename is not supported"):
        project.run_sql(f"alter table {plain} rename column b to c")
    with pytest.raises(Exception, match="DELTA_UNSUPPORTED_DROP_COLUMN: DROP COLUMN is not supported"):
        project.run_sql(f"alter table {plain} drop column b")


def test_convert_to_delta_registers_a_delta_folder_by_relation_name_writing_nothing_into_it(
    project, tmp_path
):
    """The README's other way to bring a table in: a dbt `source` then reads its live rows."""
    path = _copy("table-with-dv-small", tmp_path)
    name = f"{project.test_schema}.lake_source"
    args = json.dumps({"path": path, "relation_name": name})
    _, out = run_dbt_and_capture(["run-operation", "convert_to_delta", "--args", args])
    assert "already a delta table" in out
    assert project.run_sql(f"select count(*) from {name}", fetch="one")[0] == 8  # deleted rows stay out
    assert _listing(path) == _listing(str(FIXTURES / "table-with-dv-small"))


NTZ_MERGE = """
{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id',
          partition_by=['region', 'ts'], tblproperties=var('properties', {})) }}
{% if is_incremental() %}
select 2 as id, 'us' as region, timestamp_ntz'2026-01-02 11:00:00' as ts, 'changed' as v
union all select 4, 'eu', timestamp_ntz'2026-01-03 12:30:00', 'new'
{% else %}
select 1 as id, 'eu' as region, timestamp_ntz'2026-01-01 10:00:00' as ts, 'a' as v
union all select 2, 'us', timestamp_ntz'2026-01-02 11:00:00', 'b'
union all select 3, 'us', cast(null as timestamp_ntz), 'c'
{% endif %}
"""


@pytest.mark.parametrize("made_by", ["delta-rs", "a model with column mapping"])
def test_a_table_partitioned_by_timestamp_ntz_among_other_columns_registers_and_takes_merges(
    project, tmp_path, made_by
):
    """Hive refused the catalog entry ("partition keys can not be changed") of such a table."""
    from deltalake import write_deltalake

    identifier = "events_ntz_rs" if made_by == "delta-rs" else "events_ntz_mapped"
    name = f"{project.test_schema}.{identifier}"
    write_file(NTZ_MERGE, project.project_root, "models", f"{identifier}.sql")
    if made_by == "delta-rs":
        path = str(tmp_path / identifier)
        stamps = [dt.datetime(2026, 1, 1, 10), dt.datetime(2026, 1, 2, 11), None]
        data = pa.table(
            {
                "id": pa.array([1, 2, 3], pa.int32()),
                "region": ["eu", "us", "us"],
                "ts": pa.array(stamps, pa.timestamp("us")),  # no time zone: timestamp_ntz
                "v": ["a", "b", "c"],
            }
        )
        write_deltalake(path, data, partition_by=["region", "ts"])
        args = json.dumps({"path": path, "relation_name": name})
        run_dbt(["run-operation", "convert_to_delta", "--args", args])
    else:
        path = table_path(project, identifier)
        properties = json.dumps({"properties": {"delta.columnMapping.mode": "name"}})
        run_dbt(["run", "--select", identifier, "--vars", properties])
        assert DeltaTable(path).metadata().configuration["delta.columnMapping.mode"] == "name"
    assert project.run_sql(f"select count(*), count(ts) from {name}", fetch="one") == (3, 2)
    run_dbt(["run", "--select", identifier])
    got = sorted((r["id"], r["region"], r["ts"], r["v"]) for r in live_rows(path))
    assert got == [
        (1, "eu", dt.datetime(2026, 1, 1, 10), "a"),
        (2, "us", dt.datetime(2026, 1, 2, 11), "changed"),
        (3, "us", None, "c"),
        (4, "eu", dt.datetime(2026, 1, 3, 12, 30), "new"),
    ]
    assert project.run_sql(f"select id, v from {name} order by id", fetch="all") == [
        (1, "a"),
        (2, "changed"),
        (3, "c"),
        (4, "new"),
    ]


def test_a_mapping_mode_set_without_the_feature_is_refused_and_the_table_stays_readable(project, tmp_path):
    """delta-rs writes `delta.columnMapping.mode` without the protocol's feature when the table needs
    table features for another reason (a timestamp_ntz column); its files are under logical names.
    A merge used to raise the protocol and write physical names beside them: no reader could read
    the table after."""
    from deltalake import write_deltalake

    path = str(tmp_path / "mapped_alone")
    stamp = pa.array([dt.datetime(2026, 1, 1)], pa.timestamp("us"))
    data = pa.table({"id": pa.array([1], pa.int32()), "region": ["eu"], "v": ["a"], "ts": stamp})
    write_deltalake(path, data, partition_by=["region"], configuration={"delta.columnMapping.mode": "name"})
    assert "columnMapping" not in (DeltaTable(path).protocol().writer_features or [])
    name = f"{project.test_schema}.mapped_alone"
    args = json.dumps({"path": path, "relation_name": name})
    run_dbt(["run-operation", "convert_to_delta", "--args", args])
    model = "{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id') }}\n"
    model += "select 2 as id, 'eu' as region, 'b' as v, timestamp_ntz'2026-01-02 00:00:00' as ts"
    write_file(model, project.project_root, "models", "mapped_alone.sql")
    results, _ = run_dbt_and_capture(["run", "--select", "mapped_alone"], expect_pass=False)
    assert "delta.columnMapping.mode=name without the columnMapping feature" in (results[0].message or "")
    assert DeltaTable(path).version() == 0 and len(live_rows(path)) == 1


Z85_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def _inline_padded_past_2_32(data: bytes) -> str:
    """``data`` in Z85, its last block's padding chosen so that the block's value exceeds 2^32 - 1
    (a writer may pad with anything; Delta's decoder keeps the low 32 bits)."""
    padded = data + bytes(-len(data) % 4)
    value = int.from_bytes(padded[-4:], "big") + 2**32
    assert len(data) % 4 and value < 85**5  # padding there, and the block can say it
    block = ""
    for _ in range(5):
        value, digit = divmod(value, 85)
        block = Z85_ALPHABET[digit] + block
    whole = []
    for start in range(0, len(padded) - 4, 4):
        number = int.from_bytes(padded[start : start + 4], "big")
        chunk = ""
        for _ in range(5):
            number, digit = divmod(number, 85)
            chunk = Z85_ALPHABET[digit] + chunk
        whole.append(chunk)
    return "".join(whole) + block


def _with_inline_vector(path: str, vector: dict[str, Any]) -> str:
    """The data file of ``path`` (table-with-dv-small) whose deletion vector becomes ``vector``."""
    log = Path(path) / "_delta_log" / f"{1:020d}.json"
    actions = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    (add,) = [a["add"] for a in actions if "add" in a]
    add["deletionVector"] = vector
    log.write_text("".join(json.dumps(a) + "\n" for a in actions))
    return str(add["path"])


def test_an_inline_vector_whose_padding_exceeds_2_32_reads_as_delta_decodes_it(project, tmp_path):
    """Registration read the block with Python's bytes and failed ``int too big to convert``."""
    from pyroaring import BitMap64

    from dbt.adapters.deltamerge.delta.log import serialize, z85_encode

    data = serialize(BitMap64([0, 1, 2]))
    vector = {"storageType": "i", "sizeInBytes": len(data), "cardinality": 3}
    # The oracle: the same vector with zero padding, read by delta-rs (whose decoder does not wrap).
    canonical = _copy("table-with-dv-small", tmp_path / "canonical")
    _with_inline_vector(canonical, {**vector, "pathOrInlineDv": z85_encode(data + bytes(-len(data) % 4))})
    expected = sorted(r["value"] for r in live_rows(canonical))
    assert expected == list(range(3, 10))
    path = _copy("table-with-dv-small", tmp_path / "padded")
    _with_inline_vector(path, {**vector, "pathOrInlineDv": _inline_padded_past_2_32(data)})
    name = f"{project.test_schema}.inline_padded"
    args = json.dumps({"path": path, "relation_name": name})
    run_dbt(["run-operation", "convert_to_delta", "--args", args])
    got = project.run_sql(f"select value from {name} order by value", fetch="all")
    assert [r[0] for r in got] == expected


def test_an_undecodable_vector_is_refused_naming_the_table_the_file_and_the_vector(project, tmp_path):
    path = _copy("table-with-dv-small", tmp_path)
    vector = {"storageType": "i", "pathOrInlineDv": "~~~~~", "sizeInBytes": 4, "cardinality": 1}
    data_file = _with_inline_vector(path, vector)
    args = json.dumps({"path": path, "relation_name": f"{project.test_schema}.undecodable"})
    _, out = run_dbt_and_capture(["run-operation", "convert_to_delta", "--args", args], expect_pass=False)
    assert f"Delta table at {path}: the deletion vector" in out
    assert "'pathOrInlineDv': '~~~~~'" in out and f"of {data_file} cannot be read" in out


def test_column_mapping_by_id_reads_files_by_field_id_whatever_their_names(spark, tmp_path):
    from deltalake import write_deltalake

    from dbt.adapters.deltamerge.statements.run.dml import delete_rows

    path = str(tmp_path / "by_id")
    data = pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]})
    write_deltalake(path, data, configuration={"delta.columnMapping.mode": "id"})
    # The schema's physical names no longer match the files': only field ids find the columns.
    log = Path(path) / "_delta_log" / f"{0:020d}.json"
    actions = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    for action in actions:
        if "metaData" in action:
            schema = json.loads(action["metaData"]["schemaString"])
            for field in schema["fields"]:
                field["metadata"]["delta.columnMapping.physicalName"] = f"renamed-{field['name']}"
            action["metaData"]["schemaString"] = json.dumps(schema)
    log.write_text("".join(json.dumps(a) + "\n" for a in actions))
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    rows = read_files(spark, snapshot, list(snapshot.files)).collect()
    assert _sorted(rows) == [(1, "a"), (2, "b"), (3, "c")]
    delete_rows(spark, snapshot, "id = 2")
    after = load_snapshot(TableLocation.of(path))
    assert after is not None
    assert _sorted(read_files(spark, after, list(after.files)).collect()) == [(1, "a"), (3, "c")]
    written = [a["add"] for a in _log(path, 1) if "add" in a]
    assert written and all("renamed-" in json.dumps(a["stats"]) for a in written)  # stats by physical name


def _widened(root: Path, change: tuple[str, str] = ("integer", "long")) -> str:
    """A table delta-rs wrote with an int and a float column, then widened (as Delta's ALTER
    COLUMN TYPE commits it: the protocol's feature, the schema's type changes)."""
    from deltalake import write_deltalake

    path = str(root / f"widened_{change[0]}")
    write_deltalake(
        path, pa.table({"id": pa.array([1, 2], pa.int32()), "d": pa.array([1.5, 2.5], pa.float32())})
    )
    changes = {
        "id": [{"fromType": change[0], "toType": change[1]}],
        "d": [{"fromType": "float", "toType": "double"}],
    }
    schema = {
        "type": "struct",
        "fields": [
            {"name": c, "type": t, "nullable": True, "metadata": {"delta.typeChanges": changes[c]}}
            for c, t in (("id", change[1]), ("d", "double"))
        ],
    }
    first = [
        json.loads(line) for line in (Path(path) / "_delta_log" / f"{0:020d}.json").read_text().splitlines()
    ]
    metadata = next(a["metaData"] for a in first if "metaData" in a)
    metadata.update(schemaString=json.dumps(schema), configuration={"delta.enableTypeWidening": "true"})
    features = ["typeWidening"]
    protocol = {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": features,
        "writerFeatures": features,
    }
    actions = [
        {"commitInfo": {"timestamp": 1, "operation": "CHANGE COLUMN"}},
        {"protocol": protocol},
        {"metaData": metadata},
    ]
    (Path(path) / "_delta_log" / f"{1:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))
    return path


def test_type_widening_reads_old_files_as_the_wider_type_and_refuses_what_it_does_not_list(
    project, spark, tmp_path
):
    path = _widened(tmp_path)
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    rows = read_files(spark, snapshot, list(snapshot.files))
    assert [f.dataType.simpleString() for f in rows.schema.fields] == ["bigint", "double"]
    assert _sorted(rows.collect()) == [(1, 1.5), (2, 2.5)]
    name = f"{project.test_schema}.widened"
    project.run_sql(f"create table {name} using delta location '{path}'")
    assert _sorted(project.run_sql(f"select id + 4294967296, d from {name}", fetch="all")) == [
        (4294967297, 1.5),
        (4294967298, 2.5),
    ]
    with pytest.raises(Exception, match=r"cannot write yet: reader feature 'typeWidening'"):
        project.run_sql(f"delete from {name} where id = 1")  # reads only
    unsupported = _widened(tmp_path, ("string", "long"))
    with pytest.raises(UnsupportedTableFeature, match=r"type change of `id` from string to long"):
        read_files(spark, load_snapshot(TableLocation.of(unsupported)), [])  # type: ignore[arg-type]


def _stable_row_ids(path: str) -> dict[int, tuple[int, int]]:
    """Each live row's (stable row id, stable row commit version) by its `id`, read independently:
    the raw log's adds and each file's materialized columns, as PROTOCOL.md reconstructs them."""
    live: dict[str, dict[str, Any]] = {}
    log = sorted((Path(path) / "_delta_log").glob("*.json"))
    for name in log:
        for action in _log(path, int(name.name[:20])):
            if "remove" in action:
                live.pop(action["remove"]["path"], None)
            if "add" in action:
                live[action["add"]["path"]] = action["add"]
    configuration = DeltaTable(path).metadata().configuration
    id_column = configuration["delta.rowTracking.materializedRowIdColumnName"]
    version_column = configuration["delta.rowTracking.materializedRowCommitVersionColumnName"]
    found: dict[int, tuple[int, int]] = {}
    for add in live.values():
        data = pa.parquet.read_table(Path(path) / add["path"]).to_pylist()
        for index, row in enumerate(data):
            row_id = row.get(id_column)
            version = row.get(version_column)
            found[row["id"]] = (
                add["baseRowId"] + index if row_id is None else row_id,
                add["defaultRowCommitVersion"] if version is None else version,
            )
    return found


def test_rows_a_rewrite_copies_or_updates_keep_their_stable_row_ids(project):
    name = f"{project.test_schema}.tracked"
    tracking = "tblproperties ('delta.enableRowTracking' = 'true')"
    project.run_sql(f"create table {name} (id int, v string) using delta {tracking}")
    project.run_sql(f"insert into {name} select cast(id as int), 'a' from range(0, 6)")
    project.run_sql(f"insert into {name} select cast(id as int), 'b' from range(6, 12)")
    path = table_path(project, "tracked")
    before = _stable_row_ids(path)
    assert len({r for r, _ in before.values()}) == 12  # unique
    statements = {
        f"update {name} set v = 'u' where id % 3 = 0": {0, 3, 6, 9},
        f"merge into {name} t using (select 1 as id, 'm' as v union all select 100, 'new') s on t.id = s.id "
        "when matched then update set v = s.v when not matched then insert *": {1},
        f"delete from {name} where id = 4": set(),
    }
    for statement, updated in statements.items():
        version = DeltaTable(path).version() + 1
        project.run_sql(statement)
        after = _stable_row_ids(path)
        for key, (row_id, commit) in before.items():
            if key not in after:
                continue
            assert after[key][0] == row_id, (statement, key)  # every row keeps its id
            assert after[key][1] == (version if key in updated else commit), (statement, key)
        new = set(after) - set(before)
        assert all(after[k][1] == version and after[k][0] not in {r for r, _ in before.values()} for k in new)
        info = _log(path, version)[0]["commitInfo"]
        assert info["tags"]["delta.rowTracking.preserved"] == "true"
        before = after
    assert sorted(before) == [0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 100]
    assert problems(path) == []


def test_the_change_feed_of_a_table_with_deletion_vectors_reads_versions_with_change_files(spark, tmp_path):
    """Databricks's deletes by deletion vector record no change files: those versions are refused,
    naming them; appends and its merges and updates (change files) read as delta-rs reads them."""
    path = _copy("cdf-table-with-cdc-and-dvs", tmp_path)
    with pytest.raises(UnsupportedTableFeature, match=r"version 2 changed rows with deletion vectors"):
        read_changes(spark, TableLocation.of(path), 0).collect()
    for start, end in ((14, 15), (18, 18), (20, 22)):
        ours = read_changes(spark, TableLocation.of(path), start, end).drop("_commit_timestamp").collect()
        reference = pa.table(DeltaTable(path).load_cdf(starting_version=start, ending_version=end).read_all())
        theirs = reference.drop_columns(["_commit_timestamp"]).to_pylist()
        assert _sorted(ours) == _sorted(tuple(r.values()) for r in theirs), (start, end)


def test_a_table_with_variant_columns_takes_delete_update_and_merge_written_unshredded(project, tmp_path):
    path = _copy("spark-variant-checkpoint", tmp_path)
    name = f"{project.test_schema}.variants"
    project.run_sql(f"create table {name} using delta location '{path}'")
    protocol = DeltaTable(path).protocol()

    def rows() -> list[dict[str, Any]]:
        return pa.table(
            QueryBuilder().register("t", DeltaTable(path)).execute("select * from t").read_all()
        ).to_pylist()

    expected = [r for r in rows() if r["id"] >= 10]
    project.run_sql(f"delete from {name} where id < 10")
    assert _reference(path) == _sorted(tuple(r.values()) for r in expected)
    expected = [{**r, "id": r["id"] + 1000} if 20 <= r["id"] <= 30 else r for r in expected]
    project.run_sql(f"update {name} set id = id + 1000 where id between 20 and 30")
    assert _reference(path) == _sorted(tuple(r.values()) for r in expected)
    source = "select 99999 as id, parse_json('{{\"k\": 1}}') as v"  # run_sql formats {{ }}
    project.run_sql(
        f"merge into {name} t using ({source}) s on t.id = s.id "
        "when not matched then insert (id, v) values (s.id, s.v)"
    )
    assert len(rows()) == len(expected) + 1
    shown = project.run_sql(f"select to_json(v) from {name} where id = 99999", fetch="all")
    assert [tuple(r) for r in shown] == [('{"k":1}',)]
    assert DeltaTable(path).protocol() == protocol
    # Without variantShredding, variants are written as the struct of `metadata` and `value`.
    ours = [
        a["add"]["path"]
        for v in range(3, DeltaTable(path).version() + 1)
        for a in _log(path, v)
        if "add" in a
    ]
    assert ours
    for file in ours:
        variant = pa.parquet.read_schema(Path(path) / file).field("v").type
        assert sorted(variant.field(i).name for i in range(variant.num_fields)) == ["metadata", "value"]
