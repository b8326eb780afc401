"""The README's main job: run the example project, then read its tables with delta-rs.

Seeds, a run, then a build of the second batch (incremental merges, then the tests) on the
profile's default target,
the warehouse's warm local Spark server (``method: server``): the first demo starts it (as a
first ``dbt`` command would), a second demo finds it warm. Then every table's Delta history as
an independent reader (delta-rs) sees it. ``--target local`` runs it on an embedded session.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pyarrow as pa
from dbt.cli.main import dbtRunner
from deltalake import DeltaTable

HERE = Path(__file__).resolve().parent
WAREHOUSE = HERE / "warehouse"


TARGET = sys.argv[sys.argv.index("--target") + 1] if "--target" in sys.argv else "server"


def dbt(*args: str) -> None:
    print(f"\n$ dbt {' '.join(args)}", flush=True)
    started = time.monotonic()
    result = dbtRunner().invoke(
        [*args, "--project-dir", str(HERE), "--profiles-dir", str(HERE), "--target", TARGET]
    )
    if not result.success:
        sys.exit(f"dbt {' '.join(args)} failed")
    print(f"(dbt {args[0]}: {time.monotonic() - started:.1f} s)", flush=True)


def show_history(path: Path) -> None:
    table = DeltaTable(str(path))
    print(f"\n{path.name}: Delta version {table.version()}, {len(table.to_pyarrow_table())} rows")
    for entry in reversed(table.history()):
        metrics = {
            k: v
            for k, v in entry.get("operationMetrics", {}).items()
            if v not in ("0", 0) and not k.endswith("TimeMs")
        }
        print(f"  v{entry['version']}  {entry['operation']:<34} {json.dumps(metrics)}")


def main() -> None:
    os.chdir(HERE)  # where the demo runs; the profile's ./warehouse is relative to this project
    # A fresh start that keeps a running server (and its metastore): the schema and its folders go.
    dbt("run-operation", "reset_schema")
    shutil.rmtree(WAREHOUSE / "shop.db", ignore_errors=True)
    dbt("seed")
    dbt("run")
    os.environ["SHOP_BATCH"] = "2"  # the second batch arrives: new orders, changed ones
    dbt("build", "--exclude", "resource_type:seed")  # orders: MERGE of new and changed orders; the tests
    print("\n=== Delta history, read with deltalake (delta-rs) ===")
    for path in sorted((WAREHOUSE / "shop.db").iterdir()):
        if (path / "_delta_log").is_dir():
            show_history(path)
    show_changes(WAREHOUSE / "shop.db" / "orders")
    if TARGET == "server":
        print(
            "\nThe warm Spark server keeps running for the next dbt command (it stops after 30 idle "
            "minutes; `.venv/bin/deltamerge-server stop --warehouse examples/shop/warehouse` stops it now)."
        )


def show_changes(path: Path) -> None:
    feed = pa.table(DeltaTable(str(path)).load_cdf(starting_version=1).read_all())
    print(f"\n=== {path.name}: change data feed of the merge (version 1), read with deltalake ===")
    for row in sorted(feed.to_pylist(), key=lambda r: (r["order_id"], r["_change_type"])):
        print(f"  order {row['order_id']:>3}  {row['_change_type']:<17} status={row['status']}")


if __name__ == "__main__":
    main()
