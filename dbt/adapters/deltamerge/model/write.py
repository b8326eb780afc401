"""One model's write: decided once (CDC apply, merge, or a table write), run, and bound.

The adapter parses a model's config once (``spec.ModelSpec``) and calls ``write_model``; this
module finds the model's table (``locate``), decides which write the run makes
(``decide``: one ``Write``) and runs it with the engine, then re-binds the catalog entry.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge import binding
from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta import (
    Snapshot,
    Stores,
    TableLocation,
    after_commit,
    has_delta_log,
    load_snapshot,
    place_table,
    step_after_commits,
)
from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
from dbt.adapters.deltamerge.delta.log import TableChange, iceberg_enabled
from dbt.adapters.deltamerge.delta.txn import WriteResult
from dbt.adapters.deltamerge.errors import ModelWriteError
from dbt.adapters.deltamerge.merge import DryRun, check_before_creating, dry_run_merge, merge_into
from dbt.adapters.deltamerge.model.change import Write, table_change
from dbt.adapters.deltamerge.model.spec import Materialization, ModelSpec, plan_write

if TYPE_CHECKING:
    from dbt.adapters.deltamerge.model.contract import ModelContract


@dataclass(frozen=True)
class NotWritten:
    """A dry run of a write that is not a merge: nothing was written, for this reason."""

    reason: str


@dataclass(frozen=True)
class ModelTable:
    """Where a model's Delta table is, whether it exists (and is bound in the catalog), the run's ``txn``."""

    schema: str
    identifier: str
    location: TableLocation
    exists: bool
    bound: bool
    txn: tuple[str, int]
    # The catalog entry's table properties as the run found them (None: not read, or changed since).
    catalog: Mapping[str, str] | None = None


@dataclass(frozen=True)
class ModelRun:
    """What dbt asks of one run of a model's materialization."""

    materialization: Materialization
    full_refresh: bool = False
    # A microbatch's window (``spec.batch_window``): the rows it replaces.
    batch: tuple[str, str] | None = None
    # Preview the merge, write nothing (``var('deltamerge_dry_run')``).
    dry_run: bool = False
    # The enforced contract (its columns' NOT NULL and the model's CHECK constraints).
    contract: ModelContract | None = None


def write_model(
    spark: SparkSession,
    df: DataFrame,
    *,
    table: ModelTable,
    spec: ModelSpec,
    run: ModelRun,
    bind: bool = True,
    bound: Callable[[int], None] | None = None,
) -> WriteResult | DryRun | NotWritten:
    """Write one version of the model's Delta table (or merge into it) and re-bind the catalog.

    ``bind=False``: the catalog entry is left to the caller (the local server's warm-up binds
    apart, outside the operations a dbt command may interrupt: ``spark/warmup.py``). ``bound``
    hears the version the entry was bound to (the caller's next read of it then needs no
    catalog round trip to know).

    With an enforced contract (``run.contract``), a new table gets its NOT NULL columns and CHECK
    constraints; an existing one is brought to the contract first (its own commit, existing rows
    checked), and the write is then checked against it.

    Returns:
        What was committed; for a dry run the merge it previews, or ``NotWritten`` when the
        model's write is not a merge into an existing table.
    """
    write = decide(spec, exists=table.exists, full_refresh=run.full_refresh)
    if spec.write.zorder or spec.write.cluster_by:  # df.columns costs a round trip on Spark Connect
        _check_maintenance_columns(spec, df)  # before anything is written, not after the commit
    if spec.merge is not None and write == "table_write":  # the run creating a merge model's table
        check_before_creating(spark, spec.merge, df)
    if run.dry_run and write != "merge":  # answered before the table is read or a change planned
        return NotWritten(_NOT_PREVIEWED[write])
    replaces = _replaces(spec, run, write)
    current = _current(table, spec, write, replaces)
    name = f"{table.schema}.{table.identifier}"
    if current is not None and not replaces and not run.dry_run and iceberg_enabled(spec.write.tblproperties):
        current = _made_uniform(spark, current, name)
    stored = _stored_rows(df, spec)
    contract = run.contract
    change = table_change(spec, write, current, lambda: stored.schema, contract=contract, replaces=replaces)
    if run.dry_run:
        assert spec.merge is not None and current is not None  # a merge's table exists (``_current``)
        return dry_run_merge(spark, df, current, spec.merge, change=change)
    if current is not None:
        from dbt.adapters.deltamerge.delta.commands import commit_before  # a command: loaded by a write

        with step_after_commits("bringing the table to the model's contract"):  # after a REORG
            current = commit_before(spark, current, change, name)  # a contract's constraints, rows checked
    with step_after_commits(f"the model's write ({write.replace('_', ' ')})"):  # after a REORG or constraints
        if write == "cdc_apply":
            result = _apply_changes(spark, (df, stored), table, spec, run, current, change)
        elif write == "merge":
            assert spec.merge is not None and current is not None
            result = merge_into(spark, df, current, spec.merge, change=change, txn=table.txn)
        else:
            result = _table_write(spark, df, table, spec, run, current, change)
    with after_commit("the model's maintenance (auto compaction, clustering, OPTIMIZE)"):
        latest = _maintained(spark, result, spec, change) if result.version is not None else result.snapshot
    if bind and (result.version is not None or write == "table_write" or not table.bound):
        with after_commit(f"binding the new version as {name} in the catalog"):
            schema, identifier, catalog = table.schema, table.identifier, table.catalog
            binding.bind(spark, schema=schema, identifier=identifier, snapshot=latest, current=catalog)
            if bound is not None:
                bound(latest.version)
    return result


