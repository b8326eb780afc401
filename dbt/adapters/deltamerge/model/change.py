"""A model run's change to its table's definition (``delta.TableChange``), decided once per run.

From the model's config and the table's current version, before anything is written: an enforced
contract's constraints brought to an existing table (committed before the write, the live rows
checked), the schema the write leaves (``on_schema_change``, a merge's schema evolution:
``schema_change.planned_schema``, decided against the table as the contract leaves it), the
change data feed and deletion vectors switched on, and the clustering columns committed after
the write where they differ. A new table's (or a replaced table's) definition is the write
request's, not a change: only its clustering rides here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta import Snapshot
from dbt.adapters.deltamerge.delta.log import Redefinition, TableChange, redefined
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
