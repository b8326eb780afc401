"""UniForm: a Delta table readable as Iceberg (IcebergCompatV2 on the Delta side, Iceberg metadata
beside the log), written after every commit of a table that asks for it.

- ``compat``: the IcebergCompatV2 rules a table and its writes keep, checked before anything is
  written (no deletion vectors, column mapping, Iceberg's types);
- ``schema`` / ``files``: the Delta schema, partitioning and ``add`` actions as Iceberg's;
- ``convert``: one Delta version as one Iceberg metadata file, snapshot and manifests;
- ``sync``: the Iceberg side brought to the latest Delta version, safe against concurrent writers;
- ``fileio``: pyiceberg's file IO over the table's own store;
- ``catalog``: the table registered in an Iceberg REST catalog of the profile, kept current there.

The room runs no Spark job (pyiceberg writes the Avro manifests and the metadata JSON).
"""

from __future__ import annotations

from dbt.adapters.deltamerge.delta.ledger import notice
from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.log.iceberg_compat import (
    COMPAT_V2,
    ENABLED_FORMATS,
    REGISTERED_AS,
    REGISTERED_IN,
    TABLE_FORMAT_ICEBERG,
    Registration,
    compat_problems,
    compat_v2,
    iceberg_enabled,
    registration,
    registration_properties,
)
from dbt.adapters.deltamerge.delta.log.snapshot import Snapshot
from dbt.adapters.deltamerge.delta.uniform.catalog import CatalogConflict, publish, unpublish
from dbt.adapters.deltamerge.delta.uniform.sync import HINT, IcebergState, iceberg_state, sync_iceberg

__all__ = [
    "COMPAT_V2",
    "ENABLED_FORMATS",
    "HINT",
    "REGISTERED_AS",
    "REGISTERED_IN",
    "TABLE_FORMAT_ICEBERG",
    "CatalogConflict",
    "IcebergState",
    "Registration",
    "compat_problems",
    "compat_v2",
    "iceberg_enabled",
    "iceberg_state",
    "publish",
    "publish_registered",
    "registration",
    "registration_properties",
    "sync_after_commit",
    "sync_iceberg",
    "unpublish",
    "unregister",
    "unregister_moved",
]


def sync_after_commit(table: TableLocation, snapshot: Snapshot) -> int | None:
    """Bring the Iceberg side of a UniForm table to ``snapshot`` (just committed); return the Delta
    version it shows, or None when the table asks for no Iceberg side or the conversion failed.

    A failure never fails or undoes the commit: it is told (``ledger.notice``; the error boundary
    fails the model with it once the model's other steps are done) as the version committed and the
    Iceberg side behind; the next commit, or ``dbt run-operation iceberg_sync``, catches up.
    """
    if not iceberg_enabled(snapshot.metadata.configuration):
        return None
    try:
        shown = sync_iceberg(table, snapshot)
    except Exception as error:
        notice(
            f"Delta version {snapshot.version} of {table} was committed; its Iceberg metadata was not "
            f"written ({_said(error, table)}). "
            "The Delta data is written (do not re-run to redo it); Iceberg readers see the version "
            "before until the next commit or `dbt run-operation iceberg_sync` catches up."
        )
        return None
    publish_registered(table, snapshot)
    return shown


def publish_registered(table: TableLocation, snapshot: Snapshot) -> int | None:
    """Bring the Iceberg catalog the table is registered in (its properties say which:
    ``catalog.registration``) to the Iceberg side's latest metadata; return the Delta version the
    catalog shows (None: registered nowhere, or the catalog was not reached). A failure is told
    as the version committed and the catalog behind (``ledger.notice``), never raised: the next
    commit, or ``dbt run-operation iceberg_sync``, catches the catalog up."""
    place = registration(snapshot.metadata.configuration)
    if place is None:
        return None
    catalogs = table.stores.catalogs
    try:
        state = iceberg_state(table)
        if state is None:
            raise RuntimeError("the table has no Iceberg metadata yet")
        return publish(catalogs.client(place.catalog), place.identifier, state.metadata, state.location)
    except Exception as error:
        notice(
            f"Delta version {snapshot.version} of {table} was committed and its Iceberg metadata written; "
            f"the Iceberg catalog's {place} was not brought to it ({_said(error, table)}). "
            "The Delta data is written (do not re-run to redo it); readers through the catalog see an "
            "older version until the next commit or `dbt run-operation iceberg_sync` catches it up."
        )
        return None


def unregister_moved(table: TableLocation, before: Snapshot, after: Snapshot) -> None:
    """After a commit that changed where the table's properties say it is registered (a model's
    ``database`` changed and the table replaced, or the properties set): the old catalog entry
    dropped (if it is still this table's), so no catalog shows a version that is no longer the
    latest. A failure is told, never raised (the commit stands)."""
    old = registration(before.metadata.configuration)
    if old is not None and old != registration(after.metadata.configuration):
        unregister(table, before, f"Delta version {after.version} of {table} was committed; ")


def unregister(table: TableLocation, snapshot: Snapshot | None, committed: str = "") -> bool:
    """Drop the table from the Iceberg catalog its ``snapshot``'s properties name (its files stay);
    True if it was there. A failure is told (``ledger.notice``), never raised."""
    place = registration(snapshot.metadata.configuration) if snapshot is not None else None
    if place is None or snapshot is None:
        return False
    catalogs = table.stores.catalogs
    try:
        return unpublish(catalogs.client(place.catalog), place.identifier, snapshot.metadata.id)
    except Exception as error:
        notice(
            f"{committed}the Iceberg catalog's {place} still names the table ({_said(error, table)}): "
            "drop it there, or run again to retry"
        )
        return False


def _said(error: Exception, table: TableLocation) -> str:
    """An error's kind and first line, every catalog secret of the table's configuration masked."""
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {table.stores.catalogs.redacted(text)}"
