"""From the harness's records to BENCHMARKS.md (medians, paired ratios, targets) and a chart."""

from __future__ import annotations

import os
import re
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from benchmarks.environment import describe_machine
from benchmarks.records import Records, counted, median_of, paired_ratio
from benchmarks.workloads import workloads

# Kept across runs: the written analysis, and the section `python -m benchmarks.connect` writes.
KEEP = re.compile(
    r"<!-- analysis:start -->.*?<!-- analysis:end -->(?:\s*<!-- connect:start -->.*?<!-- connect:end -->)?"
    r"(?:\s*<!-- merge-on-read:start -->.*?<!-- merge-on-read:end -->)?",
    re.S,
)
MB = 1024 * 1024


@dataclass(frozen=True)
class Target:
    """One row of the issue's target table, checked per layout and workload."""

    measure: str
    bound: float
    kinds: tuple[str, ...] | None  # None: every workload
    value: Callable[[Records, str, int], float | None]
    text: str


def _ratio(
    other: str, key: str = "seconds", mine: str = "ours"
) -> Callable[[Records, str, int], float | None]:
    return lambda records, w, layout: paired_ratio(records, w, layout, mine, other, key)


def _files_removed_excess(records: Records, w: str, layout: int) -> float | None:
    ours = median_of(records, w, layout, "ours", "files_removed")
    theirs = median_of(records, w, layout, "deltars", "files_removed")
    return None if ours is None or theirs is None else ours - theirs


# Issue 18's targets (time), with the work targets that hold from the first harness on.
SMALL = ("clustered", "three_clause")
TARGETS = [
    Target("files removed, ours minus delta-rs", 0, None, _files_removed_excess, "≤ 0 on every workload"),
    Target(
        "files removed by insert-only",
        0,
        ("insert",),
        lambda r, w, n: median_of(r, w, n, "ours", "files_removed"),
        "= 0",
    ),
    Target(
        "ours / floor",
        1.5,
        ("insert", "clustered", "random", "window_delete", "three_clause"),
        _ratio("floor"),
        "≤ 1.5",
    ),
    Target("ours / floor, whole-table BY SOURCE delete", 2.0, ("whole_delete",), _ratio("floor"), "≤ 2.0"),
    Target("ours / delta-rs, small merges", 2.0, SMALL, _ratio("deltars"), "≤ 2.0"),
    Target("ours / delta-rs, random upsert", 2.5, ("random",), _ratio("deltars"), "≤ 2.5"),
    Target("change feed on / off", 1.15, ("cdf",), _ratio("ours_feed_off"), "≤ 1.15"),
    Target("insert-only / plain append", 1.3, ("insert",), _ratio("append"), "≤ 1.3"),
]
NOOP_BOUND = 0.5
LARGE_BOUND = 1.0
FLAT_BOUND = 1.2


def _applies(target: Target, workload: Any) -> bool:
    if target.kinds is None:
        return True
    if "cdf" in target.kinds:
        return bool(workload.change_data_feed)
    return workload.kind in target.kinds


def evaluate(results: dict[str, Any]) -> list[tuple[Target, str, int, float | None, bool]]:
    """Every (target, workload, layout) with the measured value and whether the target holds."""
    records = results["records"]
    rows = results["settings"]["rows"]
    present = {r["workload"] for r in records}
    out = []
    for target in TARGETS:
        for layout in results["settings"]["layouts"]:
            for w in workloads(rows):
                if w.name in present and _applies(target, w):
                    value = target.value(records, w.name, layout)
                    out.append((target, w.name, layout, value, value is not None and value <= target.bound))
    return out


def failed_checks(results: dict[str, Any]) -> list[str]:
    """Every run whose resulting rows differ from delta-rs's (and the cold dbt run's check)."""
    bad = [
        f"{r['workload']} ({r['layout']} files, round {r['round']}) {r['contestant']}: {r['check']}"
        for r in results["records"]
        if r.get("check", "ok") != "ok"
    ]
    for cold in _cold_runs(results):
        if cold.get("check") != "ok":
            bad.append(f"cold dbt run of {cold['workload']} ({cold['target']}): {cold.get('check')}")
    return bad


