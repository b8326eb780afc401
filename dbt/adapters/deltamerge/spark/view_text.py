"""Views of any length in the embedded (Derby) metastore of the session and the warm server.

Hive's metastore schema keeps a view's text in ``TBLS.VIEW_ORIGINAL_TEXT`` and
``VIEW_EXPANDED_TEXT``, which Derby makes ``LONG VARCHAR``: at most ``LONG_VARCHAR`` characters.
Generated SQL passes that easily (dbt-spark's ``datediff``, unions of many sources, a binding view
over thousands of columns), and Spark then fails with Derby's "A truncation error was encountered
trying to shrink LONG VARCHAR". We own that metastore: before a statement that long runs (its view
text can be no longer than the statement), both columns are widened to ``CLOB`` once (add a
``CLOB`` column, copy, drop the old one, rename: Derby cannot change a column's type in place).
The decision is the statement's length, never an error's text (Derby words its errors in the JVM's
locale). The statements go through Spark's JDBC source in Spark's own JVM (Derby allows many
connections within the process holding the database; the warm server's JVM over Spark Connect
alike): with a local master only, where the tasks run in that JVM (a cluster's executors cannot
open the driver's Derby). Each step is taken from the catalog's current columns and their
types, so a widening that was interrupted, or that another client of the same server raced,
completes on the next try and a column already ``CLOB`` is never widened again; a marker table
says it is done. A metastore that is not an embedded Derby one (a cluster's) is left alone.

Between a step dropping a column and the next renaming its wide copy, the column is missing: a
metastore read then fails ("Unable to fetch table"). So the widening is done while no other
client can read the metastore: when the embedded session starts (``prepare_metastore``, before
dbt's threads get it) and when the warm server starts, before it is announced
(``prepare_server``). A file in the Derby database's folder, ``MARK``, says it is done without
a round trip (it goes with the folder: a new metastore has none). ``make_room`` stays the
fallback for a metastore neither prepared (a server started by an older version).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dbt.adapters.deltamerge.spark import daemon
from dbt.adapters.deltamerge.spark.process import PROCESS

LONG_VARCHAR = 32_700
COLUMNS = ("VIEW_ORIGINAL_TEXT", "VIEW_EXPANDED_TEXT")
MARKER = "DELTAMERGE_WIDE_VIEW_TEXT"
MARK = "deltamerge-wide-view-text"  # a file in the Derby database's folder once MARKER is there
METASTORE_URL = "spark.hadoop.javax.jdo.option.ConnectionURL"
_ATTEMPTS = 6


def make_room(spark: Any, statement: str) -> None:
    """Widen the embedded metastore's view text columns before ``statement`` runs, when it is long
    enough to define a view text they cannot hold (nothing for a shorter one: no round trip)."""
    if len(statement) > LONG_VARCHAR:
        widen_view_text(spark)


def widen_view_text(spark: Any) -> bool:
    """Widen the embedded metastore's view text columns to ``CLOB``; False when there was nothing to
    do (not an embedded Derby metastore, or widened already)."""
    setting = spark.conf.get(METASTORE_URL, "") or ""
    url, mark = derby_url(setting), mark_of(setting)
    if url is None or url in PROCESS.wide_view_text:
        return False
    if mark is not None and os.path.exists(mark):  # done: no round trip to the metastore
        PROCESS.wide_view_text.add(url)
        return False
    if not on_the_driver(str(spark.conf.get("spark.master", "") or "")):
        PROCESS.wide_view_text.add(url)  # a cluster's executors cannot open the driver's Derby
        return False
    with PROCESS.view_text_lock:  # one widening at a time in this process
        widened = _widen(spark, url)
    PROCESS.wide_view_text.add(url)
    if mark is not None:
        Path(mark).touch()
    return widened


def _widen(spark: Any, url: str) -> bool:
    for attempt in range(_ATTEMPTS):
        if MARKER in _names(spark, url, "SELECT TABLENAME AS name FROM SYS.SYSTABLES"):
            return False
        try:
            present = _tbls_columns(spark, url)
            if not any(c in present for c in (*COLUMNS, *(f"{c}_CLOB" for c in COLUMNS))):
                raise RuntimeError(f"The metastore at {url} has no table TBLS with a view's text yet")
            for column in COLUMNS:
                for step in widening_steps(column, _tbls_columns(spark, url)):
                    _run(spark, url, step)
            _run(spark, url, f'CREATE TABLE "APP"."{MARKER}" (WIDENED INT)')
            return True
        except Exception:  # another client of the server widening at once: read the state again
            if attempt == _ATTEMPTS - 1:
                raise
            time.sleep(0.2 * (attempt + 1))
    return False


def prepare_metastore(spark: Any) -> None:
    """Widen the view text columns of ``spark``'s embedded Derby metastore now, while nothing
    else reads it (a session just started): its tables are created first (``SHOW DATABASES``
    creates them all), nothing is done when ``MARK`` says it was done."""
    mark = mark_of(spark.conf.get(METASTORE_URL, "") or "")
    if mark is None or os.path.exists(mark) or not on_the_driver(str(spark.conf.get("spark.master", ""))):
        return
    spark.sql("SHOW DATABASES").collect()
    widen_view_text(spark)


def awaited_mark(setting: str, master: str) -> str | None:
    """``MARK``'s path when a warm server starting on the metastore of this ``ConnectionURL``
    setting is to be announced only once it is there (``prepare_server``); None when it is there
    already, the metastore is not an embedded Derby one, or ``master`` is a cluster's."""
    mark = mark_of(setting)
    return None if mark is None or os.path.exists(mark) or not on_the_driver(master) else mark


