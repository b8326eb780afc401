"""The merge planner and its data skipping decisions: pure, no Spark session."""

from __future__ import annotations

import pytest
from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.log.protocol import Protocol, TableMetadata
from dbt.adapters.deltamerge.delta.log.schema import schema_to_json
from dbt.adapters.deltamerge.delta.log.snapshot import AddFile, Snapshot
from dbt.adapters.deltamerge.merge import pruning
from dbt.adapters.deltamerge.merge.plan import plan_merge
from dbt.adapters.deltamerge.merge.resolve import resolve
from dbt.adapters.deltamerge.merge.spec import MergeSpec
from dbt.adapters.deltamerge.skipping import files as skipping
from dbt.adapters.deltamerge.skipping.predicates import parse_target_predicate
from dbt.adapters.deltamerge.skipping.stats import KeyRange

SCHEMA = T.StructType(
    [T.StructField("id", T.LongType()), T.StructField("v", T.LongType()), T.StructField("p", T.StringType())]
)
FILES = (
    AddFile("a.parquet", 100, {"p": "x"}, 10, {"id": 1, "v": 0}, {"id": 10, "v": 5}, {"id": 0, "v": 0}),
    AddFile("b.parquet", 200, {"p": "y"}, 10, {"id": 11, "v": 50}, {"id": 20, "v": 90}, {"id": 0, "v": 0}),
    AddFile("c.parquet", 300, {"p": "y"}, 10, {"id": 21, "v": 0}, {"id": 30, "v": 9}, {"id": 0, "v": 0}),
)


def _snapshot(files: tuple[AddFile, ...] = FILES, configuration: dict[str, str] | None = None) -> Snapshot:
    metadata = TableMetadata("t", schema_to_json(SCHEMA), ("p",), configuration or {})
    return Snapshot(TableLocation("/tmp/t"), 3, Protocol(), metadata, files)


def _predicate(condition: str | None) -> skipping.TargetPredicate | None:
    """A condition with its constants as Spark would evaluate them (plain integer literals here)."""
    if condition is None:
        return None
    columns = ["id", "v", "p"]
    node, sqls = parse_target_predicate([condition], target_alias="DBT_INTERNAL_DEST", columns=columns)
    return skipping.TargetPredicate(node, tuple(int(s) for s in sqls))


def _pruning(
    spec: MergeSpec, low: int, high: int, *, nulls: bool = False, **predicates
) -> pruning.FilePruning:
    return pruning.FilePruning(
        spec=spec,
        partition_types={"p": str},
        ranges=(KeyRange("id", low, high, nulls),),
        changes=_predicate(predicates.get("changes", spec.on_condition)),
        by_source=_predicate(predicates.get("by_source")),
        matchable=_predicate(predicates.get("matchable")),
        partition_skipped=frozenset(predicates.get("partition_skipped", ())),
    )


def _plan(
    config: dict, low: int = 12, high: int = 15, *, rows: int = 4, snapshot: Snapshot | None = None, **kw
):
    spec = MergeSpec.from_config("m", config)
    snapshot = snapshot or _snapshot()
    merge = resolve(spec, target=snapshot.schema, source=SCHEMA)
    pruning = _pruning(spec, low, high, **kw) if snapshot.files else None
    return plan_merge(spec, merge, snapshot, source_schema=SCHEMA, source_rows=rows, pruning=pruning)


def test_an_upsert_reads_only_files_whose_key_range_meets_the_source_and_says_why():
    plan = _plan({"unique_key": "id"}, 12, 15)
    assert plan.executor == "classic_rewrite" and not plan.marks_deleted
    assert [f.path for f in plan.candidates] == ["b.parquet"]
    assert plan.skipped_by() == {skipping.SKIPPED_KEY_RANGE: 2}
    assert [d.reason for d in plan.decisions if d.kept] == [skipping.KEPT_MAY_MATCH]
    assert plan.multiple_match_check == "per_target_row"
    assert plan.output_columns == ("id", "v", "p")


def test_a_source_without_null_keys_joins_on_plain_equality():
    plan = _plan({"unique_key": "id"}, 12, 15)
    assert "<=>" in MergeSpec.from_config("m", {"unique_key": "id"}).on_condition
    assert "<=>" not in plan.join_condition and "=" in plan.join_condition
    with_nulls = _plan({"unique_key": "id"}, 12, 15, nulls=True)
    assert "<=>" in with_nulls.join_condition


def test_insert_only_merges_pick_delta_s_insert_only_executors_and_no_multiple_match_check():
    config = {"unique_key": "id", "when_matched": []}
    assert _plan(config).executor == "insert_only"
    assert _plan(config).multiple_match_check == "none"
    empty = _plan(config, snapshot=_snapshot(files=()))
    assert empty.executor == "insert_into_empty" and empty.decisions == () and empty.pruning is None
    assert empty.reads([FILES[0]])  # without data skipping every added file is read


def test_a_by_source_only_merge_counts_repeated_source_keys_instead_of_grouping_every_row():
    by_source = [{"action": "delete"}]
    plan = _plan({"unique_key": "id", "when_matched": [], "when_not_matched_by_source": by_source})
    assert plan.multiple_match_check == "repeated_source_keys"
    # An unconditional BY SOURCE clause may change any row of any file.
    assert len(plan.candidates) == 3 and {d.reason for d in plan.decisions} == {skipping.KEPT_BY_SOURCE}


