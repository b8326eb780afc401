"""dbt's ``on_schema_change`` and Delta's merge schema evolution: the schema a run leaves.

Decided once per run, before anything is written, from the table's current schema and
the model's result: ``ignore`` keeps the table's schema (new columns are not written),
``fail`` stops with dbt's message, ``append_new_columns`` adds the new columns,
``sync_all_columns`` also drops the columns the result no longer has (a metadata
change: old files keep them, readers skip them). ``merge_with_schema_evolution`` adds
the source columns that a ``*`` action or an assignment of a merge references, as
Delta's ``filterSchema`` does.
"""

from __future__ import annotations

from dbt_common.exceptions import CompilationError
from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta import Snapshot
from dbt.adapters.deltamerge.delta.data import computed_columns
from dbt.adapters.deltamerge.delta.log import evolved_schema, find_field, schema_changes
from dbt.adapters.deltamerge.merge import MergeSpec, evolved_by_merge
from dbt.adapters.deltamerge.model.spec import WriteSpec


def planned_schema(
    spec: WriteSpec, merge_spec: MergeSpec | None, snapshot: Snapshot, result: T.StructType
) -> T.StructType | None:
    """The schema the run of ``spec`` leaves on ``snapshot``'s table, or None when it keeps it
    (``ignore``, or the result's columns are the table's)."""
    what = f"Model '{spec.model}'"
    on_schema_change, table, partition_columns = (
        spec.on_schema_change,
        snapshot.schema,
        snapshot.partition_columns,
    )
    if merge_spec is not None and merge_spec.schema_evolution:
        return evolved_by_merge(merge_spec, snapshot, result, what=what)
    # Generated, identity and default columns the result leaves out are computed, not dropped.
    computed = computed_columns(table)
    left_out = [f for f in table.fields if f.name.lower() in computed and find_field(result, f.name) is None]
    changes = schema_changes(table, T.StructType([*result.fields, *left_out]))
    if not changes.any or on_schema_change == "ignore":
        return None
    if on_schema_change == "fail":
        raise CompilationError(
            f"{what}: The source and target schemas on this incremental model are out of sync!\n"
            "They can be reconciled in several ways:\n"
            "  - set the `on_schema_change` config to either append_new_columns or sync_all_columns, "
            "depending on your situation.\n"
            "  - Re-run the incremental model with `full_refresh: True` to update the target schema.\n"
            "  - update the schema manually and re-run the process.\n\n"
            "Additional troubleshooting context:\n"
            f"   Source columns not in target: {list(changes.source_not_in_target)}\n"
            f"   Target columns not in source: {list(changes.target_not_in_source)}\n"
            f"   New column types: {[f'{c}: {a} -> {b}' for c, a, b in changes.new_target_types]}"
        )
    schema = evolved_schema(
        table,
        T.StructType([*result.fields, *left_out]),
        drop_missing=on_schema_change == "sync_all_columns",
        partition_columns=partition_columns,
        what=what,
    )
    # Also when it equals the table's (the result only lacks columns the table keeps): a schema
    # planned makes a merge's `*` actions leave the columns the result lacks (kept on update, null
    # on insert), as dbt-databricks merges the result's columns once on_schema_change is set.
    return schema
