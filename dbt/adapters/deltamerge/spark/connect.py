"""Spark Connect sessions (``method: connect``): reaching the server, its version, the client's settings.

The dbt process is a Spark Connect client: it starts no JVM. It still writes the Delta log
itself, so it must reach the tables' storage at the paths the server writes to (an object
store, or a shared file system). Spark's static settings (master, warehouse, catalog) belong
to the server; the client sets the session settings the engine needs.
"""

from __future__ import annotations

import atexit
import socket
from typing import Any, cast
from urllib.parse import urlsplit

from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.deltamerge.spark.cancel import RunningJobs
from dbt.adapters.deltamerge.spark.committer import STARTUP_ONLY
from dbt.adapters.deltamerge.spark.process import PROCESS
from dbt.adapters.deltamerge.spark.progress import LongOperations

logger = AdapterLogger("DeltaMerge")

DEFAULT_PORT = 15002
SESSION_PARAMETER = "/;session_id="
REACH_TIMEOUT_SECONDS = 5.0

# Session settings every Connect session gets (a profile's server_side_parameters win).
# Hadoop keys go in unprefixed: a session's SQL settings reach the Hadoop configuration of its writes.
CONNECT_SETTINGS = {
    # Other Delta readers misread Spark's default INT96 timestamps.
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # A union of one-task reads stays one task each (OPTIMIZE's bins); Spark 4 merges them into one.
    "spark.sql.unionOutputPartitioning": "false",
    "mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
    "parquet.summary.metadata.level": "NONE",
    # An error's message, not the server's JVM stack trace, goes to dbt (the server logs it).
    "spark.sql.connect.serverStacktrace.enabled": "false",
    "spark.sql.pyspark.jvmStacktrace.enabled": "false",
}


def close_sessions() -> None:
    """End this process's Connect sessions (their server-side state is released)."""
    with PROCESS.connect_lock:
        sessions = [s for s in PROCESS.connect_sessions.values() if id(s) not in PROCESS.shared_sessions]
        PROCESS.connect_sessions.clear()
        PROCESS.applied_settings.clear()
    for session in sessions:
        try:
            session.stop()
        except Exception as error:  # the server may be gone already; nothing is left to release
            logger.debug(f"Spark Connect: closing a session failed: {error}")


def has_sessions() -> bool:
    """Whether this process opened a Spark Connect session (it cannot then start an embedded one)."""
    return bool(PROCESS.connect_sessions)


def check_url(url: str | None) -> tuple[str, int]:
    """The host and port of a Spark Connect URL, or a profile error saying what is wrong.

    >>> check_url("sc://spark.internal:15003/;token=abc;use_ssl=true")
    ('spark.internal', 15003)
    >>> check_url("sc://localhost")
    ('localhost', 15002)
    """
    if not url or not url.startswith("sc://"):
        raise DbtRuntimeError(
            f"`method: connect` needs `host` to be a Spark Connect URL like sc://host:15002; got {url!r}"
        )
    parts = urlsplit(url.split(";", 1)[0])
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError as error:
        raise DbtRuntimeError(f"`host` {url!r}: {error}") from error
    if not parts.hostname:
        raise DbtRuntimeError(f"`host` {url!r} names no server (sc://host:port)")
    return parts.hostname, port


def connect_session(
    url: str,
    overrides: dict[str, str],
    preset: dict[str, str] | None = None,
    shared: bool = False,
    retries: list[Any] | None = None,
) -> Any:
    """The process's Spark Connect session for ``url``, opened on first use.

    ``preset``: settings the server started with (a local server this package started): a
    session has them already, so none of them costs a round trip. ``shared``: other processes
    use the same server session (``url`` names it): this process does not release it at exit
    (its checkpoints are released as its DataFrames go; the session stays for the next command).
    ``retries``: the client's retry policies, instead of pyspark's (minutes, for a remote cluster).

    Raises:
        DbtRuntimeError: the server cannot be reached (within seconds, naming ``url``), or
            runs another Spark minor version than this client (naming both).
    """
    with PROCESS.connect_lock:
        session = PROCESS.connect_sessions.get(url)
        if session is None:
            session = _open(url, overrides, preset or {}, retries)
            if not PROCESS.connect_sessions:
                atexit.register(close_sessions)
            PROCESS.connect_sessions[url] = session
            if shared:
                PROCESS.shared_sessions.add(id(session))
        apply_settings(session, overrides)
        return session


