"""Catalog entries where Spark has Delta's jars: ``USING delta`` at the table's location.

Where the session has Delta Lake's SQL extension and its catalog as Spark's session catalog (a
managed Spark, a cluster that added delta-spark, a profile's ``server_side_parameters`` adding
them), Spark reads Delta tables itself. Each name is then registered once, ``CREATE TABLE name
USING delta LOCATION '<table>'`` (Delta's catalog records the entry and commits nothing), and every
reader of that catalog (a notebook, a BI tool, a job) reads it with Delta's own reader: the latest
version at each query, time travel, the change feed. Such an entry is never bound again after a
commit; our engine still plans, writes and commits every version.

The entry carries no properties of ours: Delta's catalog refuses table properties at a location
that differ from the table's own (``DELTA_CREATE_TABLE_WITH_DIFFERENT_PROPERTY``). It is known by
its provider and location instead (``DESCRIBE TABLE EXTENDED``, or dbt's ``SHOW TABLE EXTENDED``
listing); in memory it is a ``Binding`` whose properties hold ``DELTA_ENTRY`` only.
"""

from __future__ import annotations

from collections.abc import Mapping
from weakref import WeakKeyDictionary

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
# The in-memory mark of a Delta entry (never written to a catalog): its location.
DELTA_ENTRY = "deltamerge.delta_entry"

_SESSIONS: WeakKeyDictionary[SparkSession, bool] = WeakKeyDictionary()


def delta_catalog(spark: SparkSession) -> bool:
    """Whether ``spark`` has Delta's extension and Delta's catalog as its session catalog (asked
    once per session: settings fixed at its start)."""
    known = _SESSIONS.get(spark)
    if known is None:
        extensions = spark.conf.get("spark.sql.extensions", "") or ""
        catalog = spark.conf.get("spark.sql.catalog.spark_catalog", "") or ""
        known = delta_settings(extensions, catalog)
        _SESSIONS[spark] = known
    return known


def delta_settings(extensions: str, catalog: str) -> bool:
    """Whether Spark settings name Delta's extension and catalog.

    >>> delta_settings("io.delta.sql.DeltaSparkSessionExtension", CATALOG)
    True
    >>> delta_settings("a.B, io.delta.sql.DeltaSparkSessionExtension", "")
    False
    """
    named = {e.strip() for e in extensions.split(",")}
    return EXTENSION in named and catalog.strip() == CATALOG


def entry_location(lines: Mapping[str, str]) -> str | None:
    """The location of a Delta entry from its described lines (``Provider``, ``Location``), or None
    when the entry is no Delta table with a location.

    >>> entry_location({"Provider": "delta", "Location": "file:/w/s.db/t"})
    'file:/w/s.db/t'
    >>> entry_location({"Provider": "parquet", "Location": "file:/w/t"}) is None
    True
    """
    if lines.get("Provider", "").strip().lower() != "delta":
        return None
    location = lines.get("Location", "").strip()
    return location or None


def described(spark: SparkSession, name: str) -> dict[str, str] | None:
    """``DESCRIBE TABLE EXTENDED name``'s detail rows (``Provider``, ``Location``, ``Type``, ...),
    or None when there is no such entry."""
    try:
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    except AnalysisException as error:
        if error.getCondition() in ("TABLE_OR_VIEW_NOT_FOUND", "SCHEMA_NOT_FOUND"):
            return None
        raise
    return {str(r[0]): str(r[1]) for r in rows if r[0] and r[1] is not None}


def register_statement(name: str, location: str) -> str:
    """The statement registering a Delta entry (no columns, no properties: the log has them).

    >>> register_statement("`s`.`t`", "'/w/t'")
    "CREATE TABLE `s`.`t` USING delta LOCATION '/w/t'"
    """
    return f"CREATE TABLE {name} USING delta LOCATION {location}"
