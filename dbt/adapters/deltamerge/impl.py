"""The dbt adapter: dbt-spark's, with Delta writes run by our engine.

A thin facade. Materializations call one ``@available`` method with plain values; the
method parses config (``materialize.WriteSpec``), runs the engine on the connection's
Spark session inside the model's error boundary, re-binds the catalog, and returns an
``AdapterResponse`` carrying Delta's metrics.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Optional

from dbt.adapters.base import available
from dbt.adapters.base.relation import BaseRelation
from dbt.adapters.contracts.connection import AdapterResponse
from dbt.adapters.spark.impl import SparkAdapter, SparkConfig
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge import catalog, conversion, cross_db, docs_catalog, operations, statements
from dbt.adapters.deltamerge.cdc.apply import apply_changes
from dbt.adapters.deltamerge.cdc.spec import CdcSpec
from dbt.adapters.deltamerge.connections import DeltaMergeConnectionManager, session_of
from dbt.adapters.deltamerge.delta.paths import table_path_of
from dbt.adapters.deltamerge.delta.snapshot import has_delta_log, load_snapshot
from dbt.adapters.deltamerge.delta.vacuum import DEFAULT_RETENTION_HOURS
from dbt.adapters.deltamerge.delta.write import WriteResult, write_dataframe
from dbt.adapters.deltamerge.errors import ModelWriteError, model_errors, named_errors
from dbt.adapters.deltamerge.materialize import (
    MERGE_STRATEGIES,
    WriteSpec,
    is_merge,
    plan_write,
    table_location,
)
from dbt.adapters.deltamerge.merge.clauses import MergeSpec
from dbt.adapters.deltamerge.merge.executor import merge_into
from dbt.adapters.deltamerge.python_models import python_model_frame
from dbt.adapters.deltamerge.schema_change import planned_schema
from dbt.adapters.deltamerge.sql import quote_identifier


@dataclass
class DeltaMergeConfig(SparkConfig):
    """Model configs this adapter adds to dbt-spark's."""

    file_format: str = "delta"
    tblproperties: Optional[Dict[str, str]] = None


@dataclass
class DeltaAdapterResponse(AdapterResponse):
    """dbt's response plus the Delta version written and Delta's operation metrics."""

    delta_version: Optional[int] = None
    delta_operation: Optional[str] = None
    delta_table_path: Optional[str] = None
    operation_metrics: Dict[str, int] = field(default_factory=dict)

    def __post_serialize__(
        self, dct: Dict[str, Any], context: Optional[Dict[str, Any]] = None
    ) -> Dict[str, Any]:
        # run_results.json shows each metric under its Delta name, next to rows_affected.
        dct = super().__post_serialize__(dct, context)
        dct.update(self.operation_metrics)
        return dct


