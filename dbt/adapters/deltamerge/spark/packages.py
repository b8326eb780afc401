"""One Ivy resolution at a time: Spark's ``spark.jars.packages`` across processes.

A Spark JVM started with ``spark.jars.packages`` (the S3A connector, Delta's jars, a profile's
own) resolves them with Ivy into one cache every process of the user shares (``~/.ivy2.5.2``, or
``spark.jars.ivy``). Ivy is not safe for two resolutions at once: measured here, two sessions
starting together on an empty cache both failed (``download failed: ...bundle.jar``, then
pyspark's bare ``JAVA_GATEWAY_EXITED``), and so did two pytest workers in CI. So each start that
resolves packages holds an exclusive lock on a file in that cache until its JVM is up (the warm
server's supervisor takes it for each JVM it starts, renewals too); a start without packages
takes no lock.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

LOCK_FILE = ".deltamerge-resolve.lock"
# Spark 4's default Ivy folder (``SparkSubmitUtils``: ``~/.ivy2.5.2``).
DEFAULT_IVY = "~/.ivy2.5.2"


def ivy_folder(conf: Mapping[str, str]) -> Path:
    """The Ivy folder the JVM started with ``conf`` resolves into.

    >>> str(ivy_folder({"spark.jars.ivy": "/c/ivy"}))
    '/c/ivy'
    >>> ivy_folder({}).name
    '.ivy2.5.2'
    """
    return Path(os.path.expanduser(conf.get("spark.jars.ivy") or DEFAULT_IVY))


def lock_path(conf: Mapping[str, str]) -> str | None:
    """The lock file a JVM started with ``conf`` holds while it resolves its packages (created with
    its folder), or None: no packages to resolve."""
    if not conf.get("spark.jars.packages"):
        return None
    folder = ivy_folder(conf)
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder / LOCK_FILE)


@contextmanager
def resolving(conf: Mapping[str, str]) -> Iterator[None]:
    """Hold the Ivy cache's lock while a JVM with ``conf`` starts (no lock without packages)."""
    path = lock_path(conf)
    if path is None:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
