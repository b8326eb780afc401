"""delta-rs's side of the OPTIMIZE benchmark: one compaction or Z-order in a fresh process.

``python -m benchmarks.optimize_worker '<json>'`` runs ``optimize.compact()`` or
``optimize.z_order(columns)`` with the given target size and prints one JSON line: seconds
around the work (opening the table included, as for ours) and delta-rs's metrics.
"""

from __future__ import annotations

import json
import sys
import time

from deltalake import DeltaTable, WriterProperties


def main() -> None:
    command = json.loads(sys.argv[1])
    started = time.monotonic()
    table = DeltaTable(command["table"])
    properties = WriterProperties(compression="SNAPPY")
    if command["kind"] == "zorder":
        metrics = table.optimize.z_order(
            command["columns"], target_size=command["target"], writer_properties=properties
        )
    else:
        metrics = table.optimize.compact(target_size=command["target"], writer_properties=properties)
    seconds = time.monotonic() - started
    print(json.dumps({"seconds": seconds, "metrics": metrics}, default=str))


if __name__ == "__main__":
    main()