def _current(table: ModelTable, spec: ModelSpec, write: Write, replaces: bool) -> Snapshot | None:
    """The table's current version where the run's write works on it (None: no table, or one the
    run replaces without reading it)."""
    if not table.exists or (replaces and write == "table_write"):
        return None
    snapshot = load_snapshot(table.location)
    if snapshot is None and write == "merge":
        raise ModelWriteError(f"Model '{spec.model}': no Delta table at {table.location} to merge into")
    return snapshot


def _made_uniform(spark: SparkSession, current: Snapshot, name: str) -> Snapshot:
    """The table of a model whose config asks for ``table_format: iceberg`` (or a ``database``
    naming an Iceberg catalog) made a UniForm table in place first, where it is not one yet: one
    commit of its own, rows unchanged (``commands.upgrade_uniform``, as ``REORG ... UPGRADE
    UNIFORM``); the run's write then commits on it and keeps its Iceberg side current."""
    if iceberg_enabled(current.metadata.configuration):
        return current
    from dbt.adapters.deltamerge.delta.commands import upgrade_uniform  # a command: loaded by a write

    return upgrade_uniform(spark, current, name).snapshot


def _stored_rows(df: DataFrame, spec: ModelSpec) -> DataFrame:
    """The rows the table stores: CDC apply's event columns but its operation and sequence columns."""
    if spec.cdc is None:
        return df
    return df.select(*[quote_identifier(c) for c in spec.cdc.stored_columns(df.columns)])


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


def _maintained(spark: SparkSession, result: WriteResult, spec: ModelSpec, change: TableChange) -> Snapshot:
    """The table after the maintenance a committed write asks for: auto compaction (the table's or
    the model's ``auto_optimize``), the model's clustering columns (``cluster_by`` changed on an
    existing table), then the model's OPTIMIZE (``optimize_after_run``, ``zorder``, ``cluster_by``:
    a clustered table's OPTIMIZE clusters the files not clustered yet)."""
    from dbt.adapters.deltamerge.delta.commands import (  # commands
        auto_compact,
        auto_compact_enabled,
        commit_after,
    )

    compacted = auto_compact(spark, result, enabled=auto_compact_enabled(spec.write.tblproperties))
    latest = compacted if compacted is not None and compacted.version is not None else result
    reclustered = commit_after(latest.snapshot, change, spec.model)  # the config's new clustering columns
    latest = reclustered if reclustered is not None and reclustered.version is not None else latest
    if spec.write.optimize_after_run or spec.write.zorder or change.cluster_by:
        from dbt.adapters.deltamerge.delta.commands import OptimizeOptions, optimize

        snapshot = latest.snapshot
        options = OptimizeOptions.for_table(
            dict(snapshot.metadata.configuration), zorder_by=spec.write.zorder
        )
        optimized = optimize(spark, snapshot, snapshot.files, options)
        latest = optimized if optimized.version is not None else latest
    return latest.snapshot


