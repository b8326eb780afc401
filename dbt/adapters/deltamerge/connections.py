"""Profile and connection: dbt-spark's, plus an embedded Spark session and Spark Connect.

``method: session`` (the default) needs no host: the first connection builds one local
SparkSession with its Hive metastore (Derby) and warehouse under the profile's
``warehouse``, so tables survive between ``dbt`` invocations. ``method: connect`` makes the
process a Spark Connect client of the server at ``host`` (``sc://...``): no JVM starts
here. ``method: server`` is a Spark Connect client of the warehouse's warm local server,
which the first command starts and which stops after ``server_idle_minutes`` unused
(``spark.warm``). Either way the process has one session per target, shared by dbt's
threads, and every connection's cursor runs statements on it (``cursor.DeltaConnection``).
The sessions themselves are ``spark.embedded`` and ``spark.connect``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Any, cast

from dbt.adapters.contracts.connection import Connection, ConnectionState
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.connections import SparkConnectionManager, SparkCredentials
from dbt_common.dataclass_schema import StrEnum, ValidationError
from dbt_common.exceptions import DbtDatabaseError, DbtRuntimeError

from dbt.adapters.deltamerge.common.config_values import unknown_keys
from dbt.adapters.deltamerge.common.store_options import (
    bucket_of,
    bucket_options,
    bucket_problems,
    bucket_session_conf,
    credential_environment,
    effective_options,
    is_object_uri,
    refused_scheme,
)
from dbt.adapters.deltamerge.invocation import current
from dbt.adapters.deltamerge.namespace import expose_package_namespace
from dbt.adapters.deltamerge.spark import connect, embedded, lifeline, server, warm
from dbt.adapters.deltamerge.spark.cancel import interrupt
from dbt.adapters.deltamerge.spark.committer import committer_conf, committer_jar, merged_settings
from dbt.adapters.deltamerge.spark.conf import (
    DEFAULT_WAREHOUSE,
    object_store_conf,
    warehouse_conf,
    warehouse_home,
)
from dbt.adapters.deltamerge.spark.logs import quiet_python_loggers
from dbt.adapters.deltamerge.spark.process import PROCESS, freeze_imports
from dbt.adapters.deltamerge.spark.warm import DEFAULT_IDLE_MINUTES, DEFAULT_WARMUP_ROUNDS

logger = AdapterLogger("DeltaMerge")


class ConnectionMethod(StrEnum):
    """dbt-spark's connection methods plus ``connect`` (Spark Connect) and ``server`` (a warm local one)."""

    THRIFT = "thrift"
    HTTP = "http"
    ODBC = "odbc"
    SESSION = "session"
    CONNECT = "connect"
    SERVER = "server"


