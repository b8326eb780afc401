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
alike). Each step is taken from the catalog's current columns and their types, so a widening that
was interrupted, or that another client of the same server raced, completes on the next try and a
column already ``CLOB`` is never widened again; a marker table says it is done. A metastore that
is not an embedded Derby one (a cluster's) is left alone.
"""

from __future__ import annotations

import time
from typing import Any

from dbt.adapters.deltamerge.spark.process import PROCESS

LONG_VARCHAR = 32_700
COLUMNS = ("VIEW_ORIGINAL_TEXT", "VIEW_EXPANDED_TEXT")
MARKER = "DELTAMERGE_WIDE_VIEW_TEXT"
_URL_SETTING = "spark.hadoop.javax.jdo.option.ConnectionURL"
_ATTEMPTS = 6


def make_room(spark: Any, statement: str) -> None:
    """Widen the embedded metastore's view text columns before ``statement`` runs, when it is long
    enough to define a view text they cannot hold (nothing for a shorter one: no round trip)."""
    if len(statement) > LONG_VARCHAR:
        widen_view_text(spark)


def widen_view_text(spark: Any) -> bool:
    """Widen the embedded metastore's view text columns to ``CLOB``; False when there was nothing to
    do (not an embedded Derby metastore, or widened already)."""
    url = derby_url(spark.conf.get(_URL_SETTING, "") or "")
    if url is None or url in PROCESS.wide_view_text:
        return False
    with PROCESS.view_text_lock:  # one widening at a time in this process
        for attempt in range(_ATTEMPTS):
            if MARKER in _names(spark, url, "SELECT TABLENAME AS name FROM SYS.SYSTABLES"):
                PROCESS.wide_view_text.add(url)
                return False
            try:
                for column in COLUMNS:
                    for step in widening_steps(column, _tbls_columns(spark, url)):
                        _run(spark, url, step)
                _run(spark, url, f'CREATE TABLE "APP"."{MARKER}" (WIDENED INT)')
                break
            except Exception:  # another client of the server widening at once: read the state again
                if attempt == _ATTEMPTS - 1:
                    raise
                time.sleep(0.2 * (attempt + 1))
    PROCESS.wide_view_text.add(url)
    return True


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
