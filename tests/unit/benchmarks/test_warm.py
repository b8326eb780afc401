"""The local-loop benchmark's report: ratios and targets from recorded runs (no runs here)."""

from __future__ import annotations

from benchmarks.warm import _medians, section


def _runs(**figures: float) -> list[dict[str, float]]:
    return [dict(figures)]


def test_the_section_reports_each_target_from_the_medians():
    loop = {
        "duckdb": _runs(wall=2.0, cpu=2.0, peak_mib=170, model=0.2),
        "ours": _runs(wall=3.0, cpu=3.0, peak_mib=280, model=1.0),
    }
    first = {"embedded": _runs(wall=20.0, cpu=5, peak_mib=1), "first_server": _runs(wall=18.0, cpu=5)}
    demo = {"embedded": _runs(wall=45.0, cpu=1, peak_mib=1), "first": _runs(wall=44.0, cpu=1, peak_mib=1),
            "second": _runs(wall=15.0, cpu=1, peak_mib=1)}  # fmt: skip
    results = {
        "loop": {"records": loop, "median": _medians(loop), "after_start_median": _medians(loop)},
        "first_command": {"records": first, "median": _medians(first)},
        "demo": {"records": demo, "median": _medians(demo)},
        "baseline": "abc123",
    }
    text = section(results)
    assert "| 3.00 s | 2.00 s | 1.50x | <= 1.3x |" in text
    assert "| 18.0 s | 20.0 s | 0.90x | <= 1.0x |" in text
    assert "| 15.0 s | 45.0 s | 3.0x faster | >= 3x faster |" in text
    assert "at abc123" in text and "the model itself +0.80 s" in text
    assert "the rest of the process +0.20 s" in text