@dataclass
class DeltaMergeCredentials(SparkCredentials):
    """dbt-spark's credentials: ``method`` defaults to ``session``; ``connect``, ``server``,
    ``warehouse``, ``server_idle_minutes`` and ``server_warmup_rounds`` added."""

    method: ConnectionMethod = ConnectionMethod.SESSION  # type: ignore[assignment]
    warehouse: str = DEFAULT_WAREHOUSE
    server_idle_minutes: float = DEFAULT_IDLE_MINUTES
    server_warmup_rounds: int = DEFAULT_WARMUP_ROUNDS
    # Object stores' endpoints and credentials, named as the clouds' environment variables
    # (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ...; they override the environment's). Set (even to {})
    # to give the local Spark (`session`, `server`) Hadoop's S3A connector.
    storage_options: dict[str, str] | None = None
    # A bucket's own endpoint and credentials, by ``s3://<bucket>`` (overlaying storage_options):
    # tables on a second account or endpoint. Spark gets them as session settings, not a command line.
    bucket_storage_options: dict[str, dict[str, str]] | None = None
    # Every model's ``table_format`` where its config sets none (``iceberg``: UniForm tables).
    table_format: str | None = None
    # Iceberg REST catalogs by name (``uri``, ``warehouse``, ``credential`` / ``token`` / ``scope``,
    # ...: the REST spec's client properties): a model whose ``database`` names one is a UniForm
    # table registered there (``catalog.schema.table``), kept current after each commit.
    iceberg_catalogs: dict[str, dict[str, str]] | None = None

    # dbt-databricks' name for the default ``database``: the Iceberg catalog every model is in.
    _ALIASES = {"catalog": "database"}

    @classmethod
    def validate(cls, data: Any) -> None:
        """dbt's check of the profile's types, with the field named (dbt's own text names only the
        value), and keys this profile does not know refused ("did you mean"): a misspelled
        ``warehous`` must not leave the default warehouse in use."""
        try:
            super().validate(data)
        except ValidationError as error:
            field = ".".join(str(part) for part in error.path)
            raise ValidationError(f"`{field}`: {error.message}" if field else error.message) from error
        if isinstance(data, dict):
            unknown = unknown_keys(data, {f.name for f in fields(cls)} | set(cls._ALIASES))
            if unknown:
                raise ValidationError("; ".join(unknown))

    def __post_init__(self) -> None:
        if not self.warehouse.strip():
            raise DbtRuntimeError(f"`warehouse` must be a folder path, got {self.warehouse!r}")
        if self.method in (ConnectionMethod.SESSION, ConnectionMethod.SERVER) and self.host is None:
            self.host = "localhost"  # dbt-spark requires a host; these have none to set
        if self.server_warmup_rounds < 0:
            raise DbtRuntimeError(
                f"`server_warmup_rounds` must be 0 (no warm-up) or more, got {self.server_warmup_rounds}"
            )
        if self.server_idle_minutes < 0:
            raise DbtRuntimeError(
                f"`server_idle_minutes` must be 0 (never stop) or more, got {self.server_idle_minutes}"
            )
        if self.method == ConnectionMethod.CONNECT:
            connect.check_url(self.host)
        database = self.database if self.database != self.schema else None
        self.database = None  # dbt-spark refuses a database other than the schema
        super().__post_init__()
        self.database = database
        catalogs = sorted(self.iceberg_catalogs or {})
        if database is not None and database not in catalogs:
            raise DbtRuntimeError(
                f"`database` (or `catalog`) is {database}: it must name an Iceberg REST catalog of "
                f"`iceberg_catalogs` (named: {', '.join(catalogs) or 'none'}); Spark's own catalog has "
                "two-part names"
            )
        problems = [
            f"iceberg_catalogs.{n}: `uri` is missing"
            for n in catalogs
            if not (self.iceberg_catalogs or {})[n].get("uri")
        ]
        if problems:
            raise DbtRuntimeError("; ".join(problems))
        problems = [p for k, v in (self.bucket_storage_options or {}).items() for p in bucket_problems(k, v)]
        if problems:
            raise DbtRuntimeError("; ".join(problems))
        refused = refused_scheme(self.warehouse)
        if refused is not None:
            raise DbtRuntimeError(f"`warehouse` is {self.warehouse}: {refused} is not supported")
        if is_object_uri(self.warehouse):
            # Tables on the store; the metastore, server state and logs in a local ``home``.
            self.warehouse = self.warehouse.rstrip("/")
            return
        # Relative to the dbt project's folder, not to where dbt runs (``--project-dir`` from elsewhere).
        self.warehouse = os.path.normpath(os.path.join(project_dir(), os.path.expanduser(self.warehouse)))

    @property
    def home(self) -> str:
        """The local folder of the warehouse's metastore, server state and logs: the warehouse
        itself, or for one on an object store a folder of this machine (``conf.warehouse_home``)."""
        return warehouse_home(self.warehouse, os.environ)

    @property
    def type(self) -> str:
        return "deltamerge"

    @property
    def unique_field(self) -> str:
        return self.warehouse if self.method != ConnectionMethod.CONNECT else str(self.host)

    def _connection_keys(self) -> tuple[str, ...]:
        return (
            "method",
            "database",
            "schema",
            "warehouse",
            "host",
            "port",
            "cluster",
            "endpoint",
            "server_idle_minutes",
            "server_warmup_rounds",
        )


def project_dir() -> str:
    """The dbt project's folder, which a relative ``warehouse`` is resolved against (the working
    directory when dbt's flags do not say: the adapter used as a library)."""
    try:
        from dbt.flags import get_flags

        folder = getattr(get_flags(), "PROJECT_DIR", None)
    except Exception:  # dbt's flags are not set
        folder = None
    return os.path.abspath(str(folder)) if folder else os.getcwd()


def session_of(connection: Connection) -> Any:
    """The Spark session (embedded or Spark Connect) an open dbt connection runs on."""
    handle = getattr(connection.handle, "handle", None)
    session = getattr(handle, "spark", None)
    if session is None:
        raise DbtRuntimeError(
            "dbt-deltamerge Delta writes need `method: session`, `server` or `connect` in the profile."
        )
    return session


