"""S3A's magic committer for the local Spark: data files uploaded at their final keys, never renamed.

Spark's default file-output committer writes each task's file under ``_temporary/`` and renames it
into place at commit; on S3 a rename is a copy and a delete per file, with S3A's probes around each
step. Hadoop's S3A "magic" committer uploads each file as a multipart upload to its final key and
completes the uploads when Spark's job commits: no copy, and nothing visible before. Only the Delta
commit makes a file live in any case; what a failed write leaves is an orphan (or an uncompleted
upload, which the bucket's lifecycle rule or S3A's purge removes).

Spark binds to it through ``spark-hadoop-cloud`` (``PathOutputCommitProtocol`` and
``BindingParquetOutputCommitter``, 2 classes). That module is not published for Spark 4.2; its
4.1.2 build is used, checked to link against Spark 4.2.0 and Hadoop 3.5.0 (every member its classes
call exists with the same signature; ``tests/functional/test_object_store.py`` writes through it).
The jar (33 KB) is fetched from Maven Central once into the cache and checked against its SHA-1.
Where it cannot be fetched, Spark keeps its default committer (correct, with renames) and says so.
"""

from __future__ import annotations

import hashlib
import logging
import os
import urllib.request
from collections.abc import Mapping
from pathlib import Path

logger = logging.getLogger(__name__)

JAR = "spark-hadoop-cloud_2.13-4.1.2.jar"
URL = f"https://repo1.maven.org/maven2/org/apache/spark/spark-hadoop-cloud_2.13/4.1.2/{JAR}"
SHA1 = "4aa61bdd33f4e2b1fe348840559e4a0d8567bc33"
COMMIT_PROTOCOL = "org.apache.spark.internal.io.cloud.PathOutputCommitProtocol"
# Settings naming the jar's classes: set only when Spark starts with the jar (a running session
# or a cluster without it would fail every write), never on a running session.
STARTUP_ONLY = frozenset(
    ["spark.sql.sources.commitProtocolClass", "spark.sql.parquet.output.committer.class"]
)


def cache_dir(environment: Mapping[str, str]) -> Path:
    """Where downloads are kept: ``$DELTAMERGE_CACHE``, else ``$XDG_CACHE_HOME/dbt-deltamerge``
    (``~/.cache/dbt-deltamerge``).

    >>> str(cache_dir({"XDG_CACHE_HOME": "/c"}))
    '/c/dbt-deltamerge'
    """
    if environment.get("DELTAMERGE_CACHE"):
        return Path(environment["DELTAMERGE_CACHE"])
    return Path(environment.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dbt-deltamerge"


def committer_jar(environment: Mapping[str, str]) -> str | None:
    """The cached jar's path, fetched on first use; None (and a warning) when it cannot be had."""
    jar = cache_dir(environment) / "jars" / JAR
    if jar.exists():
        return str(jar)
    partial = jar.with_suffix(f".{os.getpid()}.part")
    try:
        jar.parent.mkdir(parents=True, exist_ok=True)
        with urllib.request.urlopen(URL, timeout=60) as answer:
            data = answer.read()
        digest = hashlib.sha1(data).hexdigest()
        if digest != SHA1:
            raise OSError(f"SHA-1 {digest}, expected {SHA1}")
        partial.write_bytes(data)
        partial.replace(jar)  # atomic: a concurrent fetch writes the same bytes
    except OSError as error:
        partial.unlink(missing_ok=True)
        logger.warning(
            "S3A's magic committer is not used (%s from %s: %s): Spark writes data files with its "
            "default committer, which renames (copies) each one on an object store",
            JAR,
            URL,
            error,
        )
        return None
    return str(jar)


def committer_conf(jar: str | None) -> dict[str, str]:
    """Spark's settings for the magic committer with ``jar`` on the classpath (none without it).
    Writes to a local disk keep Hadoop's file committer (the factory of their scheme).

    >>> conf = committer_conf("/c/x.jar")
    >>> conf["spark.jars"], conf["spark.hadoop.fs.s3a.committer.name"]
    ('/c/x.jar', 'magic')
    >>> committer_conf(None)
    {}
    """
    if jar is None:
        return {}
    return {
        "spark.jars": jar,
        "spark.sql.sources.commitProtocolClass": COMMIT_PROTOCOL,
        "spark.sql.parquet.output.committer.class": (
            "org.apache.spark.internal.io.cloud.BindingParquetOutputCommitter"
        ),
        "spark.hadoop.mapreduce.outputcommitter.factory.scheme.s3a": (
            "org.apache.hadoop.fs.s3a.commit.S3ACommitterFactory"
        ),
        "spark.hadoop.fs.s3a.committer.name": "magic",
        "spark.hadoop.fs.s3a.committer.magic.enabled": "true",
    }


def merged_settings(ours: Mapping[str, str], theirs: Mapping[str, str]) -> dict[str, str]:
    """``theirs`` (a profile's settings) over ``ours``, the jar lists joined, not replaced.

    >>> merged_settings({"spark.jars": "/a.jar", "x": "1"}, {"spark.jars": "/b.jar", "x": "2"})
    {'spark.jars': '/a.jar,/b.jar', 'x': '2'}
    """
    merged = {**ours, **theirs}
    for key in ("spark.jars", "spark.jars.packages"):
        if ours.get(key) and theirs.get(key) and ours[key] != theirs[key]:
            merged[key] = f"{ours[key]},{theirs[key]}"
    return merged
