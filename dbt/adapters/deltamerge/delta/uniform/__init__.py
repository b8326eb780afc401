"""UniForm: a Delta table readable as Iceberg (IcebergCompatV2 on the Delta side, Iceberg metadata
beside the log), written after every commit of a table that asks for it.

- ``compat``: the IcebergCompatV2 rules a table and its writes keep, checked before anything is
  written (no deletion vectors, column mapping, Iceberg's types);
- ``schema`` / ``files``: the Delta schema, partitioning and ``add`` actions as Iceberg's;
- ``convert``: one Delta version as one Iceberg metadata file, snapshot and manifests;
- ``sync``: the Iceberg side brought to the latest Delta version, safe against concurrent writers;
- ``fileio``: pyiceberg's file IO over the table's own store.

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
from dbt.adapters.deltamerge.delta.uniform.sync import HINT, IcebergState, iceberg_state, sync_iceberg

__all__ = [
    "COMPAT_V2",
    "ENABLED_FORMATS",
    "HINT",
    "TABLE_FORMAT_ICEBERG",
    "IcebergState",
    "compat_problems",
    "compat_v2",
    "iceberg_enabled",
    "iceberg_state",
    "sync_after_commit",
    "sync_iceberg",
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
        return sync_iceberg(table, snapshot)
    except Exception as error:
        notice(
            f"Delta version {snapshot.version} of {table} was committed; its Iceberg metadata was not "
            f"written ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}). "
            "The Delta data is written (do not re-run to redo it); Iceberg readers see the version "
            "before until the next commit or `dbt run-operation iceberg_sync` catches up."
        )
        return None
