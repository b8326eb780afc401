"""Differential test: our merge engine vs delta-rs's ``DeltaTable.merge``, seeded cases.

Each case builds one random target (written once by each engine), one random source
with unique keys, and a random clause set drawn from every clause kind; both results
must have the same rows and the same inserted / updated / deleted counts. Half the cases
run with broadcasting turned off, so the shuffle joins are compared too. The weighted
cases favour the executor's shortcuts: no WHEN MATCHED clause, NOT MATCHED BY SOURCE
clauses, ``incremental_predicates`` and target rows sharing a key.
A quarter of the cases (and half of the change feed's) merge into a table of ours with deletion
vectors on (merge-on-read: target rows marked deleted, only changed rows written) while
delta-rs's table rewrites files: rows, counts and change rows must still agree.
``DELTAMERGE_DIFF_CASES`` sets the number of cases (default 8; thousands for a long
run, e.g. ``DELTAMERGE_DIFF_CASES=4000 pytest -k weighted tests/functional/test_merge_differential.py``);
``DELTAMERGE_DIFF_FIRST_SEED`` the first seed (default 0), so a long run split over sessions
draws new cases.
"""

from __future__ import annotations

import os
import random

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
from dbt.adapters.deltamerge.delta.commands import read_changes
from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
from dbt.adapters.deltamerge.delta.log import TableChange
from dbt.adapters.deltamerge.merge import MergeSpec, dry_run_merge, merge_into
from tests.functional.helpers import live_rows, log_actions

CASES = int(os.environ.get("DELTAMERGE_DIFF_CASES", "8"))
FIRST_SEED = int(os.environ.get("DELTAMERGE_DIFF_FIRST_SEED", "0"))
SEEDS = range(FIRST_SEED, FIRST_SEED + CASES)

# (our clause, the same clause in delta-rs's builder)
MATCHED = [
    [],
    [({"action": "update", "set": "*"}, ("update_all", None, None))],
    [({"action": "delete"}, ("delete", None, None))],
    [
        ({"action": "delete", "condition": "s.op = 'D'"}, ("delete", "s.op = 'D'", None)),
        ({"action": "update", "set": "*"}, ("update_all", None, None)),
    ],
    [
        (
            {"action": "update", "condition": "s.v > t.v", "set": {"v": "s.v + t.v"}},
            ("update", "s.v > t.v", {"v": "s.v + t.v"}),
        )
    ],
    [({"action": "delete", "condition": "t.v < 40"}, ("delete", "t.v < 40", None))],
]
# Extra target-only ON conjuncts (data skipping by statistics).
ON = ["t.k = s.k", "t.k = s.k AND t.v >= 30", "t.k = s.k AND (t.v BETWEEN 10 AND 50 OR t.k IN (1, 2, 3))"]
NOT_MATCHED = [
    [],
    [({"action": "insert", "values": "*"}, ("insert_all", None, None))],
    [
        (
            {"action": "insert", "condition": "s.v % 2 = 0", "values": {"k": "s.k", "v": "s.v * 10"}},
            ("insert", "s.v % 2 = 0", {"k": "s.k", "v": "s.v * 10"}),
        )
    ],
]
NOT_MATCHED_BY_SOURCE = [
    [],
    [({"action": "delete", "condition": "t.v > 60"}, ("delete", "t.v > 60", None))],
    [({"action": "update", "set": {"v": "-1"}}, ("update", None, {"v": "-1"}))],
    [
        (
            {"action": "update", "condition": "t.v <= 20", "set": {"op": "'X'"}},
            ("update", "t.v <= 20", {"op": "'X'"}),
        ),
        ({"action": "delete", "condition": "t.op = 'D'"}, ("delete", "t.op = 'D'", None)),
    ],
]


