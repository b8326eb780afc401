"""``python -m benchmarks.project``: whole dbt projects on the warm server against dbt-duckdb (issue 71).

Side by side in one run, the same threads, paired runs alternating, medians:

1. ``dbt build`` of a jaffle_shop-shaped project (``benchmarks/projects.py``: 3 seeds, 3 staging
   views, 2 tables, an incremental model finding nothing new, 20 data tests) [<= 1.5x dbt-duckdb];
2. ``dbt build`` of a generated project (100 models in four layers, 300 data tests) [<= 1.5x];
3. a no-op incremental run (``dbt run -s order_events``: no new source rows) [<= 1.1x];
4. a 100-row merge (``dbt run -s small``: 100 rows merged into 100 on their key, every row
   updated; the model of ``benchmarks.warm``) [<= 1.1x].

Ours runs with ``method: server`` after the server's warm-up has ended and ``--warm-builds``
unmeasured builds (a server a user has had for a while); dbt-duckdb 1.11 in a venv of its own
(``benchmarks.warm``). Beside the wall times: the server JVM's CPU per command, each side's
per-node times (``run_results.json``), and the Spark Connect round trips of one build by kind and
by the code making them (``benchmarks/roundtrips``). Writes ``benchmarks/project.json`` and the
"Project scale" section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import projects
from benchmarks.connect import replace_section
from benchmarks.warm import DUCK_MODEL, OURS_MODEL, _wait_until_warm, duckdb_venv, timed
from dbt.adapters.deltamerge.spark import server

SECTION_START = "<!-- project:start -->"
SECTION_END = "<!-- project:end -->"
ROOT = Path(__file__).resolve().parent.parent
OURS_PROFILE = """{name}:
  target: server
  outputs:
    server:
      type: deltamerge
      method: server
      schema: {name}
      warehouse: {warehouse}
      threads: {threads}
"""
DUCK_PROFILE = """{name}:
  target: duck
  outputs:
    duck:
      type: duckdb
      path: {warehouse}/duck.duckdb
      schema: {name}
      threads: {threads}
"""
COMMANDS = {
    "build": ["build", "--exclude", "small"],
    "noop": ["run", "-s", "order_events"],
    "merge": ["run", "-s", "small"],
}


def prepare(workdir: str, name: str, threads: int, models: int, tests: int) -> dict[str, Path]:
    """Both sides' copies of project ``name`` (``jaffle`` or ``generated``), with the 100-row model."""
    folders = {}
    for side, profile in (("ours", OURS_PROFILE), ("duckdb", DUCK_PROFILE)):
        root = Path(workdir, f"{name}-{side}")
        warehouse = root / "warehouse"
        text = profile.format(name=name, warehouse=warehouse, threads=threads)
        flavour = "ours" if side == "ours" else "duckdb"
        if name == "jaffle":
            projects.jaffle(root, flavour, text)
        else:
            projects.generated(root, flavour, text, models=models, tests=tests)
        (root / "models" / "small.sql").write_text(OURS_MODEL if side == "ours" else DUCK_MODEL)
        warehouse.mkdir(parents=True, exist_ok=True)
        folders[side] = root
    return folders


def jvm_cpu(pid: int) -> float:
    """CPU seconds the server's JVM has used (``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(dbt: str, folder: Path, command: str, jvm: int = 0) -> dict[str, Any]:
    """One command (a new dbt process): its figures, the JVM's CPU meanwhile, per-node times."""
    before = jvm_cpu(jvm) if jvm else 0.0
    figures: dict[str, Any] = timed([dbt, *COMMANDS[command], "--profiles-dir", "."], str(folder))
    if jvm:
        figures["jvm_cpu"] = jvm_cpu(jvm) - before
    results = json.loads((folder / "target" / "run_results.json").read_text())
    kinds: dict[str, list[float]] = collections.defaultdict(list)
    for result in results["results"]:
        if result["status"] not in ("success", "pass"):
            raise RuntimeError(f"{folder}: {result['unique_id']} {result['status']}: {result['message']}")
        kinds[result["unique_id"].split(".")[0]].append(result["execution_time"])
    figures["nodes"] = {k: {"count": len(v), "sum": sum(v)} for k, v in kinds.items()}
    figures["elapsed"] = results["elapsed_time"]
    return figures


