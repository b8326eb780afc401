"""One model's write: decided once (CDC apply, merge, or a table write), run, and bound.

The adapter parses a model's config once (``spec.ModelSpec``) and calls ``write_model``; this
module finds the model's table (``locate``), decides which write the run makes
(``decide``: one ``Write``) and runs it with the engine, then re-binds the catalog entry.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Optional

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge import binding
from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta import (
    Snapshot,
    WriteRequest,
    WriteResult,
    after_commit,
    auto_compact,
    auto_compact_enabled,
    has_delta_log,
    load_snapshot,
    table_path_of,
    write_dataframe,
)
from dbt.adapters.deltamerge.errors import ModelWriteError
from dbt.adapters.deltamerge.merge.check import check_before_creating
from dbt.adapters.deltamerge.merge.dry_run import DryRun
from dbt.adapters.deltamerge.merge.pipeline import dry_run_merge, merge_into
from dbt.adapters.deltamerge.merge.spec import MergeSpec
from dbt.adapters.deltamerge.model.schema_change import planned_schema
from dbt.adapters.deltamerge.model.spec import Materialization, ModelSpec, plan_write, table_location

if TYPE_CHECKING:
    from dbt.adapters.deltamerge.model.contract import ModelContract

Write = Literal["cdc_apply", "merge", "table_write"]


@dataclass(frozen=True)
class NotWritten:
    """A dry run of a write that is not a merge: nothing was written, for this reason."""

    reason: str


@dataclass(frozen=True)
class ModelTable:
    """Where a model's Delta table is, whether it exists (and is bound in the catalog), the run's ``txn``."""

    schema: str
    identifier: str
    path: str
    exists: bool
    bound: bool
    txn: tuple[str, int]
    # The catalog entry's table properties as the run found them (None: not read, or changed since).
    catalog: Mapping[str, str] | None = None


def write_model(
    spark: SparkSession,
    df: DataFrame,
    *,
    table: ModelTable,
    spec: ModelSpec,
    materialization: Materialization,
    full_refresh: bool,
    batch: Optional[tuple[str, str]] = None,
    dry_run: bool = False,
    contract: ModelContract | None = None,
    bind: bool = True,
) -> WriteResult | DryRun | NotWritten:
    """Write one version of the model's Delta table (or merge into it) and re-bind the catalog.

    ``bind=False``: the catalog entry is left to the caller (the local server's warm-up binds
    apart, outside the operations a dbt command may interrupt: ``spark/warmup.py``).

    With an enforced ``contract``, a new table gets its NOT NULL columns and CHECK constraints; an
    existing one is brought to the contract first (its own commit, existing rows checked), and
    the write is then checked against it.

    Returns:
        What was committed; for a dry run the merge it previews, or ``NotWritten`` when the
        model's write is not a merge into an existing table.
    """
    write = decide(spec, exists=table.exists, full_refresh=full_refresh)
    if spec.write.zorder or spec.write.cluster_by:  # df.columns costs a round trip on Spark Connect
        _check_maintenance_columns(spec, df)  # before anything is written, not after the commit
    if spec.merge is not None and write == "table_write":  # the run creating a merge model's table
        check_before_creating(spark, spec.merge, df)
    if dry_run:
        return _dry_run(spark, df, table, spec) if write == "merge" else NotWritten(_NOT_PREVIEWED[write])
    if contract is not None and table.exists and not _replaces(spec, materialization, write, full_refresh):
        _bring_to_contract(spark, table, spec, contract)
    if write == "cdc_apply":
        result = _apply_changes(spark, df, table, spec, full_refresh=full_refresh, contract=contract)
    elif write == "merge":
        result = _merge(spark, df, table, spec)
    else:
        result = _table_write(
            spark, df, table, spec, materialization, full_refresh=full_refresh, batch=batch, contract=contract
        )
    with after_commit("the model's maintenance (auto compaction, clustering, OPTIMIZE)"):
        latest = _maintained(spark, result, spec) if result.version is not None else result.snapshot
    if bind and (result.version is not None or write == "table_write" or not table.bound):
        name, identifier = table.schema, table.identifier
        with after_commit(f"binding the new version as {name}.{identifier} in the catalog"):
            binding.bind(spark, schema=name, identifier=identifier, snapshot=latest, current=table.catalog)
    return result


def _check_maintenance_columns(spec: ModelSpec, df: DataFrame) -> None:
    """Refuse ``zorder`` / ``cluster_by`` columns the model's result lacks or partitions by (Delta's
    texts), so that the OPTIMIZE after the write cannot fail once the write is committed."""
    partitions = {c.lower() for c in spec.write.partition_by}
    names = {c.lower() for c in df.columns}
    problems = [
        f"Z-Ordering column {c} does not exist in data schema."
        if c.lower() not in names
        else f"{c} is a partition column. Z-Ordering can only be performed on data columns"
        for c in spec.write.zorder
        if c.lower() not in names or c.lower() in partitions
    ]
    problems += [
        f"cluster_by: column {c} is not a column of the model"
        for c in spec.write.cluster_by
        if c.lower() not in names
    ]
    if problems:
        raise SpecError(spec.model, problems)


def _maintained(spark: SparkSession, result: WriteResult, spec: ModelSpec) -> Snapshot:
    """The table after the maintenance a committed write asks for: auto compaction (the table's or
    the model's ``auto_optimize``), the model's clustering columns (``cluster_by`` changed on an
    existing table), then the model's OPTIMIZE (``optimize_after_run``, ``zorder``, ``cluster_by``:
    a clustered table's OPTIMIZE clusters the files not clustered yet)."""
    compacted = auto_compact(spark, result, enabled=auto_compact_enabled(spec.write.tblproperties))
    latest = compacted if compacted is not None and compacted.version is not None else result
    wanted = spec.write.cluster_by
    if wanted and tuple(c.lower() for c in latest.snapshot.clustering or ()) != tuple(
        c.lower() for c in wanted
    ):
        from dbt.adapters.deltamerge.delta import recluster

        reclustered = recluster(latest.snapshot, wanted, spec.model)  # the config's new clustering columns
        latest = reclustered if reclustered.version is not None else latest
    if spec.write.optimize_after_run or spec.write.zorder or wanted:
        from dbt.adapters.deltamerge.delta import OptimizeOptions, optimize

        snapshot = latest.snapshot
        options = OptimizeOptions.for_table(
            dict(snapshot.metadata.configuration), zorder_by=spec.write.zorder
        )
        optimized = optimize(spark, snapshot, snapshot.files, options)
        latest = optimized if optimized.version is not None else latest
    return latest.snapshot


def _replaces(spec: ModelSpec, materialization: Materialization, write: Write, full_refresh: bool) -> bool:
    """Whether the run writes a new definition of the table (CREATE OR REPLACE)."""
    if write == "cdc_apply":
        return full_refresh
    if write == "merge":
        return False
    return materialization != "incremental" or full_refresh


def _bring_to_contract(
    spark: SparkSession, table: ModelTable, spec: ModelSpec, contract: ModelContract
) -> None:
    """Commit the constraint changes the contract asks of the existing table (nothing if none)."""
    from dbt.adapters.deltamerge.delta import redefine
    from dbt.adapters.deltamerge.model.contract import contract_change

    snapshot = _existing(table, spec)
    change = contract_change(contract, snapshot.metadata.configuration, snapshot.schema)
    if not change:
        return
    schema = T.StructType(
        [
            T.StructField(f.name, f.dataType, change.nullable.get(f.name, f.nullable), f.metadata)
            for f in snapshot.schema.fields
        ]
    )
    params: dict[str, object] = {"contract": True, "added": change.add, "dropped": list(change.drop)}
    operation = "ADD CONSTRAINT" if change.add else "DROP CONSTRAINT" if change.drop else "CHANGE COLUMN"
    redefine(
        spark,
        snapshot,
        f"{table.schema}.{table.identifier}",
        operation=operation,
        params=params,
        configuration=change.properties(snapshot.metadata.configuration),
        schema=schema,
    )


def _with_contract(
    request: WriteRequest, df: DataFrame, contract: ModelContract | None, spec: ModelSpec
) -> WriteRequest:
    """A new table's request with the contract's NOT NULL columns and CHECK constraints, and the
    columns the config declares (generated, identity, default)."""
    if request.mode != "create_or_replace" or (contract is None and not spec.columns):
        return request
    base = contract.definition(df.schema) if contract is not None else df.schema
    properties = {**request.properties, **(contract.properties() if contract is not None else {})}
    return dataclasses.replace(request, properties=properties, definition=spec.columns.definition(df, base))


def decide(spec: ModelSpec, *, exists: bool, full_refresh: bool) -> Write:
    """The one write a run of a model makes.

    >>> from dbt.adapters.deltamerge.model.spec import WriteSpec
    >>> decide(ModelSpec(WriteSpec("m")), exists=True, full_refresh=False)
    'table_write'
    """
    if spec.cdc is not None:
        return "cdc_apply"  # also the first run and --full-refresh: the same semantics
    if spec.merge is not None and exists and not full_refresh:
        return "merge"
    return "table_write"


_NOT_PREVIEWED: dict[Write, str] = {
    "cdc_apply": "CDC apply models are not previewed",
    "table_write": "a dry run previews merges into an existing table",
}


def locate(
    spark: SparkSession,
    spec: ModelSpec,
    *,
    schema: str,
    identifier: str,
    bound: str | None,
    incremental: bool,
    txn: tuple[str, int],
    catalog: Mapping[str, str] | None = None,
    schema_location: Callable[[str], str] | None = None,
) -> ModelTable:
    """The model's table: its location (``location_root``, its catalog binding, or the schema's folder).

    ``txn``: the write's ``txn`` (``model/txn.py``).
    ``catalog``: the catalog entry's properties the run read (its re-binding does not read them again).
    ``schema_location``: a schema's folder (the caller's lookup; else the catalog's, a round trip).
    A run killed after its commit but before re-binding leaves the table without its catalog
    entry: an incremental model continues the Delta table at its location.
    """
    # The schema's folder only when it decides (one catalog round trip fewer otherwise).
    needs_schema = not spec.write.location_root and not bound
    folder_of = schema_location or (lambda name: str(spark.catalog.getDatabase(name).locationUri))
    location = table_location(
        spec.write,
        identifier=identifier,
        bound=bound,
        schema_location=folder_of(schema) if needs_schema else "",
    )
    path = table_path_of(location)
    exists = bound is not None or (incremental and has_delta_log(path))
    return ModelTable(schema, identifier, path, exists, bound is not None, txn, catalog)


def _apply_changes(
    spark: SparkSession,
    df: DataFrame,
    table: ModelTable,
    spec: ModelSpec,
    *,
    full_refresh: bool,
    contract: ModelContract | None,
) -> WriteResult:
    from dbt.adapters.deltamerge.cdc.apply import apply_changes  # loaded by CDC models only

    assert spec.cdc is not None
    current = load_snapshot(table.path) if table.exists else None
    stored_rows = df.select(*[quote_identifier(c) for c in spec.cdc.stored_columns(df.columns)])
    stored = stored_rows.schema
    # SCD 1 merges the stored columns (on_schema_change applies); SCD 2 keeps its history's schema.
    evolves = current is not None and not full_refresh and spec.cdc.scd_type == 1
    create = plan_write(
        spec.write, materialization="table", table_path=table.path, exists=table.exists, full_refresh=True
    )
    create = _with_contract(create, stored_rows, contract, spec)
    return apply_changes(
        spark,
        df,
        spec.cdc,
        table=current,
        create=create,
        txn=table.txn,
        schema=planned_schema(spec.write, None, current, stored) if evolves and current else None,
        change_data_feed=spec.write.change_data_feed,
        full_refresh=full_refresh,
        deletion_vectors=spec.write.deletion_vectors,
    )


def _merge(spark: SparkSession, df: DataFrame, table: ModelTable, spec: ModelSpec) -> WriteResult:
    merge, snapshot, evolved = _merge_inputs(df, table, spec)
    feed, vectors = spec.write.change_data_feed, spec.write.deletion_vectors
    return merge_into(
        spark,
        df,
        snapshot,
        merge,
        schema=evolved,
        change_data_feed=feed,
        txn=table.txn,
        deletion_vectors=vectors,
    )


def _dry_run(spark: SparkSession, df: DataFrame, table: ModelTable, spec: ModelSpec) -> DryRun:
    merge, snapshot, evolved = _merge_inputs(df, table, spec)
    feed, vectors = spec.write.change_data_feed, spec.write.deletion_vectors
    return dry_run_merge(
        spark, df, snapshot, merge, schema=evolved, change_data_feed=feed, deletion_vectors=vectors
    )


def _merge_inputs(
    df: DataFrame, table: ModelTable, spec: ModelSpec
) -> tuple[MergeSpec, Snapshot, T.StructType | None]:
    """The clause set, the table's current version, and the schema the merge leaves."""
    assert spec.merge is not None
    snapshot = _existing(table, spec)
    return spec.merge, snapshot, planned_schema(spec.write, spec.merge, snapshot, df.schema)


def _table_write(
    spark: SparkSession,
    df: DataFrame,
    table: ModelTable,
    spec: ModelSpec,
    materialization: Materialization,
    *,
    full_refresh: bool,
    batch: Optional[tuple[str, str]],
    contract: ModelContract | None,
) -> WriteResult:
    request = plan_write(
        spec.write,
        materialization=materialization,
        table_path=table.path,
        exists=table.exists,
        full_refresh=full_refresh,
        batch=batch,
    )
    request = _with_contract(dataclasses.replace(request, txn=table.txn), df, contract, spec)
    current = load_snapshot(request.table_path) if request.mode != "create_or_replace" else None
    if current is not None:
        evolved = planned_schema(spec.write, None, current, df.schema)
        request = dataclasses.replace(request, schema=evolved)
        df = only_columns_of(df, evolved or current.schema)
    return write_dataframe(spark, df, request)


def _existing(table: ModelTable, spec: ModelSpec) -> Snapshot:
    snapshot = load_snapshot(table.path)
    if snapshot is None:
        raise ModelWriteError(f"Model '{spec.model}': no Delta table at {table.path} to merge into")
    return snapshot


def only_columns_of(df: DataFrame, schema: T.StructType) -> DataFrame:
    """The result's columns the table has (dbt's ``ignore``: new columns are not written)."""
    existing = {f.name.lower() for f in schema.fields}
    return df.select(
        *[F.col(quote_identifier(f.name)) for f in df.schema.fields if f.name.lower() in existing]
    )
