"""One model's write: decided once (CDC apply, merge, or a table write), run, and bound.

The adapter's materialization methods parse config and call ``write_model``; this module
chooses the write from the model's materialization, the table's existence and its config,
runs it with the engine and re-binds the catalog entry.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from typing import Any, Dict, Optional

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge import binding
from dbt.adapters.deltamerge.cdc.apply import apply_changes
from dbt.adapters.deltamerge.cdc.spec import CdcSpec
from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta.paths import table_path_of
from dbt.adapters.deltamerge.delta.snapshot import has_delta_log, load_snapshot
from dbt.adapters.deltamerge.delta.transaction import WriteResult
from dbt.adapters.deltamerge.delta.write import write_dataframe
from dbt.adapters.deltamerge.errors import ModelWriteError
from dbt.adapters.deltamerge.merge.pipeline import merge_into
from dbt.adapters.deltamerge.merge.spec import MergeSpec
from dbt.adapters.deltamerge.model.schema_change import planned_schema
from dbt.adapters.deltamerge.model.spec import (
    Materialization,
    WriteSpec,
    is_merge,
    plan_write,
    table_location,
)


@dataclass(frozen=True)
class NotWritten:
    """A dry run of a write that is not a merge: nothing was written, for this reason."""

    reason: str


def write_model(
    spark: SparkSession,
    df: DataFrame,
    *,
    schema: str,
    identifier: str,
    spec: WriteSpec,
    materialization: Materialization,
    full_refresh: bool,
    batch: Optional[tuple[str, str]] = None,
    merge_spec: Optional[MergeSpec] = None,
    cdc_spec: Optional[CdcSpec] = None,
    bound: Optional[str],
    dry_run: bool = False,
) -> WriteResult | NotWritten:
    """Write one version of the model's Delta table (or merge into it) and re-bind the catalog.

    Decides once which write the model makes (CDC apply, merge, or a table write as
    ``materialize.plan_write`` plans it) and runs it. ``bound`` is the table path of the
    current catalog binding.

    Returns:
        What was committed, or ``NotWritten`` for a dry run of a write that is not a merge.
    """
    # The schema's folder only when it decides (one catalog round trip fewer otherwise).
    needs_schema = not spec.location_root and not bound
    path = table_location(
        spec,
        identifier=identifier,
        bound=bound,
        schema_location=spark.catalog.getDatabase(schema).locationUri if needs_schema else "",
    )
    # A run killed after its commit but before re-binding leaves the table without its
    # catalog entry: an incremental model continues the Delta table at its location.
    exists = bound is not None or (materialization == "incremental" and has_delta_log(table_path_of(path)))
    merging = merge_spec is not None and is_merge(
        spec, materialization=materialization, exists=exists, full_refresh=full_refresh
    )
    if dry_run and not merging:
        return NotWritten(
            "CDC apply models are not previewed"
            if cdc_spec is not None
            else "a dry run previews merges into an existing table"
        )
    if cdc_spec is not None:
        create = plan_write(
            spec,
            materialization="table",
            table_path=table_path_of(path),
            exists=exists,
            full_refresh=True,
        )
        result = apply_changes(
            spark,
            df,
            dataclasses.replace(cdc_spec, change_data_feed=spec.change_data_feed),
            table=load_snapshot(table_path_of(path)) if exists else None,
            create=create,
            txn=run_txn(schema, identifier),
            plan_schema=lambda main, snapshot, result: planned_schema(spec, main, snapshot, result),
            full_refresh=full_refresh,
        )
        if result.version is not None or bound is None:
            binding.bind(spark, schema=schema, identifier=identifier, snapshot=result.snapshot)
        return result
    if merge_spec is not None and merging:
        snapshot = load_snapshot(table_path_of(path))
        if snapshot is None:
            raise ModelWriteError(f"Model '{spec.model}': no Delta table at {path} to merge into")
        if spec.change_data_feed and not merge_spec.change_data_feed:
            merge_spec = dataclasses.replace(merge_spec, change_data_feed=True)
        evolved = planned_schema(spec, merge_spec, snapshot, df.schema)
        result = merge_into(
            spark,
            df,
            snapshot,
            merge_spec,
            schema=evolved,
            txn=run_txn(schema, identifier),
            dry_run=dry_run,
        )
        if result.version is not None:
            binding.bind(spark, schema=schema, identifier=identifier, snapshot=result.snapshot)
        return result
    request = plan_write(
        spec,
        materialization=materialization,
        table_path=table_path_of(path),
        exists=exists,
        full_refresh=full_refresh,
        batch=batch,
    )
    request = dataclasses.replace(request, txn=run_txn(schema, identifier))
    current = load_snapshot(request.table_path) if request.mode != "create_or_replace" else None
    if current is not None:
        evolved = planned_schema(spec, None, current, df.schema)
        request = dataclasses.replace(request, schema=evolved)
        df = only_columns_of(df, evolved or current.schema)
    result = write_dataframe(spark, df, request)
    binding.bind(spark, schema=schema, identifier=identifier, snapshot=result.snapshot)
    return result


_WRITES: Dict[str, Any] = {"invocation": None, "counts": {}}
_WRITES_LOCK = threading.Lock()


def run_txn(schema: str, identifier: str) -> tuple[str, int]:
    """The ``txn`` of a write: one appId per dbt invocation and model, the write's number as version.

    A retried commit of the same write is recognised by exactly this pair; another
    invocation of the same model is another writer (Delta's conflict rules decide), and
    microbatch writes of one invocation count up. Tables keep these entries for
    ``delta.setTransactionRetentionDuration`` (``delta.definition.with_transaction_retention``).
    """
    from dbt_common.invocation import get_invocation_id

    invocation = get_invocation_id()
    app_id = f"dbt-deltamerge:{invocation}:{schema}.{identifier}"
    with _WRITES_LOCK:
        if _WRITES["invocation"] != invocation:
            _WRITES.update(invocation=invocation, counts={})
        counts: Dict[str, int] = _WRITES["counts"]
        count = counts[app_id] = counts.get(app_id, -1) + 1
    return app_id, count


def only_columns_of(df: DataFrame, schema: T.StructType) -> DataFrame:
    """The result's columns the table has (dbt's ``ignore``: new columns are not written)."""
    existing = {f.name.lower() for f in schema.fields}
    return df.select(
        *[F.col(quote_identifier(f.name)) for f in df.schema.fields if f.name.lower() in existing]
    )