def test_a_conditional_by_source_clause_skips_files_its_condition_and_the_key_range_rule_out():
    config = {
        "unique_key": "id",
        "when_not_matched_by_source": [{"action": "delete", "condition": "DBT_INTERNAL_DEST.v > 40"}],
    }
    plan = _plan(config, 1, 5, changes=None, by_source="DBT_INTERNAL_DEST.v > 40", matchable="true")
    kept = {d.file.path: d.reason for d in plan.decisions if d.kept}
    assert kept == {"a.parquet": skipping.KEPT_MAY_MATCH, "b.parquet": skipping.KEPT_BY_SOURCE}
    assert plan.skipped_by() == {skipping.SKIPPED_KEY_RANGE: 1}


def test_statistics_and_partition_predicates_skip_files_and_name_their_rule():
    matched = [{"action": "delete", "condition": "DBT_INTERNAL_DEST.v > 60"}]
    config = {"unique_key": "id", "when_matched": matched}
    spec = MergeSpec.from_config("m", config)
    changes = f"({spec.on_condition}) AND (DBT_INTERNAL_DEST.v > 60)"
    plan = _plan(config, 1, 30, changes=changes, partition_skipped={"c.parquet"})
    assert [f.path for f in plan.candidates] == ["b.parquet"]
    assert plan.skipped_by() == {skipping.SKIPPED_STATISTICS: 1, skipping.SKIPPED_PARTITION: 1}


def test_the_conflict_check_asks_the_same_skipping_about_files_added_later():
    plan = _plan({"unique_key": "id"}, 12, 15)
    outside = AddFile("new1.parquet", 1, {"p": "z"}, 1, {"id": 100}, {"id": 200}, {"id": 0})
    inside = AddFile("new2.parquet", 1, {"p": "z"}, 1, {"id": 14}, {"id": 14}, {"id": 0})
    no_stats = AddFile("new3.parquet", 1, {"p": "z"})
    assert not plan.reads([outside])
    assert plan.reads([outside, inside]) and plan.reads([no_stats])


@pytest.mark.parametrize(
    ("configuration", "config", "expected"),
    [
        ({"delta.enableChangeDataFeed": "true"}, {"unique_key": "id"}, True),
        ({}, {"unique_key": "id"}, False),
        # Readers infer an insert-only commit's changes from its adds.
        ({"delta.enableChangeDataFeed": "true"}, {"unique_key": "id", "when_matched": []}, False),
    ],
)
def test_change_data_is_planned_for_classic_merges_on_tables_with_the_feed(configuration, config, expected):
    assert _plan(config, snapshot=_snapshot(configuration=configuration)).change_data is expected


def test_a_big_source_is_not_broadcast():
    assert _plan({"unique_key": "id"}, rows=4).broadcast_source
    assert not _plan({"unique_key": "id"}, rows=50_000_000).broadcast_source


def test_only_a_small_insert_only_merge_counts_its_rows_before_writing():
    insert_only = {"unique_key": "id", "when_matched": []}
    assert _plan(insert_only, rows=4).counts_before_writing
    assert not _plan(insert_only, rows=100_000).counts_before_writing
    assert not _plan(insert_only, 40, 50, rows=4).counts_before_writing  # no file may match: all new
    assert not _plan({"unique_key": "id"}, rows=4).counts_before_writing
    empty = _plan(insert_only, rows=4, snapshot=_snapshot(files=()))
    assert empty.executor == "insert_into_empty" and not empty.counts_before_writing


def test_the_plan_names_every_route_a_merge_runs_by():
    # Merge-on-read (deletion vectors on): one join of a broadcast source, unless a NOT MATCHED BY
    # SOURCE clause needs the target rows no source row matches; `deletion_vectors: false` rewrites.
    vectors = {"delta.enableDeletionVectors": "true"}
    dv_table = _snapshot(configuration=vectors)
    dv_table = Snapshot(
        dv_table.location,
        3,
        Protocol(3, 7, ("deletionVectors",), ("deletionVectors",)),
        dv_table.metadata,
        FILES,
    )
    upsert = {"unique_key": "id"}
    assert _plan(upsert, snapshot=dv_table).executor == "one_join"
    assert _plan(upsert, rows=50_000_000, snapshot=dv_table).executor == "classic_mark_deleted"
    by_source = {"unique_key": "id", "when_not_matched_by_source": [{"action": "delete"}]}
    assert _plan(by_source, snapshot=dv_table).executor == "classic_mark_deleted"
    copy_on_write = _plan({**upsert, "deletion_vectors": False}, snapshot=dv_table)
    assert copy_on_write.executor == "classic_rewrite" and not copy_on_write.marks_deleted
    assert _plan(upsert, snapshot=dv_table).marks_deleted
    assert _plan(upsert).executor == "classic_rewrite"


def test_a_source_without_rows_reads_no_target_unless_a_by_source_clause_may_change_rows():
    # A no-op incremental run: nothing can match, insert or update, so no executor reads the
    # target; the data skipping is still the plan's (Delta's metrics report it).
    for config in ({"unique_key": "id"}, {"unique_key": "id", "when_matched": []}):
        plan = _plan(config, rows=0)
        assert plan.executor == "empty_source" and not plan.marks_deleted
        assert plan.pruning is not None and len(plan.decisions) == 3
    by_source = {"unique_key": "id", "when_not_matched_by_source": [{"action": "delete"}]}
    assert _plan(by_source, rows=0).executor == "classic_rewrite"  # it deletes every target row
    into_empty = _plan({"unique_key": "id", "when_matched": []}, rows=0, snapshot=_snapshot(files=()))
    assert into_empty.executor == "insert_into_empty"  # the source is profiled while written