class DeltaMergeAdapter(SparkAdapter):
    """dbt-spark's adapter whose Delta materializations run on the deltamerge engine."""

    ConnectionManager = DeltaMergeConnectionManager
    AdapterSpecificConfigs = DeltaMergeConfig

    def _build_spark_relation_list(self, row_list: Any, relation_info_func: Any) -> list[BaseRelation]:
        relations = super()._build_spark_relation_list(row_list, relation_info_func)
        # Our bound tables show "Provider: parquet"; their marker property makes them Delta.
        return [
            r.incorporate(is_delta=True)
            if catalog.LOCATION_PROPERTY in (getattr(r, "information", None) or "")
            else r
            for r in relations
        ]

    def parse_columns_from_information(self, relation: BaseRelation) -> list[Any]:
        columns = super().parse_columns_from_information(relation)
        snapshot = docs_catalog.delta_snapshot(getattr(relation, "information", None) or "")
        if snapshot is None:
            return columns
        stats = docs_catalog.catalog_stats(snapshot)
        return [dataclasses.replace(c, table_stats=stats) for c in columns]

    def _get_columns_for_catalog(self, relation: BaseRelation) -> Iterable[Dict[str, Any]]:
        with docs_catalog.held_snapshot(getattr(relation, "information", None) or "") as snapshot:
            rows = list(super()._get_columns_for_catalog(relation))  # its statistics: the same snapshot
        if snapshot is not None:
            description, comments = docs_catalog.catalog_comments(snapshot)
        elif relation.is_view:
            description, comments = docs_catalog.view_comments(
                self.spark_session(), str(relation.schema), str(relation.identifier)
            )
        else:  # dbt-spark's catalog has no comments for other tables
            description, comments = None, {}
        for row in rows:
            # dbt-spark numbers columns from 0; dbt's catalog (and every other adapter) from 1.
            row["column_index"] = int(row["column_index"]) + 1
            if snapshot is not None or relation.is_view:
                row["table_comment"] = description
                row["column_comment"] = comments.get(str(row.get("column_name") or "").lower())
            yield row

    def spark_session(self) -> SparkSession:
        """The Spark session of this thread's connection (embedded or Spark Connect)."""
        connection = self.connections.get_thread_connection()
        _ = connection.handle  # opens the connection if needed
        return session_of(connection)

    @available
    def delta_materialize(
        self,
        relation: BaseRelation,
        sql: str,
        config: Dict[str, Any],
        materialization: str,
        full_refresh: bool = False,
        batch_start: Any = None,
        batch_end: Any = None,
        language: str = "sql",
    ) -> AdapterResponse:
        """Run ``sql`` (a Python model's compiled code for ``language='python'``) and write its
        rows as a new version of the model's Delta table."""
        model = str(relation.identifier)
        spec = WriteSpec.from_config(model, config)
        # A project-wide strategy also reaches table models; only incremental ones merge.
        merging = materialization == "incremental" and spec.strategy in MERGE_STRATEGIES
        cdc_spec = CdcSpec.from_config(model, config) if merging and CdcSpec.applies(config) else None
        merge_spec = MergeSpec.from_config(model, config) if merging and cdc_spec is None else None
        with model_errors(model):
            spark = self.spark_session()
            schema, identifier = str(relation.schema), str(relation.identifier)
            found = catalog.binding(spark, schema, identifier)
            bound = found[0] if found else None
            if found is not None:
                # The model's SQL may read {{ this }}: it must see versions other writers made.
                catalog.refresh(
                    spark, schema=schema, identifier=identifier, table_path=found[0], version=found[1]
                )
            return self._write(
                spark,
                python_model_frame(spark, sql, model=model) if language == "python" else spark.sql(sql),
                relation,
                spec,
                materialization,
                full_refresh,
                _batch(batch_start, batch_end),
                merge_spec,
                bound=bound,
                cdc_spec=cdc_spec,
            )

    @available
    def delta_seed(self, relation: BaseRelation, agate_table: Any, config: Dict[str, Any]) -> AdapterResponse:
        """Write a seed's rows as a new version of its Delta table."""
        model = str(relation.identifier)
        spec = WriteSpec.from_config(model, config)
        with model_errors(model):
            spark = self.spark_session()
            df = seed_dataframe(spark, agate_table, self._seed_types(agate_table, config))
            found = catalog.binding(spark, str(relation.schema), str(relation.identifier))
            return self._write(
                spark, df, relation, spec, "seed", True, None, bound=found[0] if found else None
            )

    @available
    def delta_convert(
        self,
        path: Optional[str] = None,
        relation: Optional[str] = None,
        partition_by: Optional[str] = None,
        statistics: bool = True,
        relation_name: Optional[str] = None,
    ) -> Dict[str, Any]:
        """CONVERT TO DELTA of a parquet folder or catalog table; the result as plain values."""
        with named_errors(f"convert_to_delta of {relation or path}"):
            result = conversion.convert(
                self.spark_session(),
                path=path,
                relation=relation,
                partition_by=partition_by,
                statistics=bool(statistics),
                relation_name=relation_name,
            )
        return dataclasses.asdict(result)

    @available
    def delta_table_changes(
        self, relation: BaseRelation, starting_version: int, ending_version: Optional[int] = None
    ) -> str:
        """A temporary view of ``relation``'s change data feed; its name, for a model's SQL."""
        subject = f"table_changes({relation}, {starting_version}, {ending_version})"
        with named_errors(subject):
            return operations.table_changes(self.spark_session(), relation, starting_version, ending_version)

    @available
    def delta_vacuum(
        self,
        relation: Any,
        retain_hours: float = DEFAULT_RETENTION_HOURS,
        dry_run: bool = False,
        enforce_retention: bool = True,
    ) -> Dict[str, Any]:
        """VACUUM of a model's Delta table (a relation, or ``"schema.table"``)."""
        with named_errors(f"vacuum of {relation}"):
            return operations.vacuum_table(
                self.spark_session(), relation, float(retain_hours), bool(dry_run), bool(enforce_retention)
            )

    @available
    def delta_recover_binding(self, relation: BaseRelation) -> bool:
        """Bind again a Delta table whose catalog entry a killed run left dropped; True if it did."""
        with named_errors(f"binding of {relation}"):
            spark = self.spark_session()
            schema, identifier = str(relation.schema), str(relation.identifier)
            path = statements.interrupted_table(spark, schema, identifier)
            snapshot = load_snapshot(path) if path is not None else None
            if snapshot is None:
                return False
            catalog.bind(spark, schema=schema, identifier=identifier, snapshot=snapshot)
            self.cache_added(relation.incorporate(type="table", is_delta=True))
            return True

    @available
    def delta_persist_docs(
        self, relation: Any, description: Optional[str], column_comments: Dict[str, str]
    ) -> Optional[int]:
        """Descriptions into the Delta table's metadata (and its catalog entry); the version, if any."""
        with named_errors(f"persist_docs of {relation}"):
            return operations.persist_docs(
                self.spark_session(), relation, description, dict(column_comments or {})
            )

    @available
    def listagg_sql(
        self, measure: str, delimiter_text: str, order_by_clause: Optional[str], limit_num: Optional[int]
    ) -> str:
        """dbt's ``listagg`` in Spark 4 SQL, keeping ``order_by_clause`` (see ``cross_db``)."""
        return cross_db.listagg_sql(measure, delimiter_text, order_by_clause, limit_num)

    def _seed_types(self, agate_table: Any, config: Dict[str, Any]) -> list[str]:
        overrides = {k.lower(): v for k, v in (config.get("column_types") or {}).items()}
        return [
            overrides.get(name.lower()) or self.convert_type(agate_table, idx)
            for idx, name in enumerate(agate_table.column_names)
        ]

    def _write(
        self,
        spark: SparkSession,
        df: DataFrame,
        relation: BaseRelation,
        spec: WriteSpec,
        materialization: Any,
        full_refresh: bool,
        batch: Optional[tuple[str, str]],
        merge_spec: Optional[MergeSpec] = None,
        *,
        bound: Optional[str],
        cdc_spec: Optional[CdcSpec] = None,
    ) -> AdapterResponse:
        """Write one version (or merge) and re-bind the catalog; ``bound`` is the current binding."""
        schema, identifier = str(relation.schema), str(relation.identifier)
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
        exists = bound is not None or (
            materialization == "incremental" and has_delta_log(table_path_of(path))
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
                txn=_run_txn(schema, identifier),
                plan_schema=lambda main, snapshot, result: planned_schema(spec, main, snapshot, result),
                full_refresh=full_refresh,
            )
            if result.version is not None or bound is None:
                catalog.bind(spark, schema=schema, identifier=identifier, snapshot=result.snapshot)
            return _response(result)
        if merge_spec is not None and is_merge(
            spec, materialization=materialization, exists=exists, full_refresh=full_refresh
        ):
            snapshot = load_snapshot(table_path_of(path))
            if snapshot is None:
                raise ModelWriteError(f"Model '{spec.model}': no Delta table at {path} to merge into")
            if spec.change_data_feed and not merge_spec.change_data_feed:
                merge_spec = dataclasses.replace(merge_spec, change_data_feed=True)
            evolved = planned_schema(spec, merge_spec, snapshot, df.schema)
            result = merge_into(
                spark, df, snapshot, merge_spec, schema=evolved, txn=_run_txn(schema, identifier)
            )
            if result.version is not None:
                catalog.bind(spark, schema=schema, identifier=identifier, snapshot=result.snapshot)
            return _response(result)
        request = plan_write(
            spec,
            materialization=materialization,
            table_path=table_path_of(path),
            exists=exists,
            full_refresh=full_refresh,
            batch=batch,
        )
        request = dataclasses.replace(request, txn=_run_txn(schema, identifier))
        current = load_snapshot(request.table_path) if request.mode != "create_or_replace" else None
        if current is not None:
            evolved = planned_schema(spec, None, current, df.schema)
            request = dataclasses.replace(request, schema=evolved)
            df = _only_columns_of(df, evolved or current.schema)
        result = write_dataframe(spark, df, request)
        catalog.bind(spark, schema=schema, identifier=identifier, snapshot=result.snapshot)
        return _response(result)


