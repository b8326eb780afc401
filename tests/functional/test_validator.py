"""The validator itself flags corrupted logs (so the reliability tests can trust it)."""

from __future__ import annotations

import os
import shutil

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from tests.validator import problems


def _table(tmp_path) -> str:
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"id": [1, 2]}))
    write_deltalake(path, pa.table({"id": [3]}), mode="append")
    write_deltalake(path, pa.table({"id": [4]}), mode="overwrite")
    return path


def test_a_sound_table_passes(tmp_path):
    assert problems(_table(tmp_path)) == []


def test_missing_file_gap_and_size_are_flagged(tmp_path):
    path = _table(tmp_path)
    live = DeltaTable(path).file_uris()[0].removeprefix("file://")
    with open(live, "ab") as handle:
        handle.write(b"x")
    assert any("bytes, log says" in p for p in problems(path))
    os.remove(live)
    assert any("live file missing" in p for p in problems(path))
    log = os.path.join(path, "_delta_log")
    shutil.move(os.path.join(log, f"{1:020d}.json"), os.path.join(log, f"{7:020d}.json"))
    assert any("not contiguous" in p for p in problems(path))


def _rewrite(path: str, version: int, change) -> None:
    import json

    name = os.path.join(path, "_delta_log", f"{version:020d}.json")
    with open(name) as handle:
        actions = [json.loads(line) for line in handle if line.strip()]
    with open(name, "w") as handle:
        handle.writelines(json.dumps(a) + "\n" for a in change(actions))


def test_feature_rules_are_checked_on_tables_of_other_writers(tmp_path):
    from pathlib import Path

    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "delta-rs"
    for name in ("table_with_liquid_clustering", "cdc_ict_table", "table-with-dv-small"):
        shutil.copytree(fixtures / name, tmp_path / name)
    assert problems(str(tmp_path / "table_with_liquid_clustering")) == []
    assert problems(str(tmp_path / "table-with-dv-small")) == []
    # delta-rs's fixture for timestamps out of order: its v1's is a year before v0's.
    assert problems(str(tmp_path / "cdc_ict_table")) == ["v1: inCommitTimestamp not increasing"]
    # Row ids: two files sharing them, a missing high-water mark.
    clustered = str(tmp_path / "table_with_liquid_clustering")
    _rewrite(
        clustered,
        0,
        lambda acts: [
            {"add": {**a["add"], "baseRowId": 0}} if "add" in a else a
            for a in acts
            if a.get("domainMetadata", {}).get("domain") != "delta.rowTracking"
        ],
    )
    found = problems(clustered)
    assert any("share row ids" in p for p in found) and any("high-water mark" in p for p in found)
    # In-commit timestamps: commitInfo not first.
    ict = str(tmp_path / "cdc_ict_table")
    _rewrite(ict, 2, lambda acts: acts[1:] + acts[:1])
    assert any("commitInfo is not first" in p for p in problems(ict))
    # A remove without the deletion vector of the file it removes.
    dv = str(tmp_path / "table-with-dv-small")
    write_deltalake(dv, pa.table({"value": [1]}), mode="overwrite", configuration=None)
    _rewrite(
        dv,
        2,
        lambda acts: [
            {"remove": {k: v for k, v in a["remove"].items() if k != "deletionVector"}}
            if "remove" in a
            else a
            for a in acts
        ],
    )
    assert any("lacks its add's deletionVector" in p for p in problems(dv))
