"""Reads through the catalog see each Delta table's latest version.

A catalog entry of ours reads one Delta version (``binding``): the one bound last. Another writer
(delta-rs, Delta on Spark, another dbt process) commits without touching Spark's catalog, so
before Spark plans a statement, a model's query or a Python model's ``ref``, every name it reads
(through views: their text is read once) that is one of our entries is compared with its table's
log, one listing, and bound again when a newer version was committed. A table whose log is gone
(deleted, or a folder that was never Delta) is refused naming it: the entry's hard links would
still serve the version bound last.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from dbt.adapters.deltamerge import binding
from dbt.adapters.deltamerge.common.sql import quote_identifier, string_literal
from dbt.adapters.deltamerge.delta import DeltaError, Stores, TableLocation, load_snapshot
from dbt.adapters.deltamerge.delta.txn import latest_version
from dbt.adapters.deltamerge.statements.parse.reads import Name, read_names
from dbt.adapters.deltamerge.statements.parse.text import SqlText

# Views nested deeper than this are not followed further (a view over itself is an error of Spark's).
MAX_VIEW_DEPTH = 16
_VIEW_TEXT = re.compile(
    r"^View Text: (.*?)\n(?=View (?:Original Text|Schema Mode|Catalog and Namespace|Query Output Columns): "
    r"|Schema: |\Z)",
    re.M | re.S,
)
_VIEW_NAMESPACE = re.compile(r"^View Catalog and Namespace: spark_catalog\.(.+)$", re.M)


class StaleTableError(DeltaError):
    """A catalog entry reads a Delta table that can no longer be read at its latest version."""


@dataclass(frozen=True)
class Bound:
    """One of our entries: the table it reads and the version bound (as this process last saw it)."""

    schema: str
    identifier: str
    table: TableLocation
    version: int | None


@dataclass(frozen=True)
class View:
    """A view (not ours): the names its text reads."""

    reads: frozenset[Name]


class Other:
    """A table or view that is none of ours and reads none of ours (parquet, Hive, a temp view)."""


Known = Bound | View | Other


class CatalogReads:
    """What one dbt invocation knows of the catalog names its statements read, so that a read costs
    one log listing per Delta table when nothing changed (``invocation.Invocation.catalog``).

    The catalog entries an invocation binds and the views it creates are its own doing. Entries
    of ours are kept with the version last bound (any binder's: a differing log is looked at again
    before binding); views and other tables are forgotten whenever a statement of the invocation
    creates, replaces, alters or drops a catalog object (``forget_definitions``). A missing name is
    never kept. The tables it finds are reached through ``stores``, the invocation's.
    """

    def __init__(self, stores: Stores) -> None:
        self.stores = stores
        self._lock = threading.RLock()
        self._known: dict[Name, Known] = {}
        self._listed: dict[Name, tuple[str, str, str]] = {}  # name: (schema, identifier, text)
        self._folders_lock = threading.Lock()
        self._folders: dict[str, str] = {}

    def schema_folder(self, spark: SparkSession, schema: str) -> str:
        """The folder of ``schema`` where its new tables go (``delta.place_table``), read from the
        catalog once per command: models that start together wait for the one round trip."""
        with self._folders_lock:
            key = schema.lower()
            if key not in self._folders:
                self._folders[key] = binding.schema_folder(spark, schema)
            return self._folders[key]

    def refresh(self, spark: SparkSession, names: Iterable[Name]) -> None:
        """Bind every entry of ours that ``names`` read (directly or through views) to its latest
        version, if other writers committed since it was bound."""
        with self._lock:
            seen: set[Name] = set()
            pending = [(name, 0) for name in names]
            while pending:
                name, depth = pending.pop()
                if name in seen or depth > MAX_VIEW_DEPTH:
                    continue
                seen.add(name)
                known = self._known.get(name) or self._look_up(spark, name)
                if isinstance(known, View):
                    pending.extend((n, depth + 1) for n in known.reads)
                elif isinstance(known, Bound):
                    self._known[name] = _fresh(spark, known)

    def refresh_sql(self, spark: SparkSession, text: SqlText) -> None:
        """``refresh`` for the names ``text`` reads (none for a statement that reads no table)."""
        names = read_names(text)
        if names:
            self.refresh(spark, names)

    def bound(self, schema: str, identifier: str, table: TableLocation, version: int | None) -> None:
        """Record that this process bound ``schema.identifier`` to ``version`` of ``table``."""
        with self._lock:
            self._known[(schema.lower(), identifier.lower())] = Bound(schema, identifier, table, version)

    def listed(self, schema: str, identifier: str, information: str) -> None:
        """What dbt's listing of a schema said of one name (its ``SHOW TABLE EXTENDED`` text, which
        ``_look_up`` would ask for): the first statement reading the name reads it from here, not
        from the catalog. Forgotten as a look-up is (``forget_definitions``)."""
        with self._lock:
            self._listed[(schema.lower(), identifier.lower())] = (schema, identifier, information)

    def forget_definitions(self) -> None:
        """Forget views, other tables and schemas' folders (a statement may have defined them anew)."""
        with self._lock:
            self._known = {k: v for k, v in self._known.items() if isinstance(v, Bound)}
            self._listed.clear()
        with self._folders_lock:
            self._folders.clear()

    def forget(self) -> None:
        """Forget everything (a new dbt command in this process)."""
        with self._lock:
            self._known.clear()
            self._listed.clear()
        with self._folders_lock:
            self._folders.clear()

    def _look_up(self, spark: SparkSession, name: Name) -> Known | None:
        """What ``name`` is in the catalog: as dbt's listing said (``listed``), else one ``SHOW
        TABLE EXTENDED``; None when it is missing."""
        listed = self._listed.pop(name, None)
        if listed is not None:
            entry_schema, identifier, information = listed
        else:
            schema, identifier = name
            pattern = string_literal(identifier)
            where = f"IN {quote_identifier(schema)} " if schema else ""
            try:
                rows = spark.sql(f"SHOW TABLE EXTENDED {where}LIKE {pattern}").collect()
            except AnalysisException:
                return None  # no such schema (or a path-based name): Spark says so when it plans
            row = next((r for r in rows if str(r[1]).lower() == identifier), None)
            if row is None:
                return None
            entry_schema, identifier, information = str(row[0]) or schema, str(row[1]), str(row[3])
        try:
            ours = binding.listed(information, self.stores, delta=binding.delta_catalog(spark))
        except ValueError:
            ours = binding.binding(spark, entry_schema, identifier, self.stores)
        known: Known
        if ours is not None and ours.delta_entry:
            known = Other()  # Delta's own entry: Delta reads the latest version at each query
        elif ours is not None:
            known = Bound(entry_schema, identifier, ours.location, ours.version)
        elif "\nType: VIEW\n" in f"\n{information}":
            known = View(view_reads(information))
        else:
            known = Other()
        self._known[name] = known
        return known


