"""The Spark settings of the embedded session and the local server: warehouse, metastore, heap.

Shared by ``spark.embedded`` (the session in the dbt process) and ``spark.server`` (the local
Spark Connect server): both run a warehouse with the same defaults.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

from dbt.adapters.deltamerge.common.store_options import hadoop_conf, is_object_uri, split_uri

DEFAULT_WAREHOUSE = "./warehouse"


# Settings of the embedded session (and its heap, from driver_memory); a profile's
# server_side_parameters override them.
SESSION_DEFAULTS = {
    "spark.master": "local[*]",
    "spark.app.name": "dbt-deltamerge",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # Enough partitions that a shuffle of gigabytes sorts in memory; adaptive execution
    # coalesces small shuffles back to a few (measured in BENCHMARKS.md: 50M rows 3-31%
    # faster than with 4, 10M rows and small merges no slower, same files written).
    "spark.sql.shuffle.partitions": "64",
    "spark.sql.adaptive.enabled": "true",
    # Reads name the log's exact files: the driver looks them up on a local disk in milliseconds,
    # where a read of more than 32 files otherwise ran a Spark listing job (0.2-1.6 s a read).
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "4096",
    # Other Delta readers misread Spark's default INT96 timestamps.
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # A union of one-task reads stays one task each (OPTIMIZE's bins); Spark 4 merges them into one.
    "spark.sql.unionOutputPartitioning": "false",
    "spark.hadoop.mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
    # Local files without Hadoop's checksum layer (no `.crc` beside each file). A write failing
    # on a full disk left its checksummed streams open (ChecksumFSOutputSummer's close stops at the
    # failed flush): the deleted files kept their space until the warm server stopped, so every
    # later write failed too (test_server_faults.py). Delta's log has its own integrity checks.
    "spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
    "spark.hadoop.parquet.summary.metadata.level": "NONE",
    # Spark sizes Tungsten's memory pages and broadcast blocks from the heap: with a heap of a
    # quarter of the machine, every hash aggregation of a small query took a 64 MB page and every
    # broadcast a 4 MB block (~0.5 GB of garbage per 100-row merge, much of it humongous for G1,
    # whose concurrent marking then ran after nearly every command). Measured on the warm server:
    # a small merge's commands reach their steady time in ~10 commands instead of ~40, with the
    # same 10M-row merge times (BENCHMARKS.md, "The local loop").
    "spark.buffer.pageSize": "1m",
    "spark.broadcast.blockSize": "1m",
    # Spark keeps the classes it compiles for a query (whole-stage code, projections) in a cache
    # keyed by their source, 100 by default. The example project's build alone compiles ~360
    # distinct ones, so on the warm server each command evicted the last one's and compiled its
    # own again (Janino, ~18 ms each, then the JIT on the new classes): a second `make demo`
    # compiled ~510 classes again with 100 entries, ~35 with room for them all (13.7 s -> 11.6 s,
    # one pair of runs; BENCHMARKS.md, "The local loop"). Entries are a few kilobytes each.
    "spark.sql.codegen.cache.maxEntries": "2000",
}

# The JVM's options besides the metastore's home. Spark's commands are batch jobs, where pause
# times do not matter: the throughput collector, whose young collections cost one pass over what
# survives, where G1's concurrent marking took most of a core after small commands; and room for
# Spark's ~200 MB of class metadata, which otherwise grows through a full collection at each step.
JVM_OPTIONS = "-XX:+UseParallelGC -XX:MetaspaceSize=256m"

# What a Spark Connect client sets on its session besides the above (``spark/connect.py``); the
# local server starts with them, so that its clients need not.
SERVER_SESSION_DEFAULTS = {
    # An error's message, not the server's JVM stack trace, goes to dbt (the server logs it).
    "spark.sql.connect.serverStacktrace.enabled": "false",
    "spark.sql.pyspark.jvmStacktrace.enabled": "false",
}


def warehouse_home(warehouse: str, environment: Mapping[str, str]) -> str:
    """The local folder of ``warehouse``'s metastore, server state, logs and locks.

    A local warehouse is its own home. A warehouse on an object store keeps its tables there
    (Spark's ``spark.sql.warehouse.dir``) and the rest on this machine, under
    ``$XDG_DATA_HOME/dbt-deltamerge/warehouses/`` (``~/.local/share`` by default), one folder per
    warehouse URI, shared by every project of this machine that names it, as one metastore.

    >>> warehouse_home("/w", {})
    '/w'
    >>> warehouse_home("s3://lake/dbt/", {"XDG_DATA_HOME": "/d"})
    '/d/dbt-deltamerge/warehouses/s3-lake-aefb41ace843'
    """
    if not is_object_uri(warehouse):
        return warehouse
    uri = warehouse.rstrip("/")
    scheme, bucket, _ = split_uri(uri)
    data_home = environment.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    digest = hashlib.sha256(uri.encode()).hexdigest()[:12]
    return os.path.join(data_home, "dbt-deltamerge", "warehouses", f"{scheme}-{bucket}-{digest}")


def warehouse_conf(warehouse: str) -> dict[str, str]:
    """Spark's settings for a warehouse on an object store (its tables' folder), else none.

    >>> warehouse_conf("s3://lake/dbt/"), warehouse_conf("/w")
    ({'spark.sql.warehouse.dir': 's3://lake/dbt'}, {})
    """
    return {"spark.sql.warehouse.dir": warehouse.rstrip("/")} if is_object_uri(warehouse) else {}


def java_argument(option: str) -> str:
    """One JVM option in ``extraJavaOptions``, quoted as Spark's launcher splits that setting
    (``CommandBuilderUtils.parseOptionString``): a warehouse path with spaces stays one option.

    >>> print(java_argument('-Dx=/a b/"c"'))
    "-Dx=/a b/\\"c\\""
    """
    return '"' + option.replace("\\", "\\\\").replace('"', '\\"') + '"'


def session_conf(warehouse: str, overrides: dict[str, str]) -> dict[str, str]:
    """Every Spark setting of the embedded session for ``warehouse``.

    >>> conf = session_conf("/w", {"spark.sql.shuffle.partitions": "2"})
    >>> conf["spark.sql.warehouse.dir"], conf["spark.sql.shuffle.partitions"]
    ('/w', '2')
    """
    conf = dict(SESSION_DEFAULTS)
    conf["spark.driver.memory"] = driver_memory(machine_memory())
    conf["spark.sql.warehouse.dir"] = warehouse
    conf["spark.hadoop.javax.jdo.option.ConnectionURL"] = (
        f"jdbc:derby:;databaseName={os.path.join(warehouse, 'metastore_db')};create=true"
    )
    conf["spark.driver.extraJavaOptions"] = (
        f"{java_argument('-Dderby.system.home=' + warehouse)} {JVM_OPTIONS}"
    )
    conf.update(overrides)
    return conf


# Hadoop's S3A connector for the Hadoop pyspark bundles (3.5.0), with the AWS SDK bundle it was
# released with (resolved by Ivy from Maven Central once, then from its cache, ~/.ivy2.5.2).
S3A_PACKAGES = "org.apache.hadoop:hadoop-aws:3.5.0"


def object_store_conf(options: dict[str, str]) -> dict[str, str]:
    """Spark's settings to reach object stores with ``options`` (``common.store_options``): the S3A
    connector's jars, its endpoint and region. Credentials are not settings: the JVM reads them from
    its environment (``store_options.credential_environment``).

    >>> conf = object_store_conf({"AWS_REGION": "eu-west-1"})
    >>> conf["spark.jars.packages"], conf["spark.hadoop.fs.s3a.endpoint.region"]
    ('org.apache.hadoop:hadoop-aws:3.5.0', 'eu-west-1')
    """
    return {"spark.jars.packages": S3A_PACKAGES, **hadoop_conf(options)}


def driver_memory(machine_bytes: int | None) -> str:
    """The embedded session's heap: a quarter of the machine's memory, at least Spark's 1g.

    A quarter is what the JVM itself takes by default; Spark's fixed 1g is too small for
    merges of tens of millions of rows (measured: a whole-table NOT MATCHED BY SOURCE delete
    of 50M rows ran out of it).

    >>> driver_memory(16 * 2**30), driver_memory(2 * 2**30), driver_memory(None)
    ('4096m', '1024m', '1024m')
    """
    quarter = (machine_bytes or 0) // 4 // 2**20
    return f"{max(quarter, 1024)}m"


def machine_memory() -> int | None:
    """Bytes of memory this process may use: the machine's, or its container's limit if lower."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not a POSIX system that reports it
        return None
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            limit = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if limit.isdigit():
            total = min(total, int(limit))
    return total