def write_report(results: dict[str, Any], out: str, *, large: dict[str, Any] | None = None) -> list[str]:
    """Write BENCHMARKS.md and benchmarks.png into ``out``; return the failed result checks.

    ``large``: the results of a run at a larger scale (50M rows), shown in their own section.
    """
    from benchmarks.chart import draw_chart

    path = os.path.join(out, "BENCHMARKS.md")
    kept = ""
    if os.path.exists(path):
        with open(path) as f:
            found = KEEP.search(f.read())
            kept = found.group(0) if found else ""
    draw_chart(results, os.path.join(out, "benchmarks", "benchmarks.png"))
    with open(path, "w") as f:
        f.write(render(results, kept, large))
    return failed_checks(results)


def render(results: dict[str, Any], analysis: str = "", large: dict[str, Any] | None = None) -> str:
    """The whole BENCHMARKS.md."""
    s = results["settings"]
    lines = [
        "# Benchmarks: dbt-deltamerge's merge engine, delta-rs, a full rewrite and the floor",
        "",
        "Generated by `" + results.get("command", "python -m benchmarks") + "` (see docs/testing.md); "
        "the raw records are in `benchmarks/results.json`.",
        "",
        *describe_machine(),
        "",
        f"- Data: {s['rows']:,} rows x 12 columns, layouts of {', '.join(str(x) for x in s['layouts'])} "
        "files; "
        f"{s['warmups']} warm-up + {s['runs']} counted runs per workload and contestant, interleaved.",
        f"- JVM + Spark session start (once, not in any timing): {results['startup_seconds']:.1f} s "
        f"(the idle Spark worker, Python + JVM: {results.get('idle_bytes', 0) / MB:.0f} MB resident); "
        f"data generation: {results['generate_seconds']:.0f} s; "
        f"whole harness: {results['harness_seconds'] / 60:.1f} min.",
        "",
        "Contestants: **ours** = `delta_merge` through the engine on the warm Spark session; "
        "**delta-rs** = `DeltaTable.merge` (same clauses, materialized source so it prunes files, "
        "fresh process per run); **rewrite** = the same result by a full outer join rewriting the whole "
        "table in the same Spark session; **floor** = Spark copying exactly the files ours touched, "
        "writing the source rows and scanning the key column of the files whose key range overlaps "
        "the source's. Times are medians (s); ratios are medians of same-round pairs.",
        "",
        "## Targets",
        "",
        *_target_lines(results),
        *_noop_line(results.get("noop_merge")),
        *_large_target_lines(large, results),
        "",
        *_cold_table(results),
        "## Results",
        "",
        "![ratios per workload](benchmarks/benchmarks.png)",
        "",
    ]
    for layout in s["layouts"]:
        lines += _layout_table(results, layout)
    lines += _profile_lines(results)
    if analysis:
        lines += ["", analysis]
    return "\n".join(lines) + "\n"


def _noop_line(noop: dict[str, Any] | None) -> list[str]:
    if not noop:
        return []
    value = noop["median"]
    return [
        f"| no-op merge of a 4-row table, warm session (the engine, median of the last "
        f"{noop['counted']} of {len(noop['seconds'])} runs) | ≤ {NOOP_BOUND} s | {value:.3f} s "
        f"| {'yes' if value <= NOOP_BOUND else 'no'} |"
    ]


def _large_target_lines(large: dict[str, Any] | None, results: dict[str, Any]) -> list[str]:
    if not large:
        return []
    lines = []
    rows = large["settings"]["rows"]
    for layout in large["settings"]["layouts"]:
        for w in workloads(rows):
            for key, what in (("seconds", "time"), ("peak_bytes", "peak memory")):
                value = paired_ratio(large["records"], w.name, layout, "ours", "deltars", key)
                if value is not None:
                    ok = "yes" if value <= LARGE_BOUND else "no"
                    lines.append(
                        f"| {rows:,} rows, ours / delta-rs, {what} ({w.name}, {layout} files) "
                        f"| ≤ {LARGE_BOUND} | {_fmt(value)} | {ok} |"
                    )
            small = median_of(results["records"], w.name, layout, "ours", "peak_bytes")
            big = median_of(large["records"], w.name, layout, "ours", "peak_bytes")
            if small and big:
                scale = f"{rows:,} / {results['settings']['rows']:,}"
                lines.append(
                    f"| peak memory of ours, {scale} rows ({w.name}, {layout} files) | flat (≤ {FLAT_BOUND}) "
                    f"| {_fmt(big / small)} | {'yes' if big / small <= FLAT_BOUND else 'no'} |"
                )
    return lines


