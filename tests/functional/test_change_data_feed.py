"""The change data feed through real dbt runs: change rows read back by deltalake and in Spark."""

from __future__ import annotations

import pyarrow as pa
import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file
from deltalake import DeltaTable

from tests.backend import ON_S3
from tests.functional.helpers import log_actions, rows, table_path

START = (
    "select 1 as id, 'a' as v union all select 2 as id, 'b' as v union all "
    "select 3 as id, 'c' as v union all select 4 as id, 'd' as v"
)


def model(sql: str, **config: object) -> str:
    base = {"materialized": "incremental", "incremental_strategy": "delta_merge", **config}
    return "{{ config(" + ", ".join(f"{k}={v!r}" for k, v in base.items()) + ") }}\n" + sql


def values(*pairs: tuple[int, str]) -> str:
    return " union all ".join(f"select {k} as id, '{v}' as v" for k, v in pairs)


def feed(path: str, start: int) -> list[tuple]:
    """delta-rs's change feed from ``start``: (id, v, change type, version), sorted."""
    table = pa.table(DeltaTable(path).load_cdf(starting_version=start).read_all())
    return sorted((r["id"], r["v"], r["_change_type"], r["_commit_version"]) for r in table.to_pylist())


def metrics(path: str) -> dict[str, int]:
    return {k: int(v) for k, v in DeltaTable(path).history()[0]["operationMetrics"].items()}


def change_files(path: str, version: int) -> list[dict]:
    return [a["cdc"] for a in log_actions(path, version) if "cdc" in a]


@pytest.mark.stores
@pytest.mark.connect
class TestMergeChangeFeed:
    @pytest.fixture(scope="class")
    def models(self):
        return {"cdf.sql": model(START, unique_key="id", change_data_feed=True)}

    def _fresh(self, project, source: str, **config) -> str:
        write_file(
            model(START, unique_key="id", change_data_feed=True), project.project_root, "models", "cdf.sql"
        )
        run_dbt(["run", "--select", "cdf", "--full-refresh"])
        write_file(model(source, change_data_feed=True, **config), project.project_root, "models", "cdf.sql")
        run_dbt(["run", "--select", "cdf"])
        return table_path(project, "cdf")

    def test_every_clause_kind_writes_its_change_rows(self, project, spark):
        path = self._fresh(
            project,
            values((1, "x"), (2, "D"), (5, "e")),
            unique_key="id",
            when_matched=[
                {"condition": "DBT_INTERNAL_SOURCE.v = 'D'", "action": "delete"},
                {"action": "update", "set": "*"},
            ],
            when_not_matched_by_source=[
                {"condition": "DBT_INTERNAL_DEST.id = 3", "action": "update", "set": {"v": "'orphan'"}},
                {"condition": "DBT_INTERNAL_DEST.id = 4", "action": "delete"},
            ],
        )
        version = DeltaTable(path).version()
        assert feed(path, version) == [
            (1, "a", "update_preimage", version),
            (1, "x", "update_postimage", version),
            (2, "b", "delete", version),
            (3, "c", "update_preimage", version),
            (3, "orphan", "update_postimage", version),
            (4, "d", "delete", version),
            (5, "e", "insert", version),
        ]
        assert [(r["id"], r["v"]) for r in rows(path)] == [(1, "x"), (3, "orphan"), (5, "e")]
        cdc = change_files(path, version)
        m = metrics(path)
        assert m["numTargetChangeFilesAdded"] == len(cdc) > 0
        assert m["numTargetChangeFileBytes"] == sum(c["size"] for c in cdc)
        # Delta's folder for change files; on an object store a write's files stay where Spark wrote
        # them (no renames there): its own folder, the change rows' partition of it.
        place = "/__is_cdc=true/" if ON_S3 else "_change_data/"
        assert all(place in c["path"] and c["dataChange"] is False for c in cdc)
        protocol = next(a["protocol"] for a in log_actions(path, version - 1) if "protocol" in a)
        assert protocol["minWriterVersion"] >= 4
        in_spark = spark.sql(
            f"select id, v, _change_type, _commit_version from {_changes(spark, path, version)}"
        ).collect()
        assert sorted(tuple(r) for r in in_spark) == feed(path, version)

    def test_insert_only_writes_no_change_files(self, project):
        path = self._fresh(project, values((1, "x"), (6, "f")), unique_key="id", when_matched=[])
        version = DeltaTable(path).version()
        assert change_files(path, version) == [] and metrics(path)["numTargetChangeFilesAdded"] == 0
        assert feed(path, version) == [(6, "f", "insert", version)]

    def test_unconditional_delete_with_three_source_rows_per_key(self, project):
        triple = values(*[(k, "z") for k in (2, 2, 2, 3, 3, 3)])
        path = self._fresh(
            project, triple, unique_key="id", when_matched=[{"action": "delete"}], when_not_matched=[]
        )
        version = DeltaTable(path).version()
        assert feed(path, version) == [(2, "b", "delete", version), (3, "c", "delete", version)]
        assert metrics(path)["numTargetRowsDeleted"] == 2


