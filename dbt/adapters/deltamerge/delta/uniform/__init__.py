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
    TABLE_FORMAT_ICEBERG,
    compat_problems,
    compat_v2,
    iceberg_enabled,
)
from dbt.adapters.deltamerge.delta.log.snapshot import Snapshot
from dbt.adapters.deltamerge.delta.uniform.catalog import (
    REGISTERED_AS,
    REGISTERED_IN,
    CatalogConflict,
    Registration,
    publish,
    registration,
    registration_properties,
    unpublish,
)
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
            f"written ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}). "
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
        said = catalogs.redacted(str(error).splitlines()[0] if str(error) else "")
        notice(
            f"Delta version {snapshot.version} of {table} was committed and its Iceberg metadata written; "
            f"the Iceberg catalog's {place} was not brought to it ({type(error).__name__}: {said}). "
            "The Delta data is written (do not re-run to redo it); readers through the catalog see an "
            "older version until the next commit or `dbt run-operation iceberg_sync` catches it up."
        )
        return None