def round_trips(dbt: str, folder: Path, command: str, workdir: str) -> dict[str, Any]:
    """The Spark Connect round trips of one ``command``: by kind and by the code making them."""
    log = Path(workdir, f"round-trips-{folder.name}-{command}.tsv")
    log.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "benchmarks" / "roundtrips")}
    env["DELTAMERGE_ROUND_TRIPS"] = str(log)
    subprocess.run(
        [dbt, *COMMANDS[command], "--profiles-dir", "."], cwd=folder, env=env, check=True, capture_output=True
    )
    lines = [line.split("\t") for line in log.read_text().splitlines()]
    kinds = collections.Counter(kind for kind, _, _ in lines)
    callers: dict[str, list[float]] = collections.defaultdict(list)
    for kind, ms, caller in lines:
        callers[f"{kind} {caller}"].append(float(ms))
    top = sorted(callers.items(), key=lambda item: -len(item[1]))
    return {
        "total": len(lines),
        "kinds": dict(kinds),
        "callers": [{"call": k, "count": len(v), "ms": sum(v)} for k, v in top],
    }


def project_runs(
    workdir: str,
    duck_dbt: str,
    name: str,
    *,
    runs: int,
    warm_builds: int,
    threads: int,
    models: int,
    tests: int,
) -> dict[str, Any]:
    """Every measure of one project: paired builds, and for jaffle the no-op and the merge."""
    ours_dbt = str(Path(sys.executable).with_name("dbt"))
    folders = prepare(workdir, name, threads, models, tests)
    warehouse = str(folders["ours"] / "warehouse")
    for command in ("build", "merge"):  # the server started, every table created (then merged into)
        run(ours_dbt, folders["ours"], command)
        run(duck_dbt, folders["duckdb"], command)
    warmed = _wait_until_warm(warehouse)
    state = server.status(warehouse)
    jvm = state.jvm_pid if state is not None else 0
    for _ in range(warm_builds):
        run(ours_dbt, folders["ours"], "build", jvm)
    commands = ["build", "noop", "merge"] if name == "jaffle" else ["build"]
    records: dict[str, dict[str, list[dict[str, Any]]]] = {c: {"ours": [], "duckdb": []} for c in commands}
    for command in commands:
        for _ in range(runs):
            records[command]["duckdb"].append(run(duck_dbt, folders["duckdb"], command))
            records[command]["ours"].append(run(ours_dbt, folders["ours"], command, jvm))
    trips = {c: round_trips(ours_dbt, folders["ours"], c, workdir) for c in commands}
    server.stop(warehouse)
    return {"warmed": warmed, "records": records, "median": _medians(records), "round_trips": trips}


