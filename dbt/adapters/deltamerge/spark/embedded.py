"""The process's one embedded Spark session (``method: session``), started on first use.

Spark fixes its warehouse and metastore when the JVM starts, so the process has one session,
shared by dbt's threads; a second warehouse, or a Spark Connect session beside it, is refused.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import Any

from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.deltamerge.spark import connect
from dbt.adapters.deltamerge.spark.conf import session_conf
from dbt.adapters.deltamerge.spark.java import java_problem, java_version_problem
from dbt.adapters.deltamerge.spark.logs import java_option
from dbt.adapters.deltamerge.spark.metastore import claim_warehouse, in_use_message, metastore_holder
from dbt.adapters.deltamerge.spark.packages import resolving
from dbt.adapters.deltamerge.spark.process import PROCESS
from dbt.adapters.deltamerge.spark.view_text import prepare_metastore

logger = AdapterLogger("DeltaMerge")


def start_session(warehouse: str, overrides: dict[str, str]) -> Any:
    """The process's SparkSession for ``warehouse`` (the local folder of its metastore; the tables'
    folder is ``overrides``' ``spark.sql.warehouse.dir`` when it is on an object store), built on
    first use.

    Raises:
        DbtRuntimeError: a session for another warehouse is already running in this
            process (Spark's warehouse and metastore are fixed when the JVM starts).
    """
    from pyspark.sql import SparkSession

    # The process's one session, not getActiveSession(): that is per thread, and dbt runs
    # models on worker threads.
    if connect.has_sessions():
        raise DbtRuntimeError(ONE_KIND_MESSAGE)
    active = PROCESS.embedded
    if active is not None:
        running = active.conf.get("spark.sql.warehouse.dir", "") or ""
        wanted = overrides.get("spark.sql.warehouse.dir", warehouse)
        if running.rstrip("/") != wanted and os.path.abspath(running.removeprefix("file:")) != wanted:
            raise DbtRuntimeError(
                f"A Spark session with warehouse {running} is already running in this process; "
                f"the profile asks for {wanted}. Use one warehouse per process."
            )
        return active
    holder = metastore_holder(warehouse)
    if holder is not None:
        from dbt.adapters.deltamerge.spark.server import status

        server = status(warehouse)
        url = server.url if server is not None and holder in (server.pid, server.jvm_pid) else None
        raise DbtRuntimeError(in_use_message(warehouse, holder, url))
    os.makedirs(warehouse, exist_ok=True)
    if PROCESS.session_lock is None:  # however early another process comes, before any JVM
        PROCESS.session_lock, other = claim_warehouse(warehouse)
        if other is not None:
            raise DbtRuntimeError(in_use_message(warehouse, other))
    # Inherited from a parent process that used Spark Connect, this flag would make pyspark
    # refuse to start a classic session here; this process has opened none.
    os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
    # Python tasks (footer reads of CONVERT TO DELTA) must run in this interpreter, with this package.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = session_conf(warehouse, overrides)
    if "log4j" not in conf["spark.driver.extraJavaOptions"]:  # a profile's own log4j setting wins
        conf["spark.driver.extraJavaOptions"] += f" {java_option(warehouse)}"
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in conf.items():
        builder = builder.config(key, value)
    missing = java_problem()
    if missing is not None:
        _release_lock()
        raise DbtRuntimeError(missing)
    logger.debug(f"Starting the embedded Spark session, warehouse {warehouse}")
    try:
        with resolving(conf):  # Ivy resolves one process's packages at a time
            session = builder.getOrCreate()
    except Exception as error:  # the JVM did not start: a Java too old is said as such
        _release_lock()
        problem = java_version_problem()
        if problem is not None:
            raise DbtRuntimeError(problem) from error
        raise
    prepare_metastore(session)  # before dbt's threads read the metastore (spark/view_text.py)
    PROCESS.embedded = session
    # Exiting with the JVM still up aborts the process (exit 134) after dbt finished.
    atexit.register(_stop)
    return session


ONE_KIND_MESSAGE = (
    "This process already runs a Spark session of the other kind: pyspark cannot mix an embedded "
    "session (`method: session`) and Spark Connect (`method: connect`) in one process."
)


def running() -> bool:
    """Whether this process started its embedded session (it cannot then open a Spark Connect one)."""
    return PROCESS.embedded is not None


def _release_lock() -> None:
    descriptor, PROCESS.session_lock = PROCESS.session_lock, None
    if descriptor is not None:
        os.close(descriptor)


def _stop() -> None:
    session, PROCESS.embedded = PROCESS.embedded, None
    if session is not None:
        session.stop()