def random_case(
    rng: random.Random, *, by_source_only: bool = False, weighted: bool = False, one_join: bool = False
) -> tuple[pa.Table, pa.Table, dict, list]:
    target_keys = rng.sample(range(200), rng.randint(0, 60))
    if weighted and target_keys and rng.random() < 0.3:
        # Target rows sharing a key: only the whole ON condition tells them apart.
        target_keys += rng.choices(target_keys, k=rng.randint(1, 8))
    source_keys = rng.sample(range(200), rng.randint(0, 40))
    target = pa.table(
        {
            "k": pa.array(target_keys, pa.int64()),
            "v": pa.array([rng.randint(0, 100) for _ in target_keys], pa.int64()),
            "op": pa.array([rng.choice("UD") for _ in target_keys], pa.string()),
        }
    )
    source = pa.table(
        {
            "k": pa.array(source_keys, pa.int64()),
            "v": pa.array([rng.randint(0, 100) for _ in source_keys], pa.int64()),
            "op": pa.array([rng.choice("UD") for _ in source_keys], pa.string()),
        }
    )
    matched, not_matched, by_source = (
        rng.choice(MATCHED),
        rng.choice(NOT_MATCHED),
        rng.choice(NOT_MATCHED_BY_SOURCE),
    )
    if by_source_only:
        matched, not_matched, by_source = [], [], rng.choice(NOT_MATCHED_BY_SOURCE[1:])
    if one_join:
        matched, by_source = rng.choice(MATCHED[1:]), []
    if weighted:
        if rng.random() < 0.6:
            matched = []
        if not by_source and rng.random() < 0.85:
            by_source = rng.choice(NOT_MATCHED_BY_SOURCE[1:])
    if not (matched or not_matched or by_source):
        not_matched = NOT_MATCHED[1]
    if matched == MATCHED[2] and source_keys and rng.random() < 0.5:
        # An unconditional delete is the one clause set that allows duplicate matches.
        extra = rng.choices(source.to_pylist(), k=rng.randint(1, 10))
        source = pa.Table.from_pylist(source.to_pylist() + extra, schema=source.schema)
    on = ON[0] if by_source_only else rng.choice(ON)
    # The unique key's ON condition takes the key-range paths (skipping, key-only joins);
    # the other conjuncts then come as incremental_predicates.
    condition: dict = {"merge_condition": on}
    if rng.random() < 0.5:
        _, *predicates = on.split(" AND ", 1)
        condition = {"unique_key": "k", **({"incremental_predicates": predicates} if predicates else {})}
    config = {
        **condition,
        "source_alias": "s",
        "target_alias": "t",
        "when_matched": [c for c, _ in matched],
        "when_not_matched": [c for c, _ in not_matched],
        "when_not_matched_by_source": [c for c, _ in by_source],
    }
    builder = (
        [("matched", d) for _, d in matched]
        + [("not_matched", d) for _, d in not_matched]
        + [("by_source", d) for _, d in by_source]
    )
    return target, source, config, builder


BUILDER_METHODS = {
    ("matched", "update_all"): "when_matched_update_all",
    ("matched", "delete"): "when_matched_delete",
    ("matched", "update"): "when_matched_update",
    ("not_matched", "insert_all"): "when_not_matched_insert_all",
    ("not_matched", "insert"): "when_not_matched_insert",
    ("by_source", "delete"): "when_not_matched_by_source_delete",
    ("by_source", "update"): "when_not_matched_by_source_update",
}


def delta_rs_merge(path: str, source: pa.Table, on: str, builder: list) -> dict:
    merger = DeltaTable(path).merge(source=source, predicate=on, source_alias="s", target_alias="t")
    for kind, (action, predicate, updates) in builder:
        kwargs = {"predicate": predicate} if updates is None else {"predicate": predicate, "updates": updates}
        merger = getattr(merger, BUILDER_METHODS[(kind, action)])(**kwargs)
    return merger.execute()


def sorted_rows(path: str) -> list[tuple]:
    """The live rows in one order, NULLs first (a key may repeat with a NULL ``op``)."""
    return sorted(((r["k"], r["v"], r["op"]) for r in live_rows(path)), key=_nulls_first)


