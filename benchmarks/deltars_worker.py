"""delta-rs's side of the benchmark: one merge in a fresh process.

``python -m benchmarks.deltars_worker '<json>'`` merges the source parquet into the table
with ``deltalake.DeltaTable.merge`` (the same clauses as ours) and prints one JSON line:
seconds around the work (reading the source included, as for ours), delta-rs's metrics
and the process's peak resident memory. PySpark is never imported here.
"""

from __future__ import annotations

import json
import resource
import sys
import time

import pyarrow.parquet as pq
from deltalake import DeltaTable, WriterProperties

from benchmarks.workloads import ON, SOURCE, TARGET, workloads


def main() -> None:
    command = json.loads(sys.argv[1])
    if "dml" in command:
        _dml(command)
        return
    workload = {w.name: w for w in workloads(command["rows"])}[command["workload"]]
    started = time.monotonic()
    table = DeltaTable(command["table"])
    source = pq.read_table(command["source"])
    merger = table.merge(
        source,
        predicate=ON,
        source_alias=SOURCE,
        target_alias=TARGET,
        # Materialized source: delta-rs then prunes target files by the source's key range.
        streamed_exec=False,
        writer_properties=WriterProperties(compression="SNAPPY"),
    )
    metrics = workload.deltars(merger).execute()
    seconds = time.monotonic() - started
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": seconds, "metrics": metrics, "peak_bytes": peak_kib * 1024}, default=str))


def _dml(command: dict) -> None:
    """A DELETE or UPDATE (``benchmarks.merge_on_read``): ``{"dml": {kind, predicate, set?}}``."""
    dml = command["dml"]
    started = time.monotonic()
    table = DeltaTable(command["table"])
    properties = WriterProperties(compression="SNAPPY")
    if dml["kind"] == "delete":
        metrics = table.delete(dml["predicate"], writer_properties=properties)
    else:
        metrics = table.update(updates=dml["set"], predicate=dml["predicate"], writer_properties=properties)
    seconds = time.monotonic() - started
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": seconds, "metrics": metrics, "peak_bytes": peak_kib * 1024}, default=str))


if __name__ == "__main__":
    main()