# dbt commands that never open a connection: no server is started for them ahead of time.
_NO_QUERIES = {"parse", "list", "ls", "deps", "clean", "init", "serve"}


def _command_runs_queries() -> bool:
    """Whether this dbt command opens connections (False when it cannot be told)."""
    try:
        from dbt.flags import get_flags

        which = getattr(get_flags(), "WHICH", None)
    except Exception:  # dbt's flags are not set (the adapter used as a library)
        return False
    return isinstance(which, str) and which not in _NO_QUERIES


def store_settings(creds: DeltaMergeCredentials) -> dict[str, str]:
    """Object stores from the profile and the environment: the invocation's stores configured
    (``Invocation.stores``: what this dbt process reads and commits with), the credentials handed
    to Spark's JVM through the environment (before it starts), and Spark's S3A settings returned
    when the profile asks for them (``storage_options``), with S3A's magic committer for a Spark
    this process starts (``spark/committer.py``)."""
    options = effective_options(os.environ, creds.storage_options or {})
    current().stores.configure(options, own_buckets(creds, options))
    current().stores.catalogs.configure(creds.iceberg_catalogs or {})
    if (
        creds.storage_options is None
        and not creds.bucket_storage_options
        and not is_object_uri(creds.warehouse)
    ):
        return {}
    os.environ.update(credential_environment(options))
    settings = {**object_store_conf(options), **warehouse_conf(creds.warehouse)}
    if creds.method != ConnectionMethod.CONNECT:  # a cluster's committer is the cluster's own
        settings.update(committer_conf(committer_jar(os.environ)))
    return settings


def own_buckets(
    creds: DeltaMergeCredentials, shared: dict[str, str]
) -> dict[tuple[str, str], dict[str, str]]:
    """The options of each bucket the profile gives its own (``bucket_storage_options``)."""
    return {bucket_of(k): bucket_options(shared, v) for k, v in (creds.bucket_storage_options or {}).items()}


def bucket_settings(creds: DeltaMergeCredentials) -> dict[str, str]:
    """Session settings reaching each bucket of ``bucket_storage_options`` with its own options
    (Hadoop's ``fs.s3a.bucket.<bucket>.*``): set on the connection's running session, so its
    credentials are on no command line and in no environment of this process."""
    shared = effective_options(os.environ, creds.storage_options or {})
    settings: dict[str, str] = {}
    for (_, bucket), options in own_buckets(creds, shared).items():
        settings.update(bucket_session_conf(bucket, options))
    return settings


def _warm_session(warehouse: str, overrides: dict[str, str], idle_minutes: float, warmup_rounds: int) -> Any:
    """A Spark Connect session on the warehouse's warm local server, started if none runs; watched
    (``spark/lifeline.py``): once it is gone, this command's connections fail saying so."""
    lost = lifeline.lost()
    if lost is not None:  # a command whose server died does not start another one
        raise DbtRuntimeError(lost)
    try:
        state = warm.prepared_server(warehouse, overrides, idle_minutes, logger.info, warmup_rounds)
    except server.ServerError as error:
        raise DbtRuntimeError(str(error)) from None
    lifeline.watch(state)
    url = server.session_url(state, overrides)
    return connect.connect_session(
        url, overrides, preset=state.conf, shared=url != state.url, retries=lifeline.retry_policies()
    )


def prepare_process() -> None:
    """What this plugin changes in the dbt process, once, when dbt first makes its connection
    manager (not at import, which should change nothing): ``deltamerge.<macro>`` names our macros
    (``namespace.py``), and the collector stops walking the objects alive now, which live until exit
    (``spark/process.py``)."""
    if PROCESS.prepared_for_dbt:
        return
    PROCESS.prepared_for_dbt = True
    expose_package_namespace()
    freeze_imports("plugin")