def _nulls_first(row: tuple) -> tuple:
    return tuple((value is not None, value) for value in row)


def _vectors_on(seed: int) -> bool:
    """Seeds 2 and 3 of every 4 merge into a table with deletion vectors (merge-on-read)."""
    return seed % 4 >= 2


def _merge_both(
    spark,
    root: str,
    seed: int,
    *,
    feed: bool,
    by_source_only: bool = False,
    weighted: bool = False,
    vectors: bool = False,
    one_join: bool = False,
) -> tuple[str, str, dict, dict, dict]:
    rng = random.Random(seed)
    target, source, config, builder = random_case(
        rng, by_source_only=by_source_only, weighted=weighted, one_join=one_join
    )
    ours, theirs = f"{root}/ours", f"{root}/theirs"
    schema = "k bigint, v bigint, op string"
    properties = {"delta.enableChangeDataFeed": "true"} if feed else {}
    ours_properties = {**properties, "delta.enableDeletionVectors": "true"} if vectors else properties
    # Several files with distinct value ranges, so statistics can skip some of them.
    frame = spark.createDataFrame(target.to_pylist(), schema).repartitionByRange(4, "v")
    write_dataframe(
        spark, frame, WriteRequest(TableLocation.of(ours), "create_or_replace", properties=ours_properties)
    )
    write_deltalake(theirs, target, configuration=properties or None)

    spec = MergeSpec.from_config(f"case{seed}", config)
    snapshot = load_snapshot(TableLocation.of(ours))
    assert snapshot is not None
    result = merge_into(spark, spark.createDataFrame(source.to_pylist(), schema), snapshot, spec)
    expected = delta_rs_merge(theirs, source, _on_condition(config), builder)
    if vectors:
        assert result.metrics["numTargetRowsCopied"] == 0, config
    return ours, theirs, config, result.metrics, expected


def _on_condition(config: dict) -> str:
    if "merge_condition" in config:
        return config["merge_condition"]
    return " AND ".join(["t.k = s.k", *config.get("incremental_predicates", [])])


