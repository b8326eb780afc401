"""The dbt adapter: dbt-spark's, with Delta writes run by our engine.

A thin facade. Materializations call one ``@available`` method with plain values; the
method parses the model's config once (``model.spec.ModelSpec``), has ``model.write.write_model``
decide and run the write on the connection's Spark session inside the model's error boundary,
and returns an ``AdapterResponse`` carrying Delta's metrics.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

from dbt.adapters.base import ConstraintSupport, available
from dbt.adapters.base.relation import BaseRelation
from dbt.adapters.contracts.connection import AdapterResponse
from dbt.adapters.contracts.relation import RelationType
from dbt.adapters.spark.impl import SparkConfig
from dbt_common.contracts.constraints import ConstraintType
from dbt_common.exceptions import DbtRuntimeError
from pyspark.sql import SparkSession

from dbt.adapters.deltamerge import binding
from dbt.adapters.deltamerge.common.config_values import dry_run_var
from dbt.adapters.deltamerge.connections import DeltaMergeConnectionManager
from dbt.adapters.deltamerge.delta import load_snapshot
from dbt.adapters.deltamerge.delta.log import DEFAULT_RETENTION_HOURS
from dbt.adapters.deltamerge.delta.txn import WriteResult
from dbt.adapters.deltamerge.docs_catalog import DocsCatalogAdapter, information
from dbt.adapters.deltamerge.errors import model_errors, named_errors
from dbt.adapters.deltamerge.invocation import current
from dbt.adapters.deltamerge.merge import DryRun
from dbt.adapters.deltamerge.model.response import dry_run_response, not_written_response, write_response
from dbt.adapters.deltamerge.model.spec import Materialization, ModelSpec, batch_window, with_profile
from dbt.adapters.deltamerge.model.write import (
    CatalogEntry,
    ModelRun,
    ModelTable,
    NotWritten,
    locate,
    write_model,
)
from dbt.adapters.deltamerge.relation import DeltaMergeRelation
from dbt.adapters.deltamerge.statements.parse.text import SqlText
from dbt.adapters.deltamerge.statements.run.travel import TRAVEL_MARK, with_versions


@dataclass
class DeltaMergeConfig(SparkConfig):
    """Model configs this adapter adds to dbt-spark's."""

    file_format: str = "delta"
    tblproperties: dict[str, str] | None = None


