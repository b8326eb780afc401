"""The log's own record of live files and domains, replayed from commits and every checkpoint kind."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dbt.adapters.deltamerge.delta.errors import DeltaError
from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.log.replay import log_state

DV = {
    "storageType": "u",
    "pathOrInlineDv": "vBn[lx{q8@P<9BNH/isA",
    "offset": 1,
    "sizeInBytes": 36,
    "cardinality": 2,
}


def _commit(log: Path, version: int, *actions: dict) -> None:
    (log / f"{version:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))


def _table(tmp_path: Path) -> Path:
    log = tmp_path / "_delta_log"
    log.mkdir()
    _commit(log, 0, {"add": {"path": "a", "baseRowId": 0}}, {"add": {"path": "b%20c", "baseRowId": 5}})
    # A DELETE giving `a` a deletion vector: the old logical file removed, the new one added.
    _commit(log, 1, {"remove": {"path": "a"}}, {"add": {"path": "a", "deletionVector": DV, "baseRowId": 0}})
    domain = {"domain": "delta.rowTracking", "configuration": '{"rowIdHighWaterMark": 9}', "removed": False}
    _commit(
        log,
        2,
        {"domainMetadata": domain},
        {"domainMetadata": {"domain": "x", "configuration": "", "removed": True}},
    )
    _commit(log, 3, {"remove": {"path": "b%20c"}})
    return tmp_path


def test_newest_actions_win_and_a_path_re_added_with_a_vector_stays_live(tmp_path):
    table = TableLocation.of(str(_table(tmp_path)))
    assert set(log_state(table, 0).adds) == {"a", "b c"}
    state = log_state(table, 2)
    assert state.adds["a"]["deletionVector"] == DV and state.adds["b c"]["baseRowId"] == 5
    assert list(state.domains) == ["delta.rowTracking"]  # a removed domain is gone
    assert set(log_state(table, 3).adds) == {"a"}


def _checkpoint_rows(table: Path, version: int) -> list[dict]:
    state = log_state(TableLocation.of(str(table)), version)
    return [{"add": a} for a in state.adds.values()] + [{"domainMetadata": d} for d in state.domains.values()]


@pytest.mark.parametrize("kind", ["classic", "multi", "v2-json", "v2-parquet-sidecar"])
def test_every_checkpoint_kind_gives_the_state_its_commits_give(tmp_path, kind):
    table = _table(tmp_path)
    log = table / "_delta_log"
    expected = log_state(TableLocation.of(str(table)), 3)
    rows = _checkpoint_rows(table, 2)
    dv_type = pa.struct(
        [(k, pa.int64() if k != "storageType" and k != "pathOrInlineDv" else pa.string()) for k in DV]
    )
    add_type = pa.struct([("path", pa.string()), ("baseRowId", pa.int64()), ("deletionVector", dv_type)])
    domain_type = pa.struct(
        [("domain", pa.string()), ("configuration", pa.string()), ("removed", pa.bool_())]
    )
    schema = pa.schema([("add", add_type), ("domainMetadata", domain_type)])
    table_rows = pa.Table.from_pylist(
        [{"add": r.get("add"), "domainMetadata": r.get("domainMetadata")} for r in rows], schema=schema
    )
    if kind == "classic":
        pq.write_table(table_rows, log / f"{2:020d}.checkpoint.parquet")
    elif kind == "multi":
        pq.write_table(table_rows.slice(0, 1), log / f"{2:020d}.checkpoint.0000000001.0000000002.parquet")
        pq.write_table(table_rows.slice(1), log / f"{2:020d}.checkpoint.0000000002.0000000002.parquet")
    elif kind == "v2-json":
        lines = [{"checkpointMetadata": {"version": 2}}, *rows]
        (log / f"{2:020d}.checkpoint.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json").write_text(
            "".join(json.dumps(r) + "\n" for r in lines)
        )
    else:
        (log / "_sidecars").mkdir()
        pq.write_table(table_rows, log / "_sidecars" / "side-1.parquet")
        sidecar = pa.table({"sidecar": [{"path": "side-1.parquet", "sizeInBytes": 1}]})
        pq.write_table(sidecar, log / f"{2:020d}.checkpoint.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.parquet")
    for version in (0, 1, 2):  # commits up to the checkpoint cleaned up: only it holds them
        (log / f"{version:020d}.json").unlink()
    state = log_state(TableLocation.of(str(table)), 3)
    assert {p: (a.get("deletionVector"), a.get("baseRowId")) for p, a in state.adds.items()} == {
        p: (a.get("deletionVector"), a.get("baseRowId")) for p, a in expected.adds.items()
    }
    assert {d: a["configuration"] for d, a in state.domains.items()} == {
        d: a["configuration"] for d, a in expected.domains.items()
    }


def test_a_log_without_version_0_or_a_checkpoint_is_refused(tmp_path):
    table = _table(tmp_path)
    (table / "_delta_log" / f"{0:020d}.json").unlink()
    with pytest.raises(DeltaError, match="neither version 0 nor a checkpoint"):
        log_state(TableLocation.of(str(table)), 3)
