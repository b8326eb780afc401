"""From a model's config to one Delta write: parsed once, every key before any decision.

``ModelSpec.from_config`` reads every key this adapter knows (``keys.KEYS``: a value of the
wrong kind fails naming the key, wherever the key would be used), then the table write
(``WriteSpec``) and, for an incremental model of the ``delta_merge`` strategy, its clause set
(``MergeSpec``) or CDC apply (``CdcSpec``); every problem of the model is raised as one
``SpecError``. ``plan_write`` picks the table write for one run of a materialization.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from dbt.adapters.deltamerge.cdc.spec import CdcSpec
from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta import TableLocation
from dbt.adapters.deltamerge.delta.data import ENABLE_PROPERTY as DELETION_VECTORS_PROPERTY
from dbt.adapters.deltamerge.delta.data import OPTIMIZE_WRITE, WriteMode, WriteRequest
from dbt.adapters.deltamerge.delta.log import (
    AUTO_COMPACT,
    CDF_PROPERTY,
    MAPPING_MODE,
    TABLE_FORMAT_ICEBERG,
    change_data_feed_enabled,
    registration_properties,
    value_problems,
)
from dbt.adapters.deltamerge.merge import MergeSpec
from dbt.adapters.deltamerge.model.columns import ColumnDeclarations
from dbt.adapters.deltamerge.model.keys import (
    CDC_KEYS,
    KEYS,
    MERGE_STRATEGIES,
    key_problems,
    misspelling_problems,
)

Materialization = Literal["table", "incremental", "seed"]
_Spec = TypeVar("_Spec")


@dataclass(frozen=True)
class WriteSpec:
    """The write-related config of one model, validated."""

    model: str
    file_format: str = "delta"
    strategy: str = "append"
    partition_by: tuple[str, ...] = ()
    tblproperties: Mapping[str, str] = field(default_factory=dict)
    location_root: str | None = None
    on_schema_change: str = "ignore"
    event_time: str | None = None
    # OPTIMIZE after each run (``optimize_after_run``), Z-ordered by ``zorder`` (which implies it).
    zorder: tuple[str, ...] = ()
    optimize_after_run: bool = False
    # Liquid clustering (``cluster_by``, dbt-databricks' ``liquid_clustered_by``): OPTIMIZE after each run.
    cluster_by: tuple[str, ...] = ()
    # ``delete+insert``: the rows sharing a new row's ``unique_key`` are replaced, narrowed by
    # ``incremental_predicates`` (without a unique key the new rows are appended, as in dbt).
    unique_key: tuple[str, ...] = ()
    incremental_predicates: tuple[str, ...] = ()

    @property
    def deletion_vectors(self) -> bool:
        """``deletion_vectors: true`` or the table property switches deletion vectors on (merge-on-read)."""
        return str(self.tblproperties.get(DELETION_VECTORS_PROPERTY, "false")).lower() == "true"

    @property
    def change_data_feed(self) -> bool:
        """``change_data_feed: true`` or the table property asks for the feed (the one place deciding it)."""
        return change_data_feed_enabled(self.tblproperties)

    @classmethod
    def from_config(cls, model: str, config: Mapping[str, Any]) -> WriteSpec:
        """Parse ``config`` (a model's config dict); raise one SpecError listing every problem."""
        problems: list[str] = []

        def read(key: str) -> Any:
            return KEYS[key].read(config, key, problems)

        properties = {str(k): _property_value(k, v, problems) for k, v in read("tblproperties").items()}
        if read("change_data_feed"):
            properties[CDF_PROPERTY] = "true"
        if read("deletion_vectors"):
            properties[DELETION_VECTORS_PROPERTY] = "true"
        if read("table_format") == "iceberg":
            problems.extend(_iceberg_format(properties, bool(read("deletion_vectors"))))
        if read("auto_optimize"):
            for key in (AUTO_COMPACT, OPTIMIZE_WRITE):  # tblproperties may still turn one off
                properties.setdefault(key, "true")
        problems.extend(f"tblproperties: {problem}" for problem in value_problems(properties))
        spec = cls(
            model=model,
            file_format=read("file_format") or "delta",
            strategy=read("incremental_strategy") or "append",
            partition_by=read("partition_by"),
            tblproperties=properties,
            location_root=read("location_root"),
            on_schema_change=read("on_schema_change") or "ignore",
            event_time=read("event_time"),
            zorder=read("zorder"),
            optimize_after_run=bool(read("optimize_after_run")),
            cluster_by=read("cluster_by") or read("liquid_clustered_by"),
        )
        if spec.strategy == "delete+insert":
            spec = dataclasses.replace(
                spec, unique_key=read("unique_key"), incremental_predicates=read("incremental_predicates")
            )
        if read("cluster_by") and read("liquid_clustered_by"):
            problems.append("cluster_by and liquid_clustered_by name the same thing: set one of them")
        if spec.cluster_by and spec.partition_by:
            problems.append("cluster_by cannot be used with partition_by (Delta: not both)")
        if spec.cluster_by and spec.zorder:
            problems.append("zorder cannot be used with cluster_by: a clustered table's OPTIMIZE clusters")
        problems.extend(misspelling_problems(config))
        if problems:
            raise SpecError(model, problems)
        return spec


def with_profile(
    model: str,
    config: Mapping[str, Any],
    *,
    table_format: str | None,
    name: tuple[str | None, str, str],
    catalogs: list[str],
) -> Mapping[str, Any]:
    """A model's config over its profile: the profile's ``table_format`` where the config sets none;
    a ``database`` (``name``'s first part) naming an Iceberg catalog of the profile (``catalogs``)
    makes the table UniForm and registered there as ``database.schema.identifier``.

    >>> with_profile("m", {}, table_format=None, name=("lake", "s", "t"), catalogs=["lake"])["tblproperties"]
    {'deltamerge.iceberg.catalog': 'lake', 'deltamerge.iceberg.identifier': 's.t'}
    >>> with_profile("m", {}, table_format=None, name=("lak", "s", "t"), catalogs=["lake"])
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    dbt.adapters.deltamerge.common.config_values.SpecError: Model 'm': invalid config:
      - database 'lak' names no Iceberg catalog of the profile (iceberg_catalogs: lake); ...
    """
    database, schema, identifier = name
    if table_format and config.get("table_format") is None:
        config = {**config, "table_format": table_format}
    if not database or database == schema:
        return config
    if database not in catalogs:
        raise SpecError(
            model,
            [
                f"database {database!r} names no Iceberg catalog of the profile (iceberg_catalogs: "
                f"{', '.join(catalogs) or 'none'}); Spark's own catalog has two-part names"
            ],
        )
    if str(config.get("table_format") or "iceberg").lower() != "iceberg":
        raise SpecError(model, [f"database {database!r} is an Iceberg catalog: table_format must be iceberg"])
    properties = {
        **(config.get("tblproperties") or {}),
        **registration_properties(database, schema, identifier),
    }
    return {**config, "table_format": "iceberg", "tblproperties": properties}


def _iceberg_format(properties: dict[str, str], deletion_vectors: bool) -> list[str]:
    """``table_format: iceberg``: the UniForm properties (IcebergCompatV2, Iceberg metadata, column
    mapping by name) set where ``tblproperties`` does not set them; a clash named."""
    for key, value in {**TABLE_FORMAT_ICEBERG, MAPPING_MODE: "name"}.items():
        properties.setdefault(key, value)
    if deletion_vectors:
        return ["deletion_vectors cannot be used with table_format: iceberg (IcebergCompatV2 forbids them)"]
    return []


@dataclass(frozen=True)
class ModelSpec:
    """One model's config, parsed once: its table write and, for a merge model, its merge or CDC apply.

    ``merge`` and ``cdc`` are set only for an incremental model of the ``delta_merge`` (or
    ``merge``) strategy; a project-wide strategy that also reaches table models leaves them
    unset there, so those models write tables as usual.
    """

    write: WriteSpec
    merge: MergeSpec | None = None
    cdc: CdcSpec | None = None
    columns: ColumnDeclarations = field(default_factory=ColumnDeclarations)

    @property
    def model(self) -> str:
        """The model's name."""
        return self.write.model

    @classmethod
    def from_config(cls, model: str, config: Mapping[str, Any], materialization: str) -> ModelSpec:
        """Parse every key of ``config``, then the specs the model's write uses; one SpecError for all."""
        problems = key_problems(config)
        write = _parsed(WriteSpec.from_config, model, config, problems)
        columns = _parsed(ColumnDeclarations.from_config, model, config, problems)
        merge = cdc = None
        # The strategy as written when the table-level keys have problems: the merge's own keys are
        # still read, so that every problem is reported at once.
        strategy = write.strategy if write is not None else str(config.get("incremental_strategy") or "")
        if materialization == "incremental":
            if write is not None and write.strategy == "microbatch" and not write.event_time:
                problems.append("incremental_strategy 'microbatch' needs an event_time config")
            if strategy.lower() in MERGE_STRATEGIES and CdcSpec.applies(config):
                cdc = _parsed(CdcSpec.from_config, model, config, problems)
            elif strategy.lower() in MERGE_STRATEGIES:
                problems.extend(_cdc_keys_without_sequence(config))
                merge = _parsed(MergeSpec.from_config, model, config, problems)
        if problems:
            raise SpecError(model, problems)
        assert write is not None and columns is not None
        return cls(write, merge, cdc, columns)


def _parsed(
    parse: Callable[[str, Mapping[str, Any]], _Spec],
    model: str,
    config: Mapping[str, Any],
    problems: list[str],
) -> _Spec | None:
    """``parse(model, config)``, or None with its problems added to ``problems``."""
    try:
        return parse(model, config)
    except SpecError as error:
        problems.extend(error.problems)
        return None


def _cdc_keys_without_sequence(config: Mapping[str, Any]) -> list[str]:
    """A CDC apply key on a plain merge: without ``sequence_by`` it would be silently ignored.

    >>> _cdc_keys_without_sequence({"apply_as_deletes": "op = 'D'"})  # doctest: +ELLIPSIS
    ['`apply_as_deletes` is a CDC apply key: it needs `sequence_by` (the column ordering the events); ...']
    """
    return [
        f"`{key}` is a CDC apply key: it needs `sequence_by` (the column ordering the events); "
        f"add sequence_by, or remove {key}"
        for key in CDC_KEYS
        if key != "sequence_by" and config.get(key) is not None
    ]


def _property_value(key: str, value: Any, problems: list[str]) -> str:
    """A table property's value as the Delta log stores it (text); a map or list is a problem."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None or isinstance(value, (Mapping, list, tuple, set)):
        problems.append(f"tblproperties: the value of {key} must be a text, number or boolean, got {value!r}")
        return ""
    return str(value)


def plan_write(
    spec: WriteSpec,
    *,
    materialization: Materialization,
    location: TableLocation,
    exists: bool,
    full_refresh: bool,
    batch: tuple[str, str] | None = None,
) -> WriteRequest:
    """The Delta write one run of a materialization performs."""
    mode: WriteMode = "create_or_replace"
    replace_where = None
    if materialization == "incremental" and exists and not full_refresh:
        if spec.strategy == "append":
            mode = "append"
        elif spec.strategy == "insert_overwrite":
            mode = "replace_partitions"
        elif spec.strategy == "microbatch":
            mode, replace_where = "replace_where", _batch_predicate(spec, batch)
        elif spec.strategy == "delete+insert":
            mode = "replace_keys" if spec.unique_key else "append"
        else:  # a merge of an existing table is not a table write
            raise SpecError(spec.model, [f"incremental_strategy {spec.strategy!r} merges: no table write"])
    return WriteRequest(
        location=location,
        mode=mode,
        partition_by=spec.partition_by,
        properties=spec.tblproperties,
        replace_where=replace_where,
        replace_keys=spec.unique_key if mode == "replace_keys" else (),
        replace_predicates=spec.incremental_predicates if mode == "replace_keys" else (),
        cluster_by=spec.cluster_by or None,
    )


def _batch_predicate(spec: WriteSpec, batch: tuple[str, str] | None) -> str:
    if not spec.event_time or batch is None:
        raise SpecError(spec.model, ["microbatch ran without a batch window"])
    start, end = batch
    column = quote_identifier(spec.event_time)
    return f"{column} >= timestamp'{start}' AND {column} < timestamp'{end}'"


def batch_window(start: Any, end: Any) -> tuple[str, str] | None:
    """A microbatch's window (dbt's ``event_time_start`` / ``_end``) as UTC timestamp texts."""
    if start is None or end is None:
        return None
    return _timestamp_text(start), _timestamp_text(end)


def _timestamp_text(value: Any) -> str:
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return value.isoformat(sep=" ")
    return str(value)
