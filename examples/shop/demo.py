"""The README's main job: run the example project, then read its tables with delta-rs.

Seeds, a run, then a build of the second batch (incremental merges, then the tests) on the
profile's default target,
the warehouse's warm local Spark server (``method: server``): the first demo starts it (as a
first ``dbt`` command would), a second demo finds it warm. Then every table's Delta history as
an independent reader (delta-rs) sees it. ``--target local`` runs it on an embedded session;
``--target s3`` with the warehouse on S3 (``SHOP_WAREHOUSE``, credentials in the ``AWS_*`` variables).
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
TARGET = sys.argv[sys.argv.index("--target") + 1] if "--target" in sys.argv else "server"
# The profile's warehouse: this folder's ./warehouse, or an object-store URI for the `s3` target.
LAKE = os.environ.get("SHOP_WAREHOUSE", "s3://my-lake/dbt")
WAREHOUSE = LAKE if TARGET == "s3" else str(HERE / "warehouse")
SCHEMA = f"{WAREHOUSE.rstrip('/')}/shop.db"


def dbt(*args: str) -> None:
    print(f"\n$ dbt {' '.join(args)}", flush=True)
    started = time.monotonic()
    result = dbtRunner().invoke(
        [*args, "--project-dir", str(HERE), "--profiles-dir", str(HERE), "--target", TARGET]
    )
    if not result.success:
        sys.exit(f"dbt {' '.join(args)} failed")
    print(f"(dbt {args[0]}: {time.monotonic() - started:.1f} s)", flush=True)


def tables() -> list[str]:
    """The project's seeds and models that are Delta tables, by location."""
    names = sorted(p.stem for folder in ("seeds", "models") for p in (HERE / folder).iterdir())
    return [f"{SCHEMA}/{name}" for name in names if DeltaTable.is_deltatable(f"{SCHEMA}/{name}")]


def show_history(path: str) -> None:
    table = DeltaTable(path)
    name = path.rsplit("/", 1)[1]
    print(f"\n{name}: Delta version {table.version()}, {len(table.to_pyarrow_table())} rows")
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
    if TARGET != "s3":
        shutil.rmtree(SCHEMA, ignore_errors=True)
    dbt("seed")
    dbt("run")
    os.environ["SHOP_BATCH"] = "2"  # the second batch arrives: new orders, changed ones
    dbt("build", "--exclude", "resource_type:seed")  # orders: MERGE of new and changed orders; the tests
    print("\n=== Delta history, read with deltalake (delta-rs) ===")
    for path in tables():
        show_history(path)
    show_changes(f"{SCHEMA}/orders")
    if TARGET in ("server", "s3"):
        where = WAREHOUSE if TARGET == "s3" else "examples/shop/warehouse"
        print(
            "\nThe warm Spark server keeps running for the next dbt command (it stops after 30 idle "
            f"minutes; `.venv/bin/deltamerge-server stop --warehouse {where}` stops it now)."
        )


def show_changes(path: str) -> None:
    feed = pa.table(DeltaTable(path).load_cdf(starting_version=1).read_all())
    print("\n=== orders: change data feed of the merge (version 1), read with deltalake ===")
    for row in sorted(feed.to_pylist(), key=lambda r: (r["order_id"], r["_change_type"])):
        print(f"  order {row['order_id']:>3}  {row['_change_type']:<17} status={row['status']}")


if __name__ == "__main__":
    main()
