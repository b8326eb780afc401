"""The warm server for weeks, compressed: a soak of real dbt commands against one server.

``python -m benchmarks.soak --commands 600 --kills 10`` copies the example project into a fresh
folder and runs ``--commands`` dbt commands (separate processes, as a user types them: runs,
seeds, tests, shows, builds, and every tenth a run and a show at once) against its one warm
server (``method: server``), sampling the server's JVM after each: resident memory, threads, open
files, and every 25 commands the metastore's live ``ObjectStore`` / JDO ``PersistenceManager``
objects (``jcmd GC.class_histogram``: a metastore connection each) and the heap in use after that
full collection. Every ``IDLE_EVERY`` commands the soak pauses ``IDLE_SECONDS``, as a user does:
that is when the supervisor renews the JVM once it served ``server.RENEW_AFTER_COMMANDS``
commands (``jvm`` in the samples counts the JVMs). Then ``--kills`` times: a
``dbt run`` whose server JVM is killed after a random delay; the command must end by itself, every
Delta table of the project must pass the validator (``tests/validator.py``), and the next run must
succeed on a new server. Writes ``benchmarks/soak.json`` and prints the curve (the figures for
BENCHMARKS.md, "The warm server over time").
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DBT = str(Path(sys.executable).with_name("dbt"))
SHOW = "select count(*) as n from {{ ref('orders') }}"
# One cycle of ten commands: what a day of editing runs, in proportion.
CYCLE: list[list[str]] = [
    ["run", "-s", "orders"],
    ["show", "--inline", SHOW],
    ["seed", "-s", "raw_orders"],
    ["test", "-s", "orders"],
    ["run", "-s", "customers", "customer_orders"],
    ["show", "-s", "daily_revenue"],
    ["build", "-s", "daily_revenue"],
    ["run", "-s", "orders"],  # with a show at the same time (``concurrent``)
    ["run"],
    ["test"],
]
HISTOGRAM_EVERY = 25
IDLE_EVERY, IDLE_SECONDS = 100, 30.0
CURVE = (
    "command",
    "jvm",
    "rss_mb",
    "threads",
    "open_files",
    "heap_used_mb",
    "ObjectStore",
    "JDOPersistenceManager",
)
METASTORE_CLASSES = ("org.apache.hadoop.hive.metastore.ObjectStore", "JDOPersistenceManager ")


def _project(folder: Path) -> Path:
    shutil.copytree(
        ROOT / "examples" / "shop", folder, ignore=shutil.ignore_patterns("warehouse", "target", "logs")
    )
    profile = (
        (folder / "profiles.yml").read_text().replace("server_idle_minutes: 30", "server_idle_minutes: 0")
    )
    (folder / "profiles.yml").write_text(profile)
    return folder


def _dbt(project: Path, args: list[str], batch: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [DBT, *args, "--profiles-dir", "."], cwd=project, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, "SHOP_BATCH": str(batch)},
    )  # fmt: skip


def _finish(process: subprocess.Popen[str], what: str) -> str:
    out = process.communicate(timeout=900)[0]
    if process.returncode != 0:
        raise SystemExit(f"dbt {what} failed:\n{out[-4000:]}")
    return out


def _state(project: Path) -> dict[str, Any]:
    return dict(json.loads((project / "warehouse" / ".deltamerge-server.json").read_text()))


def _jvm(pid: int) -> dict[str, int]:
    status = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
    )
    return {
        "rss_mb": int(status["VmRSS"].split()[0]) // 1024,
        "threads": int(status["Threads"]),
        "open_files": len(os.listdir(f"/proc/{pid}/fd")),
    }


def _metastore_objects(pid: int) -> dict[str, int]:
    done = subprocess.run(
        ["jcmd", str(pid), "GC.class_histogram"], capture_output=True, text=True, timeout=120
    )
    counts = {}
    for name in METASTORE_CLASSES:
        rows = [line.split() for line in done.stdout.splitlines() if name.strip() in line]
        counts[name.strip().rsplit(".", 1)[-1]] = sum(int(r[1]) for r in rows if len(r) > 3)
    # The histogram ran a full collection: what is in use now is what lives.
    heap = subprocess.run(["jcmd", str(pid), "GC.heap_info"], capture_output=True, text=True, timeout=120)
    used = re.findall(r"(?:PSYoungGen|ParOldGen|garbage-first heap)\s+total \d+K, used (\d+)K", heap.stdout)
    counts["heap_used_mb"] = sum(int(u) for u in used) // 1024 if used else -1
    return counts


def soak(project: Path, commands: int) -> list[dict[str, Any]]:
    samples: list[dict[str, Any]] = []
    jvms: list[int] = []
    for number in range(1, commands + 1):
        if number > 1 and (number - 1) % IDLE_EVERY == 0:
            time.sleep(IDLE_SECONDS)  # a user's pause: a renewal due happens now
        args = CYCLE[(number - 1) % len(CYCLE)]
        batch = 1 + (number // len(CYCLE)) % 2
        started = time.monotonic()
        running = [_dbt(project, args, batch)]
        if (number - 1) % len(CYCLE) == 7:
            running.append(_dbt(project, ["show", "--inline", SHOW], batch))
        for process in running:
            _finish(process, " ".join(args))
        sample: dict[str, Any] = {
            "command": number,
            "args": " ".join(args),
            "seconds": time.monotonic() - started,
        }
        jvm_pid = int(_state(project)["jvm_pid"])
        renewed = jvm_pid not in jvms
        jvms += [jvm_pid] if renewed else []
        sample.update(jvm=len(jvms), **_jvm(jvm_pid))
        if renewed or number % HISTOGRAM_EVERY == 0:
            sample.update(_metastore_objects(jvm_pid))
        samples.append(sample)
        print(json.dumps(sample), flush=True)
    return samples


def kills(project: Path, count: int, seed: int = 7) -> list[dict[str, Any]]:
    sys.path.insert(0, str(ROOT))
    from tests.validator import problems

    rng = random.Random(seed)
    results = []
    for attempt in range(count):
        _finish(_dbt(project, ["run", "-s", "orders"], 1), "run")  # a server runs
        jvm_pid = int(_state(project)["jvm_pid"])
        run = _dbt(project, ["run"], 2 - attempt % 2)
        delay = rng.uniform(0.5, 8.0)
        time.sleep(delay)
        os.kill(jvm_pid, signal.SIGKILL)
        killed = time.monotonic()
        out = run.communicate(timeout=900)[0]
        ended = time.monotonic() - killed
        schema = project / "warehouse" / "shop.db"
        found = {p.name: problems(str(p)) for p in sorted(schema.iterdir()) if (p / "_delta_log").is_dir()}
        unsound = {name: issues for name, issues in found.items() if issues}
        crashed = out.count("the local Spark server crashed (exit -9)")
        after = _dbt(project, ["run"], 1)
        after_out = after.communicate(timeout=900)[0]
        result = {
            "kill": attempt + 1, "after_seconds": round(delay, 1), "exit": run.returncode,
            "ended_seconds_after_kill": round(ended, 1), "models_told_crashed": crashed,
            "tables_checked": len(found), "unsound": unsound, "next_run_exit": after.returncode,
        }  # fmt: skip
        if run.returncode not in (0, 1):  # dbt's own failure outside the models: what it said
            result["output_tail"] = out[-3000:]
        print(json.dumps(result), flush=True)
        results.append(result)
        if unsound or after.returncode != 0:
            raise SystemExit(f"kill {attempt + 1}: {unsound or after_out[-4000:]}")
    return results


def summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
    def median(part: list[dict[str, Any]], key: str) -> float:
        return round(statistics.median(s[key] for s in part), 2)

    first, last = samples[: min(100, len(samples))], samples[-min(100, len(samples)) :]
    points = [s for s in samples if s["command"] == 1 or "heap_used_mb" in s]
    return {
        "commands": len(samples),
        "median_seconds_first_100": median(first, "seconds"),
        "median_seconds_last_100": median(last, "seconds"),
        "curve": [{k: s[k] for k in CURVE if k in s} for s in points],
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=600)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "soak.json"))
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="soak-") as folder:
        project = _project(Path(folder) / "shop")
        _finish(_dbt(project, ["seed"], 1), "seed")
        _finish(_dbt(project, ["run"], 1), "run")
        started = time.monotonic()
        try:
            samples = soak(project, options.commands)
            killed = kills(project, options.kills)
        finally:
            subprocess.run([str(Path(sys.executable).with_name("deltamerge-server")), "stop", "--force",
                            "--warehouse", str(project / "warehouse")], timeout=120)  # fmt: skip
    report = {"summary": summary(samples), "minutes": round((time.monotonic() - started) / 60, 1),
              "kills": killed, "samples": samples}  # fmt: skip
    Path(options.out).write_text(json.dumps(report, indent=1))
    print(json.dumps(report["summary"], indent=1))


if __name__ == "__main__":
    main()
