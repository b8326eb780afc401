"""The harness's records: the counted rounds of one contestant, medians, paired ratios."""

from __future__ import annotations

import statistics
from typing import Any

Records = list[dict[str, Any]]


def counted(records: Records, workload: str, layout: int, contestant: str) -> Records:
    return [
        r
        for r in records
        if r["workload"] == workload
        and r["layout"] == layout
        and r["contestant"] == contestant
        and not r["warmup"]
    ]


def median_of(records: Records, workload: str, layout: int, contestant: str, key: str) -> float | None:
    values = [float(r[key]) for r in counted(records, workload, layout, contestant) if r.get(key) is not None]
    return statistics.median(values) if values else None


def paired_ratio(
    records: Records, workload: str, layout: int, mine: str, other: str, key: str = "seconds"
) -> float | None:
    """The median over counted rounds of ``mine / other`` measured in the same round."""
    theirs = {r["round"]: r for r in counted(records, workload, layout, other)}
    ratios = [
        float(r[key]) / float(theirs[r["round"]][key])
        for r in counted(records, workload, layout, mine)
        if r["round"] in theirs and theirs[r["round"]].get(key)
    ]
    return statistics.median(ratios) if ratios else None