def _changes(spark, path: str, version: int) -> str:
    from dbt.adapters.deltamerge.delta import TableLocation
    from dbt.adapters.deltamerge.delta.commands import read_changes

    view = f"changes_{version}"
    read_changes(spark, TableLocation.of(path), version).createOrReplaceTempView(view)
    return view


DOWNSTREAM = """
{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id',
          when_matched=[{'condition': "DBT_INTERNAL_SOURCE._change_type = 'delete'", 'action': 'delete'},
                        {'action': 'update', 'set': '*'}],
          when_not_matched=[{'condition': "DBT_INTERNAL_SOURCE._change_type != 'delete'",
                             'action': 'insert', 'values': '*'}]) }}
{% set start = 0 %}
{% if execute and is_incremental() %}
  {% set query = "select coalesce(max(_source_version), -1) + 1 from " ~ this %}
  {% set start = run_query(query).columns[0].values()[0] %}
{% endif %}
select id, v, _change_type, _source_version from (
  select id, v, _change_type, _commit_version as _source_version,
         row_number() over (partition by id order by _commit_version desc,
                            case _change_type when 'update_preimage' then 1 else 0 end) as latest
  from {{ deltamerge.table_changes(ref('upstream'), start) }}
  where _change_type != 'update_preimage'
) where latest = 1
"""


@pytest.mark.connect
class TestFeedOnLaterAndDownstream:
    @pytest.fixture(scope="class")
    def models(self):
        return {"upstream.sql": model(START, unique_key="id")}

    def test_turning_the_feed_on_later_and_reading_it_downstream(self, project):
        run_dbt(["run", "--select", "upstream"])
        write_file(model(values((1, "a1")), unique_key="id"), project.project_root, "models", "upstream.sql")
        run_dbt(["run", "--select", "upstream"])  # v1: feed still off
        path = table_path(project, "upstream")
        on = model(values((2, "b2"), (9, "i")), unique_key="id", change_data_feed=True)
        write_file(on, project.project_root, "models", "upstream.sql")
        run_dbt(["run", "--select", "upstream"])  # v2 switches the feed on, in the same commit
        head = log_actions(path, 2)
        assert any("protocol" in a for a in head) and any("metaData" in a for a in head)
        assert any("cdc" in a for a in head)
        assert feed(path, 2) == [
            (2, "b", "update_preimage", 2),
            (2, "b2", "update_postimage", 2),
            (9, "i", "insert", 2),
        ]
        assert [r["v"] for r in rows(path, version=0)] == ["a", "b", "c", "d"]  # time travel still works
        with pytest.raises(Exception, match=r"(?i)change data"):
            DeltaTable(path).load_cdf(starting_version=0).read_all()

        write_file(
            DOWNSTREAM.replace("table_changes(ref('upstream'), start)", "table_changes(ref('upstream'), 0)"),
            project.project_root,
            "models",
            "downstream.sql",
        )
        _, out = run_dbt_and_capture(["run", "--select", "downstream"], expect_pass=False)
        assert "change data was not recorded for version [0]" in out

        write_file(
            DOWNSTREAM.replace("{% set start = 0 %}", "{% set start = 2 %}"),
            project.project_root,
            "models",
            "downstream.sql",
        )
        run_dbt(["run", "--select", "downstream"])
        down = table_path(project, "downstream")
        assert [(r["id"], r["v"]) for r in rows(down)] == [(2, "b2"), (9, "i")]

        later = model(
            values((9, "i2"), (3, "D")),
            unique_key="id",
            change_data_feed=True,
            when_matched=[
                {"condition": "DBT_INTERNAL_SOURCE.v = 'D'", "action": "delete"},
                {"action": "update", "set": "*"},
            ],
        )
        write_file(later, project.project_root, "models", "upstream.sql")
        run_dbt(["run", "--select", "upstream"])  # v3: update 9, delete 3
        run_dbt(["run", "--select", "downstream"])  # consumes only v3
        assert [(r["id"], r["v"]) for r in rows(down)] == [(2, "b2"), (9, "i2")]
        run_dbt(["run", "--select", "downstream"])  # nothing new upstream: no change
        assert [(r["id"], r["v"]) for r in rows(down)] == [(2, "b2"), (9, "i2")]