def _open(url: str, overrides: dict[str, str], preset: dict[str, str], retries: list[Any] | None) -> Any:
    host, port = check_url(url)
    try:
        socket.create_connection((host, port), timeout=REACH_TIMEOUT_SECONDS).close()
    except OSError as error:
        raise DbtRuntimeError(
            f"Cannot reach the Spark Connect server at {url} ({error.strerror or error}). "
            "Start it (for a local one: `deltamerge-server start`) or fix `host` in the profile."
        ) from None
    import pyspark

    logger.debug(f"Opening a Spark Connect session at {url}")
    session = _client_session(url, retries)
    try:
        server_version = session.version
    except Exception as error:
        # A shared session the server closed (it timed out): this process opens its own.
        if SESSION_PARAMETER not in url or "SESSION_CLOSED" not in str(error):
            raise
        logger.debug(f"Spark Connect: the shared session at {url} was closed; opening a new one")
        session = _client_session(url.split(SESSION_PARAMETER, 1)[0], retries)
        server_version = session.version
    check_versions(client=pyspark.__version__, server=server_version, url=url)
    # A server's Hadoop settings are its spark.hadoop.* ones; a session sets them unprefixed.
    unprefixed = {key.removeprefix("spark.hadoop."): value for key, value in preset.items()}
    PROCESS.applied_settings[id(session)] = unprefixed
    apply_settings(session, {**CONNECT_SETTINGS, **overrides})
    return session


def _client_session(url: str, retries: list[Any] | None) -> Any:
    """A new Connect session with this package's retry policies and progress handlers: long
    operations said in dbt's log, running jobs tracked for a Ctrl-C (``spark/cancel.py``)."""
    from pyspark.sql import SparkSession

    # Through the generic builder: it marks the process as a Connect client, which is what
    # makes pyspark.sql.functions build Connect columns (one process cannot mix both kinds).
    session = SparkSession.builder.remote(url).create()
    if retries is not None:
        session.client.set_retry_policies(retries)
    jobs = RunningJobs(session)
    PROCESS.running_jobs[id(session)] = jobs
    for handler in (LongOperations(logger.info), jobs):
        session.client.register_progress_handler(cast(Any, handler))
    return session


def check_versions(*, client: str, server: str, url: str) -> None:
    """Refuse a server of another Spark major.minor version than the client's pyspark.

    >>> check_versions(client="4.2.0", server="4.2.1", url="sc://h")
    >>> try:
    ...     check_versions(client="4.2.0", server="3.5.4", url="sc://h")
    ... except DbtRuntimeError as error:
    ...     print(error.msg)  # doctest: +ELLIPSIS
    The Spark Connect server at sc://h runs Spark 3.5.4; this dbt process has pyspark 4.2.0. ...
    """
    if client.split(".")[:2] != server.split(".")[:2]:
        raise DbtRuntimeError(
            f"The Spark Connect server at {url} runs Spark {server}; this dbt process has pyspark {client}. "
            f"Use a server of Spark {'.'.join(client.split('.')[:2])}.x, or install the matching pyspark."
        )


def apply_settings(session: Any, settings: dict[str, str]) -> None:
    """Set ``settings`` on a running session; static ones (fixed when Spark started) are skipped,
    and so are those naming classes of a jar Spark may not have (``committer.STARTUP_ONLY``).

    A profile's ``server_side_parameters`` thus apply to every connection's session, as
    dbt-spark's own session cursor applies them; settings this process already set on
    ``session`` are skipped.
    """
    from pyspark.errors import PySparkException

    applied = PROCESS.applied_settings.setdefault(id(session), {})
    for key, value in settings.items():
        if applied.get(key) == value or key in STARTUP_ONLY:
            continue
        applied[key] = value
        try:
            if session.conf.get(key, None) != value:
                session.conf.set(key, value)
        except PySparkException as error:
            if str(error.getCondition() or "").startswith("INVALID_CONF_VALUE"):
                del applied[key]  # a value Spark refuses (a pattern that does not compile): said, not skipped
                raise DbtRuntimeError(
                    f"The profile's server_side_parameters set {key} to {value!r}, which Spark refuses: "
                    f"{str(error).splitlines()[0]} Nothing was run."
                ) from error
            # Static settings (spark.master, the warehouse, ...) belong to whoever started Spark.
            logger.debug(f"Not setting {key} on the running session: {str(error).splitlines()[0]}")