def on_the_driver(master: str) -> bool:
    """Whether Spark's tasks run in the driver's JVM (``local``, ``local[*]``...), where Spark's
    JDBC source can open the driver's embedded Derby database; a cluster's executors cannot (Derby
    allows one JVM), so there the view text is left as it is.

    >>> on_the_driver("local[2]"), on_the_driver("spark://127.0.0.1:7077")
    (True, False)
    """
    return master.startswith("local")


def prepare_server(port: int, starting: Callable[[], bool], deadline: float) -> None:
    """Widen the metastore's view text columns of a warm server that is starting, before it is
    announced (its supervisor waits for ``MARK``): once it listens on ``port``,
    ``prepare_metastore`` over a Spark Connect session of its own, ended right after (it is not
    the process's session: DataFrames of one session are unknown to another).

    Raises:
        RuntimeError: the server stopped (``starting()`` false) or did not listen by ``deadline``.
    """
    from pyspark.sql import SparkSession

    while not daemon.port_open(port):
        if not starting() or time.monotonic() > deadline:
            raise RuntimeError("the Spark Connect server did not start")
        time.sleep(daemon.START_POLL_SECONDS)
    session = SparkSession.builder.remote(f"sc://localhost:{port}").create()
    try:
        prepare_metastore(session)
    finally:
        session.stop()


def mark_of(setting: str) -> str | None:
    """``MARK``'s path for the metastore of a ``ConnectionURL`` setting, or None (not an embedded
    Derby database named by an absolute path).

    >>> mark_of("jdbc:derby:;databaseName=/w/metastore_db;create=true")
    '/w/metastore_db/deltamerge-wide-view-text'
    >>> mark_of("jdbc:derby:/w/m;create=true"), mark_of("jdbc:derby:;databaseName=metastore_db")
    ('/w/m/deltamerge-wide-view-text', None)
    """
    url = derby_url(setting)
    if url is None:
        return None
    first, *attributes = url.removeprefix("jdbc:derby:").split(";")
    named = [a.split("=", 1)[1] for a in attributes if a.lower().startswith("databasename=")]
    folder = named[-1] if named else first
    return os.path.join(folder, MARK) if os.path.isabs(folder) else None


def derby_url(setting: str) -> str | None:
    """The JDBC URL of an embedded Derby metastore from its connection setting, or None.

    >>> derby_url("jdbc:derby:;databaseName=/w/metastore_db;create=true")
    'jdbc:derby:;databaseName=/w/metastore_db'
    >>> derby_url("jdbc:mysql://h/metastore") is None
    True
    """
    if not setting.startswith("jdbc:derby:"):
        return None
    return ";".join(p for p in setting.split(";") if p.lower() != "create=true")


def widening_steps(column: str, present: dict[str, str]) -> list[str]:
    """The statements that take ``TBLS.<column>`` from where it stands to ``CLOB``, given the
    table's columns and their Derby types (a column already ``CLOB`` is never widened again, so a
    client that finds another's finished widening does nothing).

    >>> [s.split(" ")[0] for s in widening_steps("V", {"V": "LONG VARCHAR"})]
    ['ALTER', 'UPDATE', 'ALTER', 'RENAME']
    >>> [s.split(" ")[0] for s in widening_steps("V", {"V": "LONG VARCHAR", "V_CLOB": "CLOB(9)"})]
    ['UPDATE', 'ALTER', 'RENAME']
    >>> widening_steps("V", {"V_CLOB": "CLOB(2147483647)"})  # interrupted after the drop
    ['RENAME COLUMN "APP"."TBLS"."V_CLOB" TO "V"']
    >>> widening_steps("V", {"V": "CLOB(2147483647)"})
    []
    """
    wide, steps = f"{column}_CLOB", []
    narrow = column in present and not present[column].upper().startswith("CLOB")
    if column in present and not narrow:
        return [f'ALTER TABLE "APP"."TBLS" DROP COLUMN "{wide}"'] if wide in present else []
    if narrow and wide not in present:
        steps.append(f'ALTER TABLE "APP"."TBLS" ADD COLUMN "{wide}" CLOB')
    if narrow:
        steps.append(f'UPDATE "APP"."TBLS" SET "{wide}" = "{column}"')
        steps.append(f'ALTER TABLE "APP"."TBLS" DROP COLUMN "{column}"')
    if narrow or wide in present:
        steps.append(f'RENAME COLUMN "APP"."TBLS"."{wide}" TO "{column}"')
    return steps


def _tbls_columns(spark: Any, url: str) -> dict[str, str]:
    """``TBLS``' columns and their Derby types (``CLOB(2147483647)``, ``LONG VARCHAR``...)."""
    query = (
        "SELECT c.COLUMNNAME AS name, CAST(c.COLUMNDATATYPE AS VARCHAR(128)) AS type "
        "FROM SYS.SYSCOLUMNS c JOIN SYS.SYSTABLES t ON c.REFERENCEID = t.TABLEID "
        "WHERE t.TABLENAME = 'TBLS'"
    )
    return {str(r[0]): str(r[1]) for r in _reader(spark, url).option("query", query).load().collect()}


def _reader(spark: Any, url: str) -> Any:
    driver = "org.apache.derby.jdbc.EmbeddedDriver"
    return spark.read.format("jdbc").option("url", url).option("driver", driver)


def _names(spark: Any, url: str, query: str) -> set[str]:
    return {str(r[0]) for r in _reader(spark, url).option("query", query).load().collect()}


def _run(spark: Any, url: str, statement: str) -> None:
    """One statement on the metastore's database (the JDBC source's session statement)."""
    query = "SELECT 1 AS done FROM SYSIBM.SYSDUMMY1"
    _reader(spark, url).option("sessionInitStatement", statement).option("query", query).load().collect()
