"""A model run's change to its table's definition (``delta.TableChange``), decided once per run.

From the model's config and the table's current version, before anything is written: an enforced
contract's constraints brought to an existing table (committed before the write, the live rows
checked), the schema the write leaves (``on_schema_change``, a merge's schema evolution:
``schema_change.planned_schema``, decided against the table as the contract leaves it), the
change data feed and deletion vectors switched on, and the clustering columns committed after
the write where they differ, and the Iceberg catalog the table is registered in moved where the
model's ``database`` now says (committed before the write, so that the write's own commit keeps the
new catalog current; the commit path drops the old entry). A new table's (or a replaced table's)
definition is the write request's, not a change: only its clustering rides here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.delta import Snapshot
from dbt.adapters.deltamerge.delta.log import (
    REGISTERED_AS,
    REGISTERED_IN,
    Redefinition,
    TableChange,
    iceberg_enabled,
    redefined,
    registration,
)
from dbt.adapters.deltamerge.model.schema_change import planned_schema
from dbt.adapters.deltamerge.model.spec import ModelSpec

if TYPE_CHECKING:
    from dbt.adapters.deltamerge.model.contract import ModelContract

Write = Literal["cdc_apply", "merge", "table_write"]


def table_change(
    spec: ModelSpec,
    write: Write,
    current: Snapshot | None,
    result: Callable[[], T.StructType],
    *,
    contract: ModelContract | None,
    replaces: bool,
) -> TableChange:
    """The definition change of one run of ``spec`` making ``write`` on ``current`` (None: no table
    yet). ``result``: the schema of the rows the write takes (asked only when a schema is planned);
    ``replaces``: the run writes a new definition of the table (CREATE OR REPLACE)."""
    cluster_by = tuple(spec.write.cluster_by) or None
    if current is None or replaces:
        return TableChange(cluster_by=cluster_by)
    before = _to_contract(contract, current) if contract is not None else None
    before = _to_registration(spec, current, before)
    base = redefined(current, before) if before is not None else current
    schema: T.StructType | None = None
    if write == "merge":
        schema = planned_schema(spec.write, spec.merge, base, result())
    elif write == "table_write" or (spec.cdc is not None and spec.cdc.scd_type == 1):
        schema = planned_schema(spec.write, None, base, result())  # SCD 2 keeps its history's schema
    return TableChange(
        schema=schema,
        change_data_feed=spec.write.change_data_feed,
        # A table write appends or overwrites files: it writes no deletion vectors to switch on.
        deletion_vectors=spec.write.deletion_vectors and write != "table_write",
        before=before,
        cluster_by=cluster_by,
    )


def _to_contract(contract: ModelContract, snapshot: Snapshot) -> Redefinition | None:
    """The constraint changes the contract asks of the existing table (None if none)."""
    from dbt.adapters.deltamerge.model.contract import contract_change

    change = contract_change(contract, snapshot.metadata.configuration, snapshot.schema)
    if not change:
        return None
    schema = T.StructType(
        [
            T.StructField(f.name, f.dataType, change.nullable.get(f.name, f.nullable), f.metadata)
            for f in snapshot.schema.fields
        ]
    )
    params: dict[str, object] = {"contract": True, "added": change.add, "dropped": list(change.drop)}
    operation = "ADD CONSTRAINT" if change.add else "DROP CONSTRAINT" if change.drop else "CHANGE COLUMN"
    configuration = change.properties(snapshot.metadata.configuration)
    return Redefinition(operation, params, configuration, schema)


def _to_registration(spec: ModelSpec, current: Snapshot, before: Redefinition | None) -> Redefinition | None:
    """``before`` with the table's registration moved where the model's config puts it (another
    Iceberg catalog or name, or none); ``before`` itself when it is where the config says."""
    wanted = {k: v for k, v in spec.write.tblproperties.items() if k in (REGISTERED_IN, REGISTERED_AS)}
    configuration = dict(before.configuration if before is not None else current.metadata.configuration)
    if registration(configuration) == registration(wanted):
        return before
    if wanted and not iceberg_enabled(configuration):
        raise SpecError(
            spec.model,
            [
                f"database {wanted[REGISTERED_IN]!r} registers the model in an Iceberg catalog, but its "
                "existing table is no UniForm table yet: a run upgrades it in place before its write "
                "(REORG ... UPGRADE UNIFORM), a dry run does not"
            ],
        )
    moved = {k: v for k, v in configuration.items() if k not in (REGISTERED_IN, REGISTERED_AS)} | wanted
    if before is not None:
        return replace(before, configuration=moved)
    params = (
        {"properties": json.dumps(wanted)}
        if wanted
        else {"propertyKeys": json.dumps([REGISTERED_IN, REGISTERED_AS])}
    )
    operation = "SET TBLPROPERTIES" if wanted else "UNSET TBLPROPERTIES"
    return Redefinition(operation, params, moved, current.schema)
