"""The benchmark report's arithmetic: paired ratios, medians and the target checks."""

from __future__ import annotations

from benchmarks.report import evaluate, failed_checks, paired_ratio, render


def record(contestant: str, round_: int, seconds: float, **extra: object) -> dict[str, object]:
    base = {"workload": "upsert_random", "layout": 40, "round": round_, "warmup": round_ == 0}
    return {**base, "contestant": contestant, "seconds": seconds, "peak_bytes": 100, **extra}


def test_paired_ratio_is_the_median_of_same_round_ratios_without_warmups():
    records = [
        record("ours", 0, 100.0),  # warm-up: ignored
        record("deltars", 0, 1.0),
        record("ours", 1, 2.0),
        record("deltars", 1, 1.0),
        record("ours", 2, 3.0),
        record("deltars", 2, 6.0),
        record("ours", 3, 4.0),
        record("deltars", 3, 1.0),
    ]
    # Pairs: 2.0, 0.5, 4.0 -> median 2.0 (the ratio of medians would be 3.0 / 1.0).
    assert paired_ratio(records, "upsert_random", 40, "ours", "deltars") == 2.0
    assert paired_ratio(records, "upsert_random", 40, "ours", "rewrite") is None


def test_targets_use_the_bound_of_the_workload_kind():
    records = [
        record("ours", 1, 2.5, files_removed=40, check="ok"),
        record("deltars", 1, 1.0, files_removed=40, check="ok"),
        record("rewrite", 1, 3.0, files_removed=40, check="ok"),
        record("floor", 1, 1.0),
    ]
    results = {"records": records, "settings": {"rows": 1000, "layouts": [40]}}
    found = {(t.measure, t.bound): (value, ok) for t, w, layout, value, ok in evaluate(results)}
    # Random upserts may take 2.5x delta-rs; the small merges' 2.0 is not theirs.
    assert found[("ours / delta-rs, random upsert", 2.5)] == (2.5, True)
    assert ("ours / delta-rs, small merges", 2.0) not in found
    assert found[("ours / floor", 1.5)] == (2.5, False)
    assert ("ours / floor, whole-table BY SOURCE delete", 2.0) not in found
    assert found[("files removed, ours minus delta-rs", 0)] == (0.0, True)


def test_the_no_op_cold_and_large_figures_are_reported():
    records = [record("ours", 1, 2.0, peak_bytes=100), record("deltars", 1, 1.0, peak_bytes=200)]
    large = [record("ours", 1, 8.0, peak_bytes=110), record("deltars", 1, 10.0, peak_bytes=500)]
    settings = {"rows": 1000, "layouts": [40], "runs": 1, "warmups": 0}
    cold = {"workload": "upsert_random", "seconds": 20.0, "model_seconds": 9.0, "merge_ms": 8000}
    results = {
        "records": records,
        "settings": settings,
        "startup_seconds": 5.0,
        "generate_seconds": 1.0,
        "harness_seconds": 60.0,
        "file_totals": {"40": 40},
        "noop_merge": {"seconds": [0.9, 0.7, 0.3, 0.4], "counted": 2, "median": 0.35},
        "cold_dbt": [
            {**cold, "target": "embedded", "peak_bytes": 2 * 2**20, "check": "ok"},
            {**cold, "target": "server", "peak_bytes": 2**20, "check": "MISMATCH"},
        ],
    }
    text = render(results, "", {"records": large, "settings": {**settings, "rows": 5000}})
    assert (
        "| no-op merge of a 4-row table, warm session (the engine, median of the last 2 of 4 runs) " in text
    )
    assert "| ≤ 0.5 s | 0.350 s | yes |" in text
    assert "| upsert_random | 2.00 | 20.0 / 9.0 / 8.0 | 20.0 / 9.0 / 8.0 | 2 / 1 | MISMATCH, ok |" in text
    assert "| 5,000 rows, ours / delta-rs, time (upsert_random, 40 files) | ≤ 1.0 | 0.80 | yes |" in text
    assert (
        "| 5,000 rows, ours / delta-rs, peak memory (upsert_random, 40 files) | ≤ 1.0 | 0.22 | yes |" in text
    )
    assert (
        "| peak memory of ours, 5,000 / 1,000 rows (upsert_random, 40 files) | flat (≤ 1.2) | 1.10 | yes |"
        in text
    )
    assert failed_checks(results) == ["cold dbt run of upsert_random (server): MISMATCH"]


def test_a_result_mismatch_is_reported():
    records = [record("ours", 1, 1.0, check="MISMATCH 1 vs 2"), record("deltars", 1, 1.0, check="ok")]
    results = {"records": records, "settings": {"rows": 1000, "layouts": [40]}, "cold_dbt": {"check": "ok"}}
    assert failed_checks(results) == ["upsert_random (40 files, round 1) ours: MISMATCH 1 vs 2"]


def test_render_keeps_the_hand_written_analysis():
    results = {
        "records": [record("ours", 1, 1.0), record("deltars", 1, 2.0)],
        "settings": {"rows": 1000, "layouts": [40], "runs": 1, "warmups": 1},
        "startup_seconds": 5.0,
        "generate_seconds": 1.0,
        "harness_seconds": 60.0,
        "file_totals": {"40": 40},
    }
    analysis = "<!-- analysis:start -->\nwhy\n<!-- analysis:end -->"
    text = render(results, analysis)
    assert "| upsert 1% + 0.5% new, random keys | 1.00 | 2.00 |" in text and text.rstrip().endswith(analysis)