def _medians(records: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for command, sides in records.items():
        out[command] = {}
        for side, rs in sides.items():
            flat = {k: statistics.median(r[k] for r in rs) for k in rs[0] if k != "nodes"}
            flat["nodes"] = {
                kind: statistics.median(r["nodes"][kind]["sum"] / r["nodes"][kind]["count"] for r in rs)
                for kind in rs[0]["nodes"]
            }
            out[command][side] = flat
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.project", description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "deltamerge-project"))
    parser.add_argument("--runs", type=int, default=7, help="paired runs of each jaffle measure")
    parser.add_argument("--generated-runs", type=int, default=3)
    parser.add_argument("--warm-builds", type=int, default=8, help="unmeasured builds first")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--tests", type=int, default=300)
    parser.add_argument("--out", default=str(ROOT))
    parser.add_argument("--render", action="store_true", help="only rewrite the section from project.json")
    args = parser.parse_args(argv)
    record = os.path.join(args.out, "benchmarks", "project.json")
    if args.render:
        with open(record) as f:
            replace_section(
                os.path.join(args.out, "BENCHMARKS.md"), SECTION_START, SECTION_END, section(json.load(f))
            )
        return 0
    workdir = os.path.abspath(args.workdir)
    os.makedirs(workdir, exist_ok=True)
    os.environ.pop("PYTHONPATH", None)  # each dbt finds its adapters in its own venv only
    duck_dbt = duckdb_venv(workdir)
    for entry in os.listdir(workdir):
        path = os.path.join(workdir, entry)
        if os.path.isdir(path) and entry != "duckdb-venv":
            shutil.rmtree(path, ignore_errors=True)
        elif not os.path.isdir(path):
            os.remove(path)
    shape = {"threads": args.threads, "models": args.models, "tests": args.tests}
    results = {
        "jaffle": project_runs(
            workdir, duck_dbt, "jaffle", runs=args.runs, warm_builds=args.warm_builds, **shape
        ),
        "generated": project_runs(
            workdir,
            duck_dbt,
            "generated",
            runs=args.generated_runs,
            warm_builds=args.warm_builds // 4,
            **shape,
        ),
        "shape": shape,
        "duckdb": subprocess.run([duck_dbt, "--version"], capture_output=True, text=True).stdout,
    }
    os.makedirs(os.path.dirname(record), exist_ok=True)
    with open(record, "w") as f:
        json.dump(results, f, indent=1)
    replace_section(os.path.join(args.out, "BENCHMARKS.md"), SECTION_START, SECTION_END, section(results))
    print(section(results))
    return 0


def _row(label: str, figures: dict[str, Any], target: str) -> str:
    ours, duck = figures["ours"], figures["duckdb"]
    return (
        f"| {label} | {ours['wall']:.2f} s | {duck['wall']:.2f} s | {ours['wall'] / duck['wall']:.2f}x "
        f"| {target} | {ours['elapsed']:.2f} s / {duck['elapsed']:.2f} s | {ours['jvm_cpu']:.2f} s "
        f"| {ours['cpu']:.2f} s / {duck['cpu']:.2f} s |"
    )


def section(results: dict[str, Any]) -> str:
    """The BENCHMARKS.md section of one run."""
    jaffle, generated = results["jaffle"], results["generated"]
    shape = results["shape"]
    n = len(jaffle["records"]["build"]["ours"])
    lines = [
        SECTION_START,
        "## Project scale: whole dbt projects on the warm server against dbt-duckdb (issue 71)",
        "",
        f"`python -m benchmarks.project` (medians of {n} paired runs, "
        f"{len(generated['records']['build']['ours'])} for the generated project; {shape['threads']} "
        "threads on both sides; raw records in `benchmarks/project.json`). Ours on its warm server "
        f"after the warm-up ended ({jaffle['warmed']}) and unmeasured builds; dbt-duckdb 1.11 in a venv "
        "of its own. Wall = the dbt process; inside dbt = `run_results.json`'s elapsed time (the "
        "rest is the process's start, parse and listing); JVM = the server's CPU during the command.",
        "",
        "| measure | ours | dbt-duckdb | ratio | target | inside dbt | JVM CPU | dbt process CPU |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        _row(
            "`dbt build`, jaffle_shop-shaped (9 models and seeds, 20 tests)",
            jaffle["median"]["build"],
            "<= 1.5x",
        ),
        _row(
            f"`dbt build`, generated ({shape['models']} models, {shape['tests']} tests)",
            generated["median"]["build"],
            "<= 1.5x",
        ),
        _row("no-op incremental (`dbt run -s order_events`)", jaffle["median"]["noop"], "<= 1.1x"),
        _row("100-row merge (`dbt run -s small`)", jaffle["median"]["merge"], "<= 1.1x"),
        "",
        "Mean time per node inside dbt (ours / dbt-duckdb, seconds):",
        "",
        "| project | " + " | ".join(sorted(jaffle["median"]["build"]["ours"]["nodes"])) + " |",
        "| --- | " + " | ".join("---" for _ in jaffle["median"]["build"]["ours"]["nodes"]) + " |",
    ]
    for label, figures in (("jaffle", jaffle), ("generated", generated)):
        nodes = figures["median"]["build"]
        cells = [
            f"{nodes['ours']['nodes'][k]:.3f} / {nodes['duckdb']['nodes'].get(k, 0):.3f}"
            for k in sorted(nodes["ours"]["nodes"])
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "Spark Connect round trips of one command (ours):", ""]
    lines += [
        "| command | round trips | by kind | most frequent (count, summed wall ms) |",
        "| --- | --- | --- | --- |",
    ]
    for label, figures in (("jaffle", jaffle), ("generated", generated)):
        for command, trips in figures["round_trips"].items():
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(trips["kinds"].items()))
            top = "; ".join(f"`{c['call']}` {c['count']} ({c['ms']:.0f})" for c in trips["callers"][:5])
            lines.append(f"| {label} `{' '.join(COMMANDS[command])}` | {trips['total']} | {kinds} | {top} |")
    return "\n".join([*lines, "", SECTION_END])


if __name__ == "__main__":
    sys.exit(main())