def _cold_table(results: dict[str, Any]) -> list[str]:
    """Every workload's cold `dbt run` (a new dbt process) beside the warm engine's time."""
    cold = _cold_runs(results)
    if not cold:
        return []
    layout = results["settings"]["layouts"][0]
    by = {(c["workload"], c["target"]): c for c in cold}
    lines = [
        f"## Cold runs: a new `dbt run` per merge ({layout}-file layout)",
        "",
        "*embedded*: the dbt process starts its own JVM and Spark session; *server*: it is a Spark "
        "Connect client of a warm local server (`deltamerge-server`, started once, not timed). "
        "Wall = the whole `dbt run` process; model = dbt's time for the model (its macros, "
        "catalog and the merge); merge = the engine's `executionTimeMs`. Peak memory is the dbt "
        "process's (with its JVM when embedded; the server's is not counted).",
        "",
        "| workload | warm s | embedded wall / model / merge s | server wall / model / merge s "
        "| peak MB embedded / server | check |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for w in workloads(results["settings"]["rows"]):
        runs = [by.get((w.name, t)) for t in ("embedded", "server")]
        if not any(runs):
            continue
        checks = ", ".join(sorted({r["check"] for r in runs if r}))
        lines.append(
            f"| {w.name} | {_fmt(median_of(results['records'], w.name, layout, 'ours', 'seconds'))} "
            f"| {_cold_cell(runs[0])} | {_cold_cell(runs[1])} "
            f"| {' / '.join(_mb(r['peak_bytes']) if r else '-' for r in runs)} | {checks} |"
        )
    return [*lines, ""]


def _cold_runs(results: dict[str, Any]) -> list[dict[str, Any]]:
    cold = results.get("cold_dbt") or []
    if isinstance(cold, dict):  # results of an older harness: one embedded run
        return [{**cold, "target": "embedded", "model_seconds": None}]
    return list(cold)


def _cold_cell(run: dict[str, Any] | None) -> str:
    if not run:
        return "-"
    model = run.get("model_seconds")
    return f"{run['seconds']:.1f} / {'-' if model is None else f'{model:.1f}'} / {run['merge_ms'] / 1000:.1f}"


def _target_lines(results: dict[str, Any]) -> list[str]:
    by_target: dict[tuple[str, str], list[tuple[str, int, float | None, bool]]] = defaultdict(list)
    for target, workload, layout, value, ok in evaluate(results):
        by_target[(target.measure, target.text)].append((workload, layout, value, ok))
    lines = ["| measure | target | worst (workload, files) | met |", "| --- | --- | --- | --- |"]
    for (measure, text), values in by_target.items():
        measured = [v for v in values if v[2] is not None]
        if not measured:
            continue
        worst = max(measured, key=lambda v: v[2] or 0.0)
        met = all(v[3] for v in values)
        failing = ", ".join(f"{w} ({n})" for w, n, _, ok in values if not ok)
        lines.append(
            f"| {measure} | {text} | {_fmt(worst[2])} ({worst[0]}, {worst[1]}) | "
            f"{'yes' if met else 'no: ' + failing} |"
        )
    return lines


def _layout_table(results: dict[str, Any], layout: int) -> list[str]:
    records = results["records"]
    names = [
        w for w in workloads(results["settings"]["rows"]) if any(r["workload"] == w.name for r in records)
    ]
    total = results["file_totals"].get(str(layout), results["file_totals"].get(layout))
    lines = [
        f"### {layout}-file layout ({total} files)",
        "",
        "| workload | ours s | delta-rs s | rewrite s | floor s | ours/delta-rs | ours/rewrite | ours/floor "
        "| files removed ours / delta-rs | files added ours / delta-rs | MB removed / added (ours) "
        "| rows copied ours / delta-rs | peak MB ours / delta-rs | check |",
        "| --- | " + " | ".join(["---:"] * 12) + " | --- |",
    ]
    lines += [_row(records, w, layout) for w in names]
    extra = _extra_lines(records, names, layout)
    return lines + (["", *extra] if extra else []) + [""]


def _row(records: Records, w: Any, layout: int) -> str:
    def med(contestant: str, key: str) -> float | None:
        return median_of(records, w.name, layout, contestant, key)

    def ratio(other: str) -> float | None:
        return paired_ratio(records, w.name, layout, "ours", other)

    checks = {r.get("check") for r in records if r["workload"] == w.name and r["layout"] == layout}
    copied = (
        _copied(records, w.name, layout, "ours", "numTargetRowsCopied"),
        _copied(records, w.name, layout, "deltars", "num_target_rows_copied"),
    )
    return (
        f"| {w.title} | {_fmt(med('ours', 'seconds'))} | {_fmt(med('deltars', 'seconds'))} "
        f"| {_fmt(med('rewrite', 'seconds'))} | {_fmt(med('floor', 'seconds'))} "
        f"| {_fmt(ratio('deltars'))} | {_fmt(ratio('rewrite'))} | {_fmt(ratio('floor'))} "
        f"| {_int(med('ours', 'files_removed'))} / {_int(med('deltars', 'files_removed'))} "
        f"| {_int(med('ours', 'files_added'))} / {_int(med('deltars', 'files_added'))} "
        f"| {_mb(med('ours', 'bytes_removed'))} / {_mb(med('ours', 'bytes_added'))} "
        f"| {_int(copied[0])} / {_int(copied[1])} "
        f"| {_mb(med('ours', 'peak_bytes'))} / {_mb(med('deltars', 'peak_bytes'))} "
        f"| {', '.join(sorted(c for c in checks if c)) or '-'} |"
    )


def _profile_lines(results: dict[str, Any]) -> list[str]:
    """Where ours spends its time, from the engine's own metrics (medians, seconds)."""
    records = results["records"]
    lines = [
        "## Where ours spends its time",
        "",
        "From the engine's metrics: *phase 1* = finding the touched files (`scanTimeMs`), *phase 2* = "
        "writing the new files (`rewriteTimeMs`), *before* = materializing and profiling the source, "
        "data skipping and reading the snapshot; the rest of the wall time is the commit.",
        "",
        "| workload | files | wall s | before s | phase 1 s | phase 2 s | floor s | delta-rs s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for layout in results["settings"]["layouts"]:
        for w in workloads(results["settings"]["rows"]):
            runs = counted(records, w.name, layout, "ours")
            if not runs:
                continue

            def ms(key: str, runs: Records = runs) -> float:
                return statistics.median(float(r.get("metrics", {}).get(key, 0)) / 1000 for r in runs)

            before = ms("executionTimeMs") - ms("scanTimeMs") - ms("rewriteTimeMs")
            lines.append(
                f"| {w.name} | {layout} | {_fmt(median_of(records, w.name, layout, 'ours', 'seconds'))} "
                f"| {_fmt(before)} | {_fmt(ms('scanTimeMs'))} | {_fmt(ms('rewriteTimeMs'))} "
                f"| {_fmt(median_of(records, w.name, layout, 'floor', 'seconds'))} "
                f"| {_fmt(median_of(records, w.name, layout, 'deltars', 'seconds'))} |"
            )
    return [*lines, ""]


def _extra_lines(records: Records, names: Iterable[Any], layout: int) -> list[str]:
    lines = []
    for w in names:
        if w.change_data_feed:
            on, off = (
                median_of(records, w.name, layout, "ours", "seconds"),
                median_of(records, w.name, layout, "ours_feed_off", "seconds"),
            )
            lines.append(
                f"- {w.title}: feed on {_fmt(on)} s, off {_fmt(off)} s, "
                f"on/off {_fmt(paired_ratio(records, w.name, layout, 'ours', 'ours_feed_off'))}."
            )
        if w.kind == "insert":
            append = median_of(records, w.name, layout, "append", "seconds")
            lines.append(
                f"- {w.title}: plain append of the same rows {_fmt(append)} s, "
                f"insert-only / append {_fmt(paired_ratio(records, w.name, layout, 'ours', 'append'))}."
            )
    return lines


def _copied(records: Records, workload: str, layout: int, contestant: str, key: str) -> float | None:
    values = [
        float(r["metrics"].get(key, 0))
        for r in counted(records, workload, layout, contestant)
        if "metrics" in r
    ]
    return statistics.median(values) if values else None


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if abs(value) < 0.1 else f"{value:.2f}"


def _int(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value / MB:,.0f}"