_WRITES: Dict[str, Any] = {"invocation": None, "counts": {}}
_WRITES_LOCK = threading.Lock()


def _run_txn(schema: str, identifier: str) -> tuple[str, int]:
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


def _only_columns_of(df: DataFrame, schema: T.StructType) -> DataFrame:
    """The result's columns the table has (dbt's ``ignore``: new columns are not written)."""
    existing = {f.name.lower() for f in schema.fields}
    return df.select(
        *[F.col(quote_identifier(f.name)) for f in df.schema.fields if f.name.lower() in existing]
    )


def seed_dataframe(spark: SparkSession, agate_table: Any, types: list[str]) -> DataFrame:
    """A DataFrame of a seed's rows, each column cast to its dbt-resolved type."""
    names = list(agate_table.column_names)
    rows = [tuple(None if v is None else _seed_text(v) for v in row) for row in agate_table.rows]
    raw = spark.createDataFrame(rows, T.StructType([T.StructField(n, T.StringType()) for n in names]))
    return raw.select(
        *[F.expr(f"cast({quote_identifier(n)} as {t})").alias(n) for n, t in zip(names, types, strict=True)]
    )


def _seed_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    return str(value)


def _batch(start: Any, end: Any) -> Optional[tuple[str, str]]:
    if start is None or end is None:
        return None
    return _timestamp_text(start), _timestamp_text(end)


def _timestamp_text(value: Any) -> str:
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return value.isoformat(sep=" ")
    return str(value)


def _response(result: WriteResult) -> DeltaAdapterResponse:
    if result.operation == "MERGE":
        m = result.metrics
        rows = m["numTargetRowsInserted"] + m["numTargetRowsUpdated"] + m["numTargetRowsDeleted"]
    else:
        rows = result.metrics.get("numOutputRows", 0)
    return DeltaAdapterResponse(
        _message=(
            f"OK {result.operation}: Delta version {result.version}"
            if result.version is not None
            else f"OK {result.operation}: no change, Delta version stays {result.snapshot.version}"
        ),
        code=result.operation,
        rows_affected=rows,
        delta_version=result.version,
        delta_operation=result.operation,
        delta_table_path=result.snapshot.table_path,
        operation_metrics=dict(result.metrics),
    )