class DeltaMergeConnectionManager(SparkConnectionManager):
    """dbt-spark's connection manager, with the process's session for ``session`` and ``connect``."""

    TYPE = "deltamerge"

    def __init__(self, profile: Any, mp_context: Any) -> None:
        """dbt-spark's manager; with ``method: server``, the server is looked for (and started if
        none runs) in the background from here on, while dbt parses the project."""
        prepare_process()
        lifeline.forget()  # a new invocation (dbt's Python API may run many in one process)
        super().__init__(profile, mp_context)
        creds = profile.credentials
        server_method = isinstance(creds, DeltaMergeCredentials) and creds.method == ConnectionMethod.SERVER
        if server_method and _command_runs_queries():
            params = {**store_settings(creds), **creds.server_side_parameters}
            warm.prepare(
                creds.home, params, creds.server_idle_minutes, logger.info, creds.server_warmup_rounds
            )

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        from dbt.adapters.deltamerge.cursor import DeltaConnection, DeltaConnectionWrapper

        creds = connection.credentials
        if not isinstance(creds, DeltaMergeCredentials) or creds.method not in (
            ConnectionMethod.SESSION,
            ConnectionMethod.CONNECT,
            ConnectionMethod.SERVER,
        ):
            return super().open(connection)
        if connection.state == ConnectionState.OPEN:
            return connection
        overrides = merged_settings(store_settings(creds), creds.server_side_parameters)
        quiet_python_loggers()
        if creds.method == ConnectionMethod.SERVER:
            if embedded.running():
                raise DbtRuntimeError(embedded.ONE_KIND_MESSAGE)
            spark = _warm_session(
                creds.home, overrides, creds.server_idle_minutes, creds.server_warmup_rounds
            )
        elif creds.method == ConnectionMethod.CONNECT:
            if embedded.running():
                raise DbtRuntimeError(embedded.ONE_KIND_MESSAGE)
            spark = connect.connect_session(str(creds.host), overrides)
        else:
            spark = embedded.start_session(creds.home, overrides)
            connect.apply_settings(spark, overrides)  # the session may predate this profile
        connect.apply_settings(spark, bucket_settings(creds))  # buckets with their own credentials
        freeze_imports("spark client")  # pyspark, pandas, grpc: they live until exit (spark/process.py)
        # Statements writing Delta-bound tables must reach the engine, not Spark's INSERT.
        connection.handle = DeltaConnectionWrapper(DeltaConnection(spark))
        connection.state = ConnectionState.OPEN
        return connection

    @classmethod
    def get_result_from_cursor(cls, cursor: Any, limit: int | None) -> Any:
        """A result as dbt's agate table, its rows and names in one Spark round trip
        (``DeltaConnectionWrapper``) on our sessions; dbt-spark's way on its other methods."""
        from dbt.adapters.deltamerge.cursor import DeltaConnectionWrapper

        if limit or not isinstance(cursor, DeltaConnectionWrapper):
            return super().get_result_from_cursor(cursor, limit)
        from dbt_common.clients.agate_helper import table_from_data_flat

        names, rows = cursor.names_and_rows()
        return table_from_data_flat(cls.process_results(names, rows), names)

    def cancel(self, connection: Connection) -> None:
        """Interrupt this process's Spark jobs (dbt cancels connections on Ctrl-C; ``spark/cancel.py``)."""
        spark = getattr(getattr(connection.handle, "handle", None), "spark", None)
        if spark is not None:
            interrupt(spark, PROCESS.running_jobs.get(id(spark)), self._thread_of(connection))

    def _thread_of(self, connection: Connection) -> threading.Thread | None:
        """The thread whose connection ``connection`` is (dbt keys them by (pid, thread ident))."""
        keys = [key for key, open_ in self.thread_connections.items() if open_ is connection]
        idents = {cast(tuple[int, int], key)[1] for key in keys}
        return next((t for t in threading.enumerate() if t.ident in idents), None)

    @contextmanager
    def exception_handler(self, sql: str) -> Iterator[None]:
        """Spark's errors as dbt's database errors, dbt's own errors unchanged; a lost warm
        server said in one line (``spark/lifeline.py``).

        dbt-spark's handler re-raises an exception without ``args`` as it is, which is what
        PySpark's analysis and parse errors are: a hook or ``run_query`` failing on Spark then
        ended dbt with a raw PySpark traceback instead of a database error.
        """
        from pyspark.errors import PySparkException

        try:
            yield
        except Exception as exc:
            lost = lifeline.lost(exc)
            if lost is not None and lost not in str(exc):
                raise DbtRuntimeError(lost) from exc
            if isinstance(exc, DbtRuntimeError):
                raise
            if isinstance(exc, PySparkException):
                logger.debug(f"Error while running:\n{sql}")
                raise DbtDatabaseError(str(exc).strip()) from exc
            logger.debug(f"Error while running:\n{sql}")
            raise DbtRuntimeError(str(exc)) from exc
