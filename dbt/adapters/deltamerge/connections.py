"""Profile and connection: dbt-spark's, plus an embedded Spark session and Spark Connect.

``method: session`` (the default) needs no host: the first connection builds one local
SparkSession with its Hive metastore (Derby) and warehouse under the profile's
``warehouse``, so tables survive between ``dbt`` invocations. ``method: connect`` makes the
process a Spark Connect client of the server at ``host`` (``sc://...``): no JVM starts
here. Either way the process has one session per target, shared by dbt's threads, and
every connection's cursor runs statements on it (``session.DeltaConnection``).
"""

from __future__ import annotations

import atexit
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from dbt.adapters.contracts.connection import Connection, ConnectionState
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.connections import SparkConnectionManager, SparkCredentials
from dbt_common.dataclass_schema import StrEnum
from dbt_common.exceptions import DbtDatabaseError, DbtRuntimeError

from dbt.adapters.deltamerge import remote
from dbt.adapters.deltamerge.metastore import in_use_message, metastore_holder
from dbt.adapters.deltamerge.spark_logging import java_option, quiet_python_loggers

logger = AdapterLogger("DeltaMerge")

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
    # Other Delta readers misread Spark's default INT96 timestamps.
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.hadoop.mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
    "spark.hadoop.parquet.summary.metadata.level": "NONE",
}


class ConnectionMethod(StrEnum):
    """dbt-spark's connection methods plus ``connect`` (Spark Connect)."""

    THRIFT = "thrift"
    HTTP = "http"
    ODBC = "odbc"
    SESSION = "session"
    CONNECT = "connect"


@dataclass
class DeltaMergeCredentials(SparkCredentials):
    """dbt-spark's credentials: ``method`` defaults to ``session``; ``connect``, ``warehouse`` added."""

    method: ConnectionMethod = ConnectionMethod.SESSION  # type: ignore[assignment]
    warehouse: str = DEFAULT_WAREHOUSE

    def __post_init__(self) -> None:
        if self.method == ConnectionMethod.SESSION and self.host is None:
            self.host = "localhost"  # dbt-spark requires a host; the embedded session has none
        if self.method == ConnectionMethod.CONNECT:
            remote.check_url(self.host)
        super().__post_init__()
        self.warehouse = os.path.abspath(os.path.expanduser(self.warehouse))

    @property
    def type(self) -> str:
        return "deltamerge"

    @property
    def unique_field(self) -> str:
        return self.warehouse if self.method == ConnectionMethod.SESSION else str(self.host)

    def _connection_keys(self) -> tuple[str, ...]:
        return ("method", "schema", "warehouse", "host", "port", "cluster", "endpoint")


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
    conf["spark.driver.extraJavaOptions"] = f"-Dderby.system.home={warehouse}"
    conf.update(overrides)
    return conf


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


def start_session(warehouse: str, overrides: dict[str, str]) -> Any:
    """The process's SparkSession for ``warehouse``, built on first use.

    Raises:
        DbtRuntimeError: a session for another warehouse is already running in this
            process (Spark's warehouse and metastore are fixed when the JVM starts).
    """
    from pyspark.sql import SparkSession

    # The process's one session, not getActiveSession(): that is per thread, and dbt runs
    # models on worker threads.
    if remote.has_sessions():
        raise DbtRuntimeError(_ONE_KIND)
    active = _EMBEDDED["session"]
    if active is not None:
        running = active.conf.get("spark.sql.warehouse.dir", "") or ""
        if os.path.abspath(running.removeprefix("file:")) != warehouse:
            raise DbtRuntimeError(
                f"A Spark session with warehouse {running} is already running in this process; "
                f"the profile asks for {warehouse}. Use one warehouse per process."
            )
        return active
    holder = metastore_holder(warehouse)
    if holder is not None:
        from dbt.adapters.deltamerge.local_server import status

        server = status(warehouse)
        url = server.url if server is not None and server.pid == holder else None
        raise DbtRuntimeError(in_use_message(warehouse, holder, url))
    os.makedirs(warehouse, exist_ok=True)
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
    logger.debug(f"Starting the embedded Spark session, warehouse {warehouse}")
    session = builder.getOrCreate()
    _EMBEDDED["session"] = session
    # Exiting with the JVM still up aborts the process (exit 134) after dbt finished.
    atexit.register(_stop)
    return session


_EMBEDDED: dict[str, Any] = {"session": None}
_ONE_KIND = (
    "This process already runs a Spark session of the other kind: pyspark cannot mix an embedded "
    "session (`method: session`) and Spark Connect (`method: connect`) in one process."
)


def _stop() -> None:
    session, _EMBEDDED["session"] = _EMBEDDED["session"], None
    if session is not None:
        session.stop()


def session_of(connection: Connection) -> Any:
    """The Spark session (embedded or Spark Connect) an open dbt connection runs on."""
    handle = getattr(connection.handle, "handle", None)
    session = getattr(handle, "spark", None)
    if session is None:
        raise DbtRuntimeError(
            "dbt-deltamerge Delta writes need `method: session` or `method: connect` in the profile."
        )
    return session


class DeltaMergeConnectionManager(SparkConnectionManager):
    """dbt-spark's connection manager, with the process's session for ``session`` and ``connect``."""

    TYPE = "deltamerge"

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        from dbt.adapters.spark.session import SessionConnectionWrapper

        from dbt.adapters.deltamerge.session import DeltaConnection

        creds = connection.credentials
        if not isinstance(creds, DeltaMergeCredentials) or creds.method not in (
            ConnectionMethod.SESSION,
            ConnectionMethod.CONNECT,
        ):
            return super().open(connection)
        if connection.state == ConnectionState.OPEN:
            return connection
        overrides = dict(creds.server_side_parameters)
        quiet_python_loggers()
        if creds.method == ConnectionMethod.CONNECT:
            if _EMBEDDED["session"] is not None:
                raise DbtRuntimeError(_ONE_KIND)
            spark = remote.connect_session(str(creds.host), overrides)
        else:
            spark = start_session(creds.warehouse, overrides)
            remote.apply_settings(spark, overrides)  # the session may predate this profile
        # Statements writing Delta-bound tables must reach the engine, not Spark's INSERT.
        connection.handle = SessionConnectionWrapper(DeltaConnection(spark))
        connection.state = ConnectionState.OPEN
        return connection

    @contextmanager
    def exception_handler(self, sql: str) -> Iterator[None]:
        """Spark's errors as dbt's database errors, dbt's own errors unchanged.

        dbt-spark's handler re-raises an exception without ``args`` as it is, which is what
        PySpark's analysis and parse errors are: a hook or ``run_query`` failing on Spark then
        ended dbt with a raw PySpark traceback instead of a database error.
        """
        from pyspark.errors import PySparkException

        try:
            yield
        except DbtRuntimeError:
            raise
        except PySparkException as exc:
            logger.debug(f"Error while running:\n{sql}")
            raise DbtDatabaseError(str(exc).strip()) from exc
        except Exception as exc:
            logger.debug(f"Error while running:\n{sql}")
            raise DbtRuntimeError(str(exc)) from exc