def _shuffle_joins_on_odd(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Odd seeds broadcast nothing: the joins large sources take (full outer, shuffled anti-join)."""
    if seed % 2:
        monkeypatch.setattr("dbt.adapters.deltamerge.merge.source.BROADCAST_SOURCE_BYTES", -1)


def _assert_same_rows_and_counts(ours: str, theirs: str, config: dict, m: dict, expected: dict) -> None:
    assert sorted_rows(ours) == sorted_rows(theirs), config
    assert (m["numTargetRowsInserted"], m["numTargetRowsUpdated"], m["numTargetRowsDeleted"]) == (
        expected["num_target_rows_inserted"],
        expected["num_target_rows_updated"],
        expected["num_target_rows_deleted"],
    ), config


@pytest.mark.stores
@pytest.mark.connect
@pytest.mark.parametrize("seed", SEEDS)
def test_same_result_as_delta_rs(spark, lake_root, seed, monkeypatch):
    _shuffle_joins_on_odd(seed, monkeypatch)
    _assert_same_rows_and_counts(*_merge_both(spark, lake_root, seed, feed=False, vectors=_vectors_on(seed)))


@pytest.mark.stores
@pytest.mark.parametrize("seed", SEEDS)
def test_weighted_same_result_as_delta_rs(spark, lake_root, seed, monkeypatch):
    """Clause sets without WHEN MATCHED, with BY SOURCE clauses, predicates and shared target keys."""
    _shuffle_joins_on_odd(seed, monkeypatch)
    merged = _merge_both(
        spark, lake_root, 100_000 + seed, feed=False, weighted=True, vectors=_vectors_on(seed)
    )
    _assert_same_rows_and_counts(*merged)


@pytest.mark.stores
@pytest.mark.parametrize("seed", range(CASES // 4))
@pytest.mark.parametrize("feed", [False, True], ids=["feed_off", "feed_on"])
def test_by_source_only_same_as_delta_rs(spark, lake_root, seed, feed):
    """Only NOT MATCHED BY SOURCE clauses: phase 2 learns which rows matched from phase 1's keys."""
    ours, theirs, config, m, expected = _merge_both(
        spark, lake_root, seed, feed=feed, by_source_only=True, vectors=bool(seed % 2)
    )
    assert sorted_rows(ours) == sorted_rows(theirs), config
    assert (m["numTargetRowsUpdated"], m["numTargetRowsDeleted"]) == (
        expected["num_target_rows_updated"],
        expected["num_target_rows_deleted"],
    ), config
    if feed:
        assert change_rows(ours, 1) == change_rows(theirs, 1), config


@pytest.mark.stores
@pytest.mark.parametrize("seed", range(CASES // 2))
def test_one_join_same_as_delta_rs(spark, lake_root, seed, monkeypatch):
    """Merge-on-read with WHEN MATCHED clauses, no BY SOURCE clause and a broadcast source: the
    target is joined once (``execute/one_join.py``); odd seeds with the change feed on. In half
    the seeds the plan finds the whole source too big to broadcast: the join broadcasts the
    columns the conditions name and the pairs get the rest by source row id."""
    feed = bool(seed % 2)
    if seed % 4 >= 2:
        monkeypatch.setattr("dbt.adapters.deltamerge.merge.plan.fits_in_broadcast", lambda *_: False)
    merged = _merge_both(spark, lake_root, 300_000 + seed, feed=feed, vectors=True, one_join=True)
    _assert_same_rows_and_counts(*merged)
    if feed:
        assert change_rows(merged[0], 1) == change_rows(merged[1], 1), merged[2]


_TIMINGS = ("executionTimeMs", "scanTimeMs", "rewriteTimeMs", "materializeSourceTimeMs")


@pytest.mark.parametrize("seed", range(CASES // 4))
def test_a_dry_run_reports_what_the_merge_then_does(spark, tmp_path, seed, monkeypatch):
    """Every metric and the files to rewrite of a dry run are the real merge's; it writes nothing."""
    _shuffle_joins_on_odd(seed, monkeypatch)
    rng = random.Random(200_000 + seed)
    target, source, config, _ = random_case(rng, weighted=bool(seed % 2), by_source_only=seed % 5 == 4)
    ours = str(tmp_path / "ours")
    schema = "k bigint, v bigint, op string"
    properties = {"delta.enableChangeDataFeed": "true"} if seed % 3 == 0 else {}
    if _vectors_on(seed):
        properties["delta.enableDeletionVectors"] = "true"
    frame = spark.createDataFrame(target.to_pylist(), schema).repartitionByRange(4, "v")
    write_dataframe(
        spark, frame, WriteRequest(TableLocation.of(ours), "create_or_replace", properties=properties)
    )
    spec = MergeSpec.from_config(f"dry{seed}", config)
    snapshot = load_snapshot(TableLocation.of(ours))
    assert snapshot is not None
    source_df = spark.createDataFrame(source.to_pylist(), schema)
    listing = sorted(os.path.join(d, n) for d, _, names in os.walk(ours) for n in names)

    dry = dry_run_merge(spark, source_df, snapshot, spec)
    assert dry.snapshot.version == snapshot.version and dry.plan["read_version"] == snapshot.version
    assert sorted(os.path.join(d, n) for d, _, names in os.walk(ours) for n in names) == listing
    real = merge_into(spark, source_df, snapshot, spec)
    assert {k: v for k, v in dry.metrics.items() if k not in _TIMINGS} == {
        k: real.metrics[k] for k in dry.metrics if k not in _TIMINGS
    }, config
    # Merge-on-read: a file given a vector is removed and added again; only files gone whole count.
    marked = real.metrics.get("numTargetDeletionVectorsAdded", 0)
    assert len(dry.plan["files_to_rewrite"]) == real.metrics["numTargetFilesRemoved"] + marked, config
    if real.version is not None:  # (a merge that changes nothing commits nothing)
        removed = sorted(a["remove"]["path"] for a in log_actions(ours, real.version) if "remove" in a)
        assert dry.plan["files_to_rewrite"] == removed, config
    # The route that ran, as the plan names it (the sources here are small: broadcast whole).
    marks = _vectors_on(seed) and not spec.copy_on_write and not spec.is_insert_only
    marking = "classic_mark_deleted" if spec.not_matched_by_source else "one_join"
    route = "insert_only" if spec.is_insert_only else marking if marks else "classic_rewrite"
    assert dry.plan["executor"] == route
    assert dry.plan["merge_on_read"] == marks


def change_rows(path: str, start: int) -> list[tuple]:
    """The change feed from ``start`` as read by delta-rs, as a sorted multiset."""
    if DeltaTable(path).version() < start:
        return []
    feed = pa.table(DeltaTable(path).load_cdf(starting_version=start).read_all()).to_pylist()
    return sorted((r["k"], r["v"], r["op"], r["_change_type"]) for r in feed)


@pytest.mark.stores
@pytest.mark.connect
@pytest.mark.parametrize("seed", range(CASES // 2))
def test_same_change_feed_as_delta_rs(spark, lake_root, seed):
    ours, theirs, config, _, _ = _merge_both(spark, lake_root, seed, feed=True, vectors=bool(seed % 2))
    assert sorted_rows(ours) == sorted_rows(theirs), config
    assert change_rows(ours, 1) == change_rows(theirs, 1), config
    if DeltaTable(ours).version() >= 1:
        spark_feed = read_changes(spark, TableLocation.of(ours), 1).collect()
        assert sorted((r.k, r.v, r.op, r._change_type) for r in spark_feed) == change_rows(ours, 1)


def evolving_case(rng: random.Random) -> tuple[pa.Table, pa.Table, dict, list]:
    """A case whose source brings new columns, merged with schema evolution.

    Explicit clauses assign every new column: delta-rs fills a new column that an
    explicit clause leaves out from the source column of the same name, while Delta
    (and this engine) leave it null, so such cases would compare two semantics.
    """
    target, source, _, _ = random_case(rng)
    first = {r["k"]: r for r in reversed(source.to_pylist())}  # unique keys: updates must not multi-match
    source = pa.Table.from_pylist(list(first.values()), schema=source.schema)
    extra = {
        "w": pa.array([rng.randint(0, 9) for _ in range(source.num_rows)], pa.int64()),
        "u": pa.array([rng.choice(["p", "q", None]) for _ in range(source.num_rows)], pa.string()),
    }
    added = ["w", *rng.sample(["u"], rng.randint(0, 1))]
    for name in added:
        source = source.append_column(name, extra[name])
    new = {c: f"s.{c}" for c in added}
    matched = rng.choice(
        [
            [],
            [({"action": "update", "set": "*"}, ("update_all", None, None))],
            [({"action": "update", "set": {"v": "s.v", **new}}, ("update", None, {"v": "s.v", **new}))],
        ]
    )
    insert = {"k": "s.k", "v": "s.v", **new}
    not_matched = rng.choice(
        [
            [],
            [({"action": "insert", "values": "*"}, ("insert_all", None, None))],
            [({"action": "insert", "values": insert}, ("insert", None, insert))],
        ]
    )
    if not (matched or not_matched):
        not_matched = [({"action": "insert", "values": "*"}, ("insert_all", None, None))]
    config = {
        "merge_condition": "t.k = s.k",
        "source_alias": "s",
        "target_alias": "t",
        "when_matched": [c for c, _ in matched],
        "when_not_matched": [c for c, _ in not_matched],
        "merge_with_schema_evolution": True,
    }
    builder = [("matched", d) for _, d in matched] + [("not_matched", d) for _, d in not_matched]
    return target, source, config, builder


@pytest.mark.connect
@pytest.mark.parametrize("seed", range(CASES // 2))
def test_same_schema_evolution_as_delta_rs(spark, tmp_path, seed):
    from dbt.adapters.deltamerge.model.schema_change import planned_schema
    from dbt.adapters.deltamerge.model.spec import WriteSpec

    target, source, config, builder = evolving_case(random.Random(seed))
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    frame = spark.createDataFrame(target.to_pylist(), "k bigint, v bigint, op string")
    write_dataframe(spark, frame, WriteRequest(TableLocation.of(ours), "create_or_replace"))
    write_deltalake(theirs, target)

    spec = MergeSpec.from_config(f"evolve{seed}", config)
    snapshot = load_snapshot(TableLocation.of(ours))
    assert snapshot is not None
    source_df = spark.createDataFrame(source.to_pylist(), schema=_spark_schema(source))
    schema = planned_schema(WriteSpec(model=spec.model), spec, snapshot, source_df.schema)
    merge_into(spark, source_df, snapshot, spec, change=TableChange(schema=schema))
    merger = DeltaTable(theirs).merge(
        source=source, predicate="t.k = s.k", source_alias="s", target_alias="t", merge_schema=True
    )
    for kind, (action, predicate, updates) in builder:
        kwargs = {"predicate": predicate} if updates is None else {"predicate": predicate, "updates": updates}
        merger = getattr(merger, BUILDER_METHODS[(kind, action)])(**kwargs)
    merger.execute()

    names = {f.name for f in DeltaTable(ours).schema().fields}
    assert names == {f.name for f in DeltaTable(theirs).schema().fields}, config
    assert _all_rows(ours) == _all_rows(theirs), config


def _spark_schema(table: pa.Table) -> str:
    kinds = {pa.int64(): "bigint", pa.string(): "string"}
    return ", ".join(f"{f.name} {kinds[f.type]}" for f in table.schema)


def _all_rows(path: str) -> list[tuple]:
    data = DeltaTable(path).to_pyarrow_table().to_pylist()
    return sorted((tuple(sorted(r.items())) for r in data), key=repr)


def test_by_source_with_predicates_tells_apart_rows_sharing_a_key(spark, tmp_path):
    """Two target rows with key 1: the predicate makes one matched and the other not (the key alone can't)."""
    target = pa.table(
        {
            "k": pa.array([1, 1, 2], pa.int64()),
            "v": pa.array([10, 50, 70], pa.int64()),
            "op": pa.array(["U", "U", "U"], pa.string()),
        }
    )
    source = pa.table(
        {"k": pa.array([1], pa.int64()), "v": pa.array([0], pa.int64()), "op": pa.array(["U"], pa.string())}
    )
    config = {
        "unique_key": "k",
        "incremental_predicates": ["t.v >= 30"],
        "source_alias": "s",
        "target_alias": "t",
        "when_matched": [],
        "when_not_matched": [],
        "when_not_matched_by_source": [{"action": "delete"}],
    }
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    write_dataframe(
        spark,
        spark.createDataFrame(target.to_pylist(), "k bigint, v bigint, op string").coalesce(1),
        WriteRequest(TableLocation.of(ours), "create_or_replace"),
    )
    write_deltalake(theirs, target)
    snapshot = load_snapshot(TableLocation.of(ours))
    assert snapshot is not None
    source_df = spark.createDataFrame(source.to_pylist(), "k bigint, v bigint, op string")
    metrics = merge_into(spark, source_df, snapshot, MergeSpec.from_config("shared", config)).metrics
    expected = delta_rs_merge(
        theirs, source, "t.k = s.k AND t.v >= 30", [("by_source", ("delete", None, None))]
    )
    assert sorted_rows(ours) == sorted_rows(theirs) == [(1, 50, "U")]
    assert metrics["numTargetRowsDeleted"] == expected["num_target_rows_deleted"] == 2
