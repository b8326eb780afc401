"""Real processes racing to commit to one table never share a version."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from dbt.adapters.deltamerge.delta import ConcurrentModification, TableLocation
from dbt.adapters.deltamerge.delta.txn import CommitInfo, commit, latest_version

WORKERS, COMMITS = 4, 15


def _worker(path: str, worker: int, blind: bool, start, out) -> None:
    start.wait()
    won = []
    for i in range(COMMITS):
        info = CommitInfo("WRITE", {"mode": "Append"}, {"worker": worker, "i": i}, is_blind_append=blind)
        with contextlib.suppress(ConcurrentModification):
            won.append(
                commit(
                    TableLocation.of(path),
                    read_version=latest_version(TableLocation.of(path)),
                    actions=[],
                    info=info,
                )
            )
    out.put((worker, won))


def _race(path: str, blind: bool) -> dict[int, list[int]]:
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(path, w, blind, start, out)) for w in range(WORKERS)]
    for p in procs:
        p.start()
    start.set()
    results = dict(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return results


def _check_log(path: str, results: dict[int, list[int]]) -> None:
    won = sorted(v for versions in results.values() for v in versions)
    assert len(won) == len(set(won)), "two processes reported the same version"
    assert won == list(range(1, latest_version(TableLocation.of(path)) + 1)), "versions must be contiguous"
    for version in won:
        with open(os.path.join(path, "_delta_log", f"{version:020d}.json")) as handle:
            info = json.loads(handle.readline())["commitInfo"]
        worker = int(info["operationMetrics"]["worker"])
        assert version in results[worker], "the file's author must be the process that won it"
    assert DeltaTable(path).version() == won[-1]


def test_blind_appends_all_land_in_distinct_versions(tmp_path):
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"id": [1]}))
    results = _race(path, blind=True)
    assert sum(len(v) for v in results.values()) == WORKERS * COMMITS
    _check_log(path, results)


def test_non_blind_writers_lose_cleanly(tmp_path):
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"id": [1]}))
    results = _race(path, blind=False)
    assert 0 < sum(len(v) for v in results.values()) <= WORKERS * COMMITS
    _check_log(path, results)
