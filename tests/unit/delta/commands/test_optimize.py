"""OPTIMIZE's plan (pure): which files are rewritten, in which bins, as Delta's OptimizeExecutor."""

from __future__ import annotations

from pyroaring import FrozenBitMap64

from dbt.adapters.deltamerge.delta.commands.auto_optimize import MIN_NUM_FILES, partitions_to_compact
from dbt.adapters.deltamerge.delta.commands.optimize import OptimizeOptions, plan_bins, wants_rewrite
from dbt.adapters.deltamerge.delta.log.snapshot import AddFile

MB = 1024 * 1024


def _file(name: str, size: int, partition: str | None = None, **more: object) -> AddFile:
    return AddFile(name, size, {"p": partition} if partition else {}, **more)  # type: ignore[arg-type]


def test_bins_pack_small_files_per_partition_smallest_first_up_to_the_target():
    files = [_file(f"a{i}", (i + 1) * MB, "a") for i in range(6)] + [_file("b0", 5 * MB, "b")]
    bins = plan_bins(files, OptimizeOptions(12 * MB, 12 * MB))
    # Partition a: 1+2+3+4 MB fit 12 MB, then 5+6 MB; partition b's one file is left alone.
    assert [[f.path for f in b.files] for b in bins] == [["a0", "a1", "a2", "a3"], ["a4", "a5"]]
    assert all(b.partition_values == (("p", "a"),) and b.files_out == 1 for b in bins)


def test_right_sized_files_stay_and_a_lone_small_file_is_no_bin():
    files = [_file("big1", 20 * MB), _file("big2", 20 * MB), _file("small", MB)]
    assert plan_bins(files, OptimizeOptions(10 * MB, 10 * MB)) == []


def test_files_with_many_deleted_rows_are_rewritten_whatever_their_size():
    few = FrozenBitMap64(range(4))
    many = FrozenBitMap64(range(10))
    vector = {"storageType": "u"}
    options = OptimizeOptions(MB, MB)
    assert not wants_rewrite(
        _file("f", 2 * MB, num_records=100, deleted_rows=few, deletion_vector=vector), options
    )
    assert wants_rewrite(
        _file("f", 2 * MB, num_records=100, deleted_rows=many, deletion_vector=vector), options
    )
    assert wants_rewrite(
        _file("f", 2 * MB, deletion_vector=vector), options
    )  # no row count: Delta rewrites it


def test_zorder_takes_every_file_of_a_partition_as_one_bin_of_size_over_target_files():
    files = [_file(f"a{i}", 30 * MB, "a") for i in range(4)] + [_file("b", 30 * MB, "b")]
    bins = plan_bins(files, OptimizeOptions(50 * MB, 50 * MB, ("x",)))
    assert sorted((b.partition_values, len(b.files), b.files_out) for b in bins) == [
        ((("p", "a"),), 4, 2),
        ((("p", "b"),), 1, 1),
    ]


def test_auto_compaction_options_and_the_partitions_it_picks():
    options = OptimizeOptions.for_table({}, auto=True)
    assert (options.target_size, options.small_size, options.auto) == (128 * MB, 64 * MB, True)
    files = [_file(f"f{i}", MB, "a") for i in range(MIN_NUM_FILES - 1)] + [_file("big", 100 * MB, "a")]
    assert partitions_to_compact(files, {(("p", "a"),)}, options.small_size) == set()
    files.append(_file("one-more", MB, "a"))
    assert partitions_to_compact(files, {(("p", "a"),)}, options.small_size) == {(("p", "a"),)}
    assert partitions_to_compact(files, {(("p", "b"),)}, options.small_size) == set()  # not written to
