"""A model's table in an Iceberg REST catalog following what dbt does to the model's relation.

dbt drops a relation (a materialization changed) or renames one (``adapter.rename_relation``)
in Spark's catalog; the Iceberg catalog the table is registered in (its Delta properties say
which: ``delta.log.registration``) follows: a drop removes the entry there (no purge: the files
are the Delta table's), a rename commits the new name into the table's properties, which
registers it under the new name and drops the old entry (the commit path's ``unregister_moved``).
"""

from __future__ import annotations

import json

from pyspark.sql import SparkSession

from dbt.adapters.deltamerge import binding
from dbt.adapters.deltamerge.delta import Stores, load_snapshot
from dbt.adapters.deltamerge.delta.log import REGISTERED_AS, registration


def unregister_dropped(spark: SparkSession, schema: str, identifier: str, stores: Stores) -> bool:
    """``schema.identifier``'s table dropped from its Iceberg catalog (before dbt drops its entry);
    True if it was there."""
    from dbt.adapters.deltamerge.delta.uniform import unregister  # pyiceberg: loaded by such drops

    found = binding.binding(spark, schema, identifier, stores)
    return found is not None and unregister(found.location, load_snapshot(found.location))


def follow_rename(spark: SparkSession, schema: str, identifier: str, stores: Stores) -> int | None:
    """After dbt renamed a relation to ``schema.identifier``: a table registered under another name
    gets this one (a ``SET TBLPROPERTIES`` commit); the version committed, None when none was."""
    found = binding.binding(spark, schema, identifier, stores)
    snapshot = load_snapshot(found.location) if found is not None else None
    place = registration(snapshot.metadata.configuration) if snapshot is not None else None
    if snapshot is None or place is None or place.identifier == (schema, identifier):
        return None
    from dbt.adapters.deltamerge.delta.commands import redefine

    renamed = {REGISTERED_AS: f"{schema}.{identifier}"}
    configuration = {**snapshot.metadata.configuration, **renamed}
    params: dict[str, object] = {"properties": json.dumps(renamed)}
    name = f"{schema}.{identifier}"
    done = redefine(
        spark, snapshot, name, operation="SET TBLPROPERTIES", params=params, configuration=configuration
    )
    return done.version