def test_appends_and_replace_where_on_a_feed_table(spark, tmp_path):
    from dbt.adapters.deltamerge.delta import TableLocation
    from dbt.adapters.deltamerge.delta.commands import read_changes
    from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe

    path = str(tmp_path / "t")
    feed_on = {"delta.enableChangeDataFeed": "true"}
    first = spark.createDataFrame([(1, "x"), (2, "y"), (3, "x")], "id int, v string").coalesce(1)
    write_dataframe(
        spark, first, WriteRequest(TableLocation.of(path), "create_or_replace", properties=feed_on)
    )
    more = spark.createDataFrame([(4, "y")], "id int, v string")
    write_dataframe(spark, more, WriteRequest(TableLocation.of(path), "append", properties=feed_on))
    assert change_files(path, 1) == []  # an append's changes are its adds
    fresh = spark.createDataFrame([(5, "x")], "id int, v string")
    write_dataframe(
        spark,
        fresh,
        WriteRequest(TableLocation.of(path), "replace_where", properties=feed_on, replace_where="v = 'x'"),
    )
    assert change_files(path, 2)  # rows kept from the rewritten file are not changes: explicit feed
    expected = [(1, "x", "delete", 2), (3, "x", "delete", 2), (4, "y", "insert", 1), (5, "x", "insert", 2)]
    got = pa.table(DeltaTable(path).load_cdf(starting_version=1).read_all()).to_pylist()
    assert sorted((r["id"], r["v"], r["_change_type"], r["_commit_version"]) for r in got) == expected
    in_spark = read_changes(spark, TableLocation.of(path), 1).collect()
    assert sorted((r.id, r.v, r._change_type, r._commit_version) for r in in_spark) == expected
    assert sorted(r["id"] for r in rows(path)) == [2, 4, 5]


def test_partitioned_merge_change_files_follow_the_partition_layout(spark, tmp_path):
    from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
    from dbt.adapters.deltamerge.delta.commands import read_changes
    from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
    from dbt.adapters.deltamerge.merge import MergeSpec, merge_into

    path = str(tmp_path / "p")
    target = spark.createDataFrame(
        [(1, "a", "x"), (2, "b", "x"), (3, "c", "y")], "id int, v string, p string"
    )
    request = WriteRequest(
        TableLocation.of(path),
        "create_or_replace",
        partition_by=("p",),
        properties={"delta.enableChangeDataFeed": "true"},
    )
    write_dataframe(spark, target, request)
    source = spark.createDataFrame(
        [(1, "A", "x"), (3, "C", "y"), (4, "d", "y")], "id int, v string, p string"
    )
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    merge_into(spark, source, snapshot, MergeSpec.from_config("p", {"unique_key": "id"}))
    cdc = change_files(path, 1)
    assert sorted({c["partitionValues"]["p"] for c in cdc}) == ["x", "y"]
    assert all(c["path"].startswith(f"_change_data/p={c['partitionValues']['p']}/") for c in cdc)
    expected = [
        (1, "A", "x", "update_postimage"),
        (1, "a", "x", "update_preimage"),
        (3, "C", "y", "update_postimage"),
        (3, "c", "y", "update_preimage"),
        (4, "d", "y", "insert"),
    ]
    got = pa.table(DeltaTable(path).load_cdf(starting_version=1).read_all()).to_pylist()
    assert sorted((r["id"], r["v"], r["p"], r["_change_type"]) for r in got) == expected
    in_spark = read_changes(spark, TableLocation.of(path), 1).collect()
    assert sorted((r.id, r.v, r.p, r._change_type) for r in in_spark) == expected


def test_a_full_overwrite_on_a_feed_table_reads_as_deletes_and_inserts(spark, tmp_path):
    from dbt.adapters.deltamerge.delta import TableLocation
    from dbt.adapters.deltamerge.delta.commands import read_changes
    from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe

    path = str(tmp_path / "o")
    feed_on = {"delta.enableChangeDataFeed": "true"}
    first = spark.createDataFrame([(1, "a"), (2, "b")], "id int, v string")
    write_dataframe(
        spark, first, WriteRequest(TableLocation.of(path), "create_or_replace", properties=feed_on)
    )
    second = spark.createDataFrame([(2, "b"), (3, "c")], "id int, v string")
    write_dataframe(
        spark, second, WriteRequest(TableLocation.of(path), "create_or_replace", properties=feed_on)
    )
    assert change_files(path, 1) == []  # readers infer a rewrite's changes from its removes and adds
    expected = [(1, "a", "delete"), (2, "b", "delete"), (2, "b", "insert"), (3, "c", "insert")]
    got = pa.table(DeltaTable(path).load_cdf(starting_version=1).read_all()).to_pylist()
    assert sorted((r["id"], r["v"], r["_change_type"]) for r in got) == expected
    assert (
        sorted((r.id, r.v, r._change_type) for r in read_changes(spark, TableLocation.of(path), 1).collect())
        == expected
    )
