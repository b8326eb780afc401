"""The chart of BENCHMARKS.md: paired time ratios per workload, one panel per layout."""

from __future__ import annotations

from typing import Any

from benchmarks.records import paired_ratio
from benchmarks.workloads import workloads

SERIES = (("deltars", "ours / delta-rs"), ("rewrite", "ours / full rewrite"), ("floor", "ours / floor"))


def draw_chart(results: dict[str, Any], path: str) -> None:
    """Grouped bars of the median paired ratios (log scale; below 1 means ours is faster)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = results["records"]
    layouts = results["settings"]["layouts"]
    names = [
        w.name
        for w in workloads(results["settings"]["rows"])
        if any(r["workload"] == w.name for r in records)
    ]
    figure, axes = plt.subplots(len(layouts), 1, figsize=(12, 4.2 * len(layouts)), squeeze=False)
    width = 0.8 / len(SERIES)
    for axis, layout in zip(axes[:, 0], layouts, strict=True):
        for i, (other, label) in enumerate(SERIES):
            values = [paired_ratio(records, name, layout, "ours", other) or 0.0 for name in names]
            positions = [x + (i - 1) * width for x in range(len(names))]
            axis.bar(positions, values, width, label=label)
        axis.axhline(1.0, color="black", linewidth=0.8)
        axis.set_yscale("log")
        axis.set_xticks(range(len(names)))
        axis.set_xticklabels(names, rotation=20, ha="right", fontsize=8)
        axis.set_ylabel("time ratio (log)")
        axis.set_title(f"{results['settings']['rows']:,} rows, {layout}-file layout")
        axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
