"""``deltamerge-server start|stop|status``: a warehouse's warm local Spark Connect server by hand.

``method: server`` profiles start and stop their server by themselves; these commands show it,
stop it, or start one that runs until stopped (``--idle-minutes`` to stop it when unused), for
``method: connect`` profiles pointing at ``sc://localhost:<port>``.
"""

from __future__ import annotations

import argparse
import os
import sys

from dbt.adapters.deltamerge.common.store_options import effective_options, is_object_uri
from dbt.adapters.deltamerge.spark import server
from dbt.adapters.deltamerge.spark.conf import (
    DEFAULT_WAREHOUSE,
    object_store_conf,
    warehouse_conf,
    warehouse_home,
)
from dbt.adapters.deltamerge.spark.warm import DEFAULT_WARMUP_ROUNDS


def main(argv: list[str] | None = None) -> int:
    """The ``deltamerge-server`` command; its exit code (``status``: 1 when none runs)."""
    parser = argparse.ArgumentParser(prog="deltamerge-server", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument(
        "--warehouse",
        default=DEFAULT_WAREHOUSE,
        help="the profile's warehouse (folder or URI)",
    )
    parser.add_argument("--port", type=int, default=server.DEFAULT_PORT)
    parser.add_argument("--master", default="local[*]", help="Spark master (default: local[*])")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting")
    parser.add_argument(
        "--idle-minutes", type=float, default=0.0, help="stop after this long unused (default: never)"
    )
    parser.add_argument("--wait", action="store_true", help="stop: once no dbt command uses the server")
    parser.add_argument("--force", action="store_true", help="stop: now, failing the commands using it")
    parser.add_argument(
        "--warmup-rounds", type=int, default=DEFAULT_WARMUP_ROUNDS,
        help=f"warm-up rounds between commands after the start (default {DEFAULT_WARMUP_ROUNDS}; 0: none)",
    )  # fmt: skip
    parser.add_argument(
        "--renew-after", type=int, default=server.RENEW_AFTER_COMMANDS,
        help="replace the JVM, once idle, after this many commands: the Hive metastore keeps memory of "
        f"each (default {server.RENEW_AFTER_COMMANDS}; 0: never)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    on_store = is_object_uri(args.warehouse)
    local = os.path.abspath(os.path.expanduser(args.warehouse))
    warehouse = warehouse_home(args.warehouse, os.environ) if on_store else local
    if on_store:  # tables on the store: Spark's S3A connector and the warehouse's folder there
        store = object_store_conf(effective_options(os.environ, {}))
        args.conf = [f"{k}={v}" for k, v in {**store, **warehouse_conf(args.warehouse)}.items()] + args.conf
    try:
        return _act(args, warehouse)
    except server.ServerError as error:
        print(error, file=sys.stderr)
        return 1


def _act(args: argparse.Namespace, warehouse: str) -> int:
    if args.action == "start":
        conf = dict(item.split("=", 1) for item in args.conf)
        state = server.start(
            warehouse, args.port, args.master, conf, args.idle_minutes,
            warmup_rounds=args.warmup_rounds, renew_after=args.renew_after,
        )  # fmt: skip
        print(f"Spark Connect server for {warehouse} at {state.url} (pid {state.pid}, log {state.log})")
        print(f"Profile: method: server, warehouse: {warehouse}  (or method: connect, host: {state.url})")
        return 0
    if args.action == "stop":
        running = server.status(warehouse)
        if running is not None and not args.force:
            users = server.hold_clients(warehouse, wait=args.wait, say=print)
            if users:
                print(
                    f"The server at {running.url} is in use by dbt commands ({users}); not stopped. "
                    "`--wait` stops it once they finish, `--force` now (they fail).",
                    file=sys.stderr,
                )
                return 1
        stopped = server.stop(warehouse)
        orphan = server.stop_orphan(warehouse) if stopped is None else None
        if orphan is not None:
            print(f"Stopped a server JVM that ran without its supervisor (pid {orphan})")
            return 0
        stopped_line = f"Stopped the server at {stopped.url} (pid {stopped.pid})" if stopped else ""
        print(stopped_line or "No server was running")
        return 0
    running = server.status(warehouse)
    if running is None:
        print(f"No Spark Connect server runs for {warehouse}")
        return 1
    from dbt.adapters.deltamerge.spark.warmup import progress

    warming = progress(warehouse, running.pid)
    print(server.describe(running) + (f"; {warming}" if warming else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
