"""The benchmark harness on tiny data, one run: it must keep working (no timing asserted).

Runs the README's benchmark command as a user would, with every workload and contestant,
then checks what it recorded: every contestant's table agrees with delta-rs's, files
removed follow the targets that are about work (not time), and the report and chart exist.

The slow tier (``DELTAMERGE_SLOW=1``), not ``make test``: two minutes of the suite's worker
time for a harness ``make bench`` runs whole anyway; the engine's paths it drives are the
functional tests' own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.workloads import workloads

ROOT = Path(__file__).resolve().parents[2]
ROWS = 2000

pytestmark = pytest.mark.skipif(
    os.environ.get("DELTAMERGE_SLOW") != "1", reason="the slow tier: DELTAMERGE_SLOW=1 runs it"
)


def test_benchmark_harness_end_to_end(tmp_path):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "benchmarks", "--rows", str(ROWS), "--layouts", "10", "--runs", "1"]
    command += ["--warmups", "0", "--workdir", str(tmp_path / "work"), "--out", str(out)]
    # No cold `dbt run`s: each starts a JVM (~30 s); benchmarks/warm.py's paths are the ones users run.
    command += ["--no-cold-dbt", "--noop-runs", "2"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    results = json.loads((out / "benchmarks" / "results.json").read_text())
    records = results["records"]
    kinds = {w.name: w.kind for w in workloads(ROWS)}
    assert {r["workload"] for r in records} == set(kinds)
    assert {r["layout"] for r in records} == {10}
    assert results["file_totals"] == {"10": 10}

    tables = [r for r in records if r["contestant"] in ("ours", "ours_feed_off", "deltars", "rewrite")]
    assert tables and all(r["check"] == "ok" for r in tables), [r for r in tables if r.get("check") != "ok"]
    by_run = {(r["workload"], r["layout"], r["contestant"]): r for r in records}
    for (workload, layout, contestant), record in by_run.items():
        if contestant == "ours":
            theirs = by_run[(workload, layout, "deltars")]
            assert record["files_removed"] <= theirs["files_removed"], (workload, layout)
            if kinds[workload] == "insert":
                assert (
                    record["files_removed"] == 0 and record["metrics"]["numTargetRowsInserted"] == ROWS // 100
                )
        assert record["peak_bytes"] > 0 and record["seconds"] > 0
    window = by_run[("delete_window", 10, "ours")]["metrics"]
    assert window["numTargetFilesAfterSkipping"] == 1 and window["numTargetRowsDeleted"] == ROWS // 20 // 20

    assert not results.get("cold_dbt")
    assert len(results["noop_merge"]["seconds"]) == 2 and results["noop_merge"]["median"] > 0
    report = (out / "BENCHMARKS.md").read_text()
    assert (
        "## Targets" in report
        and "| ours / delta-rs, small merges |" in report
        and "10-file layout" in report
    )
    assert "| no-op merge of a 4-row table, warm session" in report and "| upsert_clustered |" in report
    assert (out / "benchmarks" / "benchmarks.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