def view_reads(information: str) -> frozenset[Name]:
    """The names a view's text reads, from its ``SHOW TABLE EXTENDED`` text; unqualified ones in
    the view's own namespace (Spark resolves them there, not in the session's).

    >>> info = "Type: VIEW\\nView Text: select 'a: b' from t\\njoin s.u\\nView Schema Mode: BINDING\\n"
    >>> sorted(view_reads(info + "View Catalog and Namespace: spark_catalog.w\\nSchema: root\\n"))
    [('s', 'u'), ('w', 't')]
    """
    text = _VIEW_TEXT.search(information)
    if text is None:
        return frozenset()
    namespace = _VIEW_NAMESPACE.search(information)
    schema = namespace.group(1).strip().strip("`").lower() if namespace else ""
    return frozenset((s or schema, i) for s, i in read_names(SqlText(text.group(1))))


def _fresh(spark: SparkSession, bound: Bound) -> Bound:
    """``bound`` after binding its table's latest version, if that is not the version bound."""
    latest = latest_version(bound.table)
    if latest == bound.version and latest >= 0:
        return bound
    # another process may have bound it
    entry = binding.binding(spark, bound.schema, bound.identifier, bound.table.stores)
    if entry is None:
        return bound  # dropped meanwhile: Spark says so when it plans
    name = f"{bound.schema}.{bound.identifier}"
    table = entry.location
    latest = latest_version(table)
    if latest < 0:
        raise StaleTableError(
            f"{name} reads the Delta table at {table}, which has no Delta log any more "
            f"(the catalog entry still reads version {entry.version}): refusing to read an old version "
            "as the latest. Register the table again (convert_to_delta with relation_name) or drop "
            f"{name}."
        )
    if entry.version == latest or entry.delta_entry:  # (Delta's entry reads the latest itself)
        return Bound(bound.schema, bound.identifier, table, latest)
    snapshot = load_snapshot(table)
    if snapshot is None:
        raise StaleTableError(f"{name} reads {table}, where no Delta table is any more")
    binding.bind(
        spark, schema=bound.schema, identifier=bound.identifier, snapshot=snapshot, current=entry.properties
    )
    return Bound(bound.schema, bound.identifier, table, snapshot.version)