def _replaces(spec: ModelSpec, run: ModelRun, write: Write) -> bool:
    """Whether the run writes a new definition of the table (CREATE OR REPLACE)."""
    if write == "cdc_apply":
        return run.full_refresh
    if write == "merge":
        return False
    return run.materialization != "incremental" or run.full_refresh


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


@dataclass(frozen=True)
class CatalogEntry:
    """Where a model's relation stands in the catalog when its run starts."""

    schema: str
    identifier: str
    # The table the entry binds (None: no entry of ours).
    bound: str | None = None
    # The entry's table properties as the run read them (None: not read, or changed since; the
    # binding then reads them again).
    properties: Mapping[str, str] | None = None


def locate(
    spark: SparkSession,
    spec: ModelSpec,
    entry: CatalogEntry,
    *,
    incremental: bool,
    txn: tuple[str, int],
    stores: Stores,
    schema_folder: Callable[[str], str] | None = None,
) -> ModelTable:
    """The model's table: its location (``delta.place_table``: ``location_root``, its catalog
    binding, or the schema's folder), reached through ``stores`` (the invocation's).

    ``txn``: the write's ``txn`` (``model/txn.py``).
    ``schema_folder``: a schema's folder (the command's lookup; else the catalog's, a round trip),
    asked only when it decides.
    A run killed after its commit but before re-binding leaves the table without its catalog
    entry: an incremental model continues the Delta table at its location.
    """
    schema, identifier, bound = entry.schema, entry.identifier, entry.bound
    root = spec.write.location_root
    folder_of = schema_folder or (lambda name: binding.schema_folder(spark, name))
    location = place_table(
        identifier,
        explicit=os.path.join(root, identifier) if root else None,
        bound=bound,
        schema_folder=lambda: folder_of(schema),
        stores=stores,
    )
    exists = bound is not None or (incremental and has_delta_log(location))
    return ModelTable(schema, identifier, location, exists, bound is not None, txn, entry.properties)


def _apply_changes(
    spark: SparkSession,
    rows: tuple[DataFrame, DataFrame],
    table: ModelTable,
    spec: ModelSpec,
    run: ModelRun,
    current: Snapshot | None,
    change: TableChange,
) -> WriteResult:
    """CDC apply of the events (``rows``: the events, and the columns of them the table stores)."""
    from dbt.adapters.deltamerge.cdc.apply import apply_changes  # loaded by CDC models only

    assert spec.cdc is not None
    events, stored = rows
    create = plan_write(
        spec.write, materialization="table", location=table.location, exists=table.exists, full_refresh=True
    )
    create = _with_contract(create, stored, run.contract, spec)
    return apply_changes(
        spark,
        events,
        spec.cdc,
        table=current,
        create=create,
        txn=table.txn,
        change=change,
        full_refresh=run.full_refresh,
    )


def _table_write(
    spark: SparkSession,
    df: DataFrame,
    table: ModelTable,
    spec: ModelSpec,
    run: ModelRun,
    current: Snapshot | None,
    change: TableChange,
) -> WriteResult:
    """A table write (``plan_write``: create or replace, append, overwrite partitions, a batch,
    replace by key)."""
    request = plan_write(
        spec.write,
        materialization=run.materialization,
        location=table.location,
        exists=table.exists,
        full_refresh=run.full_refresh,
        batch=run.batch,
    )
    request = dataclasses.replace(request, txn=table.txn, change=change)
    request = _with_contract(request, df, run.contract, spec)
    if request.mode != "create_or_replace" and current is not None:
        df = only_columns_of(df, change.schema or current.schema)  # ``ignore``: new columns not written
    return write_dataframe(spark, df, request)


def only_columns_of(df: DataFrame, schema: T.StructType) -> DataFrame:
    """The result's columns the table has (dbt's ``ignore``: new columns are not written)."""
    existing = {f.name.lower() for f in schema.fields}
    return df.select(
        *[F.col(quote_identifier(f.name)) for f in df.schema.fields if f.name.lower() in existing]
    )