class DeltaMergeAdapter(DocsCatalogAdapter):
    """dbt-spark's adapter whose Delta materializations run on the deltamerge engine."""

    ConnectionManager = DeltaMergeConnectionManager
    Relation = DeltaMergeRelation
    AdapterSpecificConfigs = DeltaMergeConfig
    # Delta enforces NOT NULL and CHECK on every write; the others are informational (dbt warns).
    CONSTRAINT_SUPPORT = {
        ConstraintType.check: ConstraintSupport.ENFORCED,
        ConstraintType.not_null: ConstraintSupport.ENFORCED,
        ConstraintType.unique: ConstraintSupport.NOT_ENFORCED,
        ConstraintType.primary_key: ConstraintSupport.NOT_ENFORCED,
        ConstraintType.foreign_key: ConstraintSupport.NOT_ENFORCED,
        ConstraintType.custom: ConstraintSupport.NOT_SUPPORTED,
    }

    @classmethod
    def quote(cls, identifier: str) -> str:
        """Backticks; a classmethod as dbt's (dbt-spark's instance method breaks dbt's contract
        DDL of a column with ``quote: true``)."""
        return f"`{identifier}`"

    def _build_spark_relation_list(self, row_list: Any, relation_info_func: Any) -> list[BaseRelation]:
        relations = super()._build_spark_relation_list(row_list, relation_info_func)
        catalog = current().catalog  # the first read of each name needs no catalog round trip
        for relation in relations:
            if information(relation):
                catalog.listed(str(relation.schema), str(relation.identifier), information(relation))
        # Our bound tables show "Provider: parquet" (a table whose files carry deletion vectors is
        # a view, over a files table of its own that dbt never sees): their marker makes them Delta.
        return [
            r.incorporate(is_delta=True, type=RelationType.Table)
            if binding.listed_as_ours(information(r))
            else r
            for r in relations
            if f"{binding.FILES_OF_PROPERTY}=" not in information(r)
            and TRAVEL_MARK not in str(r.identifier)  # an old version's entry (time travel)
        ]

    @available
    def delta_dry_run(self, value: Any) -> bool:
        """Whether the ``deltamerge_dry_run`` var asks for a dry run (an error for a non-boolean)."""
        try:
            return dry_run_var(value)
        except ValueError as error:
            raise DbtRuntimeError(str(error)) from error

    @available
    def delta_file_format(self, relation: BaseRelation, config: dict[str, Any], materialization: str) -> str:
        """The model's ``file_format``, once every key of its config has been read: a wrong value of
        any key fails the model naming it before anything runs or is dropped."""
        model = str(relation.identifier)
        with model_errors(model):
            return self._spec(model, config, materialization, relation).write.file_format

    def _spec(
        self, model: str, config: dict[str, Any], materialization: str, relation: BaseRelation | None = None
    ) -> ModelSpec:
        """The model's config parsed once, over the profile (its ``table_format``, its Iceberg
        catalogs: a model whose ``database`` names one is registered there)."""
        creds = self.config.credentials
        name = (relation.database, str(relation.schema), model) if relation is not None else (None, "", model)
        config = dict(
            with_profile(
                model,
                config,
                table_format=creds.table_format,
                name=name,
                catalogs=sorted(creds.iceberg_catalogs or {}),
            )
        )
        return ModelSpec.from_config(model, config, materialization)

    @available
    def delta_materialize(
        self, relation: BaseRelation, sql: str, config: dict[str, Any], run: dict[str, Any]
    ) -> AdapterResponse:
        """Run ``sql`` (a Python model's compiled code for ``run.language == 'python'``) and write
        its rows as a new version of the model's Delta table (with ``run.dry_run``: preview a
        merge, write nothing).

        ``run``, from the materialization: ``materialization`` (``table`` or ``incremental``),
        ``full_refresh``, ``batch_start`` / ``batch_end`` (a microbatch's window), ``language``,
        ``dry_run``, ``contract`` (the enforced contract's columns and model constraints)."""
        model = str(relation.identifier)
        with model_errors(model):
            # Config first: its errors cost no Spark work.
            materialization = str(run["materialization"])
            spec = self._spec(model, config, materialization, relation)
            contract = run.get("contract")
            model_run = ModelRun(
                materialization=cast(Materialization, materialization),  # our macros pass one of them
                full_refresh=bool(run.get("full_refresh")),
                batch=batch_window(run.get("batch_start"), run.get("batch_end")),
                dry_run=bool(run.get("dry_run")),
                contract=_contract(model, contract) if contract is not None else None,
            )
            spark = self.spark_session()
            table = self._model_table(spark, relation, spec, incremental=materialization == "incremental")
            python, invocation = run.get("language") == "python", current()
            if not python:  # the tables it reads, at their latest versions (a Python
                text = SqlText(sql)  # one lex and one parse for both questions
                invocation.catalog.refresh_sql(spark, text)  # model's ref() and source() do the same),
                sql = with_versions(spark, text, invocation.stores)  # and those it reads AS OF
            rows = _python_model(spark, sql, model) if python else spark.sql(sql)
            done = write_model(spark, rows, table=table, spec=spec, run=model_run, bound=_bound_as(table))
            if isinstance(done, NotWritten):
                return not_written_response(done.reason)
            return dry_run_response(done) if isinstance(done, DryRun) else write_response(done)

    def _model_table(
        self, spark: SparkSession, relation: BaseRelation, spec: ModelSpec, *, incremental: bool
    ) -> ModelTable:
        """The model's table, its catalog entry re-bound first if other writers committed since."""
        schema, identifier = str(relation.schema), str(relation.identifier)
        invocation = current()
        found, unlisted = self._binding(spark, relation)
        # The model's SQL may read {{ this }}: it must see versions other writers made.
        rebound = found is not None and binding.refresh(
            spark, schema=schema, identifier=identifier, table=found.location, version=found.version
        )
        if found is not None:  # what {{ this }} is: no catalog look-up when the SQL reads it
            invocation.catalog.bound(schema, identifier, found.location, None if rebound else found.version)
        # An entry dbt's cache does not list has no properties for the binding to keep: it is
        # not read again before the binding (one catalog round trip fewer for each new table).
        catalog = {} if unlisted else found.properties if found and not rebound else None
        return locate(
            spark,
            spec,
            CatalogEntry(schema, identifier, found.table_path if found else None, catalog),
            incremental=incremental,
            txn=invocation.next_txn(schema, identifier),
            stores=invocation.stores,
            schema_folder=lambda name: invocation.catalog.schema_folder(spark, name),
        )

    def _binding(self, spark: SparkSession, relation: BaseRelation) -> tuple[binding.Binding | None, bool]:
        """The relation's catalog entry as dbt's relation cache lists it (``show table extended``
        at the run's start, with its table properties), else read from the catalog (a round trip);
        and whether the cache lists no relation of that name at all.

        The cache is what dbt itself decides by (whether the model is incremental); an entry a
        concurrent writer re-bound since is bound again by ``binding.refresh``, as it would be anyway.
        """
        schema, identifier, stores = str(relation.schema), str(relation.identifier), current().stores
        if self._schema_is_cached(relation.database, schema):
            cached = self.get_relation(cast(str, relation.database), schema, identifier)
            if cached is None:
                return None, True
            try:
                listing = information(cached)
                return binding.listed(listing, stores, delta=binding.delta_catalog(spark)), False
            except ValueError:  # listed without its properties (a relation dbt added since)
                pass
        return binding.binding(spark, schema, identifier, stores), False

    @available
    def delta_seed(self, relation: BaseRelation, agate_table: Any, config: dict[str, Any]) -> AdapterResponse:
        """Write a seed's rows as a new version of its Delta table."""
        from dbt.adapters.deltamerge.model.seed import seed_dataframe  # loaded by seeds only

        model = str(relation.identifier)
        with model_errors(model):
            spec = self._spec(model, config, "seed", relation)
            spark = self.spark_session()
            df = seed_dataframe(spark, agate_table, self._seed_types(agate_table, config))
            table = self._model_table(spark, relation, spec, incremental=False)
            seed_run = ModelRun(materialization="seed", full_refresh=True)
            done = write_model(spark, df, table=table, spec=spec, run=seed_run, bound=_bound_as(table))
            assert isinstance(done, WriteResult)  # only a dry run writes nothing
            return write_response(done)

    @available
    def delta_convert(
        self,
        path: Any = None,
        relation: Any = None,
        partition_by: Any = None,
        statistics: Any = True,
        relation_name: Any = None,
    ) -> dict[str, Any]:
        """CONVERT TO DELTA of a parquet folder or catalog table; the result as plain values."""
        from dbt.adapters.deltamerge import operations  # loaded by the operations only

        with named_errors(f"convert_to_delta of {relation or path}"):
            result = operations.convert(
                self.spark_session(),
                path=path,
                relation=relation,
                partition_by=partition_by,
                statistics=statistics,
                relation_name=relation_name,
            )
        current().catalog.forget()  # a registered name is one of our entries now, maybe of another table
        return result.as_output()

    @available
    def delta_table_changes(
        self, relation: BaseRelation, starting_version: Any, ending_version: Any = None
    ) -> str:
        """A temporary view of ``relation``'s change data feed; its name, for a model's SQL."""
        subject = f"table_changes({relation}, {starting_version}, {ending_version})"
        return cast(
            str, self._operation(subject, "table_changes", relation, starting_version, ending_version)
        )

    def _operation(self, subject: str, name: str, *args: Any) -> Any:
        """Run ``operations.<name>`` on the connection's session inside an error boundary (the
        operations module loads with the first one)."""
        from dbt.adapters.deltamerge import operations

        with named_errors(subject):
            return getattr(operations, name)(self.spark_session(), *args)

    @available
    def delta_vacuum(
        self,
        relation: Any,
        retain_hours: Any = DEFAULT_RETENTION_HOURS,
        dry_run: Any = False,
        enforce_retention: Any = True,
    ) -> dict[str, Any]:
        """VACUUM of a model's Delta table (a relation, or ``"schema.table"``)."""
        args = (relation, retain_hours, dry_run, enforce_retention)
        return self._operation(f"vacuum of {relation}", "vacuum_table", *args)

    @available
    def delta_iceberg_sync(self, relation: Any) -> dict[str, Any]:
        """The Iceberg side of a UniForm table brought to its latest Delta version."""
        return self._operation(f"iceberg_sync of {relation}", "iceberg_sync_table", relation)

    @available
    def delta_unregister(self, relation: BaseRelation) -> bool:
        """Drop a model's table from the Iceberg catalog it is registered in (before dbt drops it)."""
        from dbt.adapters.deltamerge.model import registration  # loaded by a drop

        with named_errors(f"drop of {relation}"):
            schema, identifier = str(relation.schema), str(relation.identifier)
            return registration.unregister_dropped(self.spark_session(), schema, identifier, current().stores)

    @available
    def delta_reorg(self, relation: Any, where: Any = None) -> dict[str, Any]:
        """REORG TABLE ... APPLY (PURGE) of a model's Delta table (a relation, or ``"schema.table"``)."""
        return self._operation(f"reorg of {relation}", "reorg_table", relation, where)

    @available
    def delta_optimize(
        self, relation: Any, where: Any = None, zorder_by: Any = None, dry_run: Any = False
    ) -> dict[str, Any]:
        """OPTIMIZE [ZORDER BY] of a model's Delta table (a relation, or ``"schema.table"``)."""
        return self._operation(
            f"optimize of {relation}", "optimize_table", relation, where, zorder_by, dry_run
        )

    @available
    def delta_recover_binding(self, relation: BaseRelation) -> bool:
        """Bind again a Delta table whose catalog entry a killed run left dropped; True if it did."""
        from dbt.adapters.deltamerge.statements.run.statement import (
            interrupted_table,  # the statements' engine
        )

        with named_errors(f"binding of {relation}"):
            spark = self.spark_session()
            schema, identifier = str(relation.schema), str(relation.identifier)
            invocation = current()
            folder = partial(invocation.catalog.schema_folder, spark, schema)
            location = interrupted_table(spark, schema, identifier, folder, invocation.stores)
            snapshot = load_snapshot(location) if location is not None else None
            if snapshot is None:
                return False
            binding.bind(spark, schema=schema, identifier=identifier, snapshot=snapshot)
            self.cache_added(relation.incorporate(type="table", is_delta=True))
            return True

    @available
    def delta_persist_docs(
        self, relation: Any, description: str | None, column_comments: dict[str, str]
    ) -> int | None:
        """Descriptions into the Delta table's metadata (and its catalog entry); the version, if any."""
        comments = dict(column_comments or {})
        return self._operation(f"persist_docs of {relation}", "persist_docs", relation, description, comments)

    @available
    def listagg_sql(
        self, measure: str, delimiter_text: str, order_by_clause: str | None, limit_num: int | None
    ) -> str:
        """dbt's ``listagg`` in Spark 4 SQL, keeping ``order_by_clause`` (see ``cross_db``)."""
        from dbt.adapters.deltamerge import cross_db  # sqlglot's dialects: loaded by listagg only

        return cross_db.listagg_sql(measure, delimiter_text, order_by_clause, limit_num)

    def _seed_types(self, agate_table: Any, config: dict[str, Any]) -> list[str]:
        overrides = {k.lower(): v for k, v in (config.get("column_types") or {}).items()}
        return [
            overrides.get(name.lower()) or self.convert_type(agate_table, idx)
            for idx, name in enumerate(agate_table.column_names)
        ]


def _contract(model: str, contract: dict[str, Any]) -> Any:
    """The model's enforced contract (``model.contract``, loaded by models that have one)."""
    from dbt.adapters.deltamerge.model.contract import ModelContract

    return ModelContract.from_node(model, contract.get("columns") or {}, contract.get("constraints") or [])


def _python_model(spark: SparkSession, code: str, model: str) -> Any:
    """A Python model's DataFrame (``python_models``, loaded by Python models only)."""
    from dbt.adapters.deltamerge.python_models import python_model_frame

    return python_model_frame(spark, code, model=model)


def _bound_as(table: ModelTable) -> Callable[[int], None]:
    """What a model write calls with the version it bound the model's entry to: the invocation's
    catalog knows it, so the next statement reading the model asks the catalog nothing when no
    other writer committed since (``statements/run/fresh.py``)."""

    def bound(version: int) -> None:
        current().catalog.bound(table.schema, table.identifier, table.location, version)

    return bound
