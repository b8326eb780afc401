"""From a model's config to one Delta write: which table, which mode, which options.

``WriteSpec.from_config`` parses and validates the config once, collecting every
problem; ``plan_write`` picks the write for a run of a materialization.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta.protocol import CDF_PROPERTY, change_data_feed_enabled
from dbt.adapters.deltamerge.delta.write import WriteMode, WriteRequest
from dbt.adapters.deltamerge.model.keys import misspelling_problems

FILE_FORMATS = ("delta", "parquet")
STRATEGIES = ("append", "insert_overwrite", "microbatch", "delta_merge", "merge")
MERGE_STRATEGIES = ("delta_merge", "merge")
ON_SCHEMA_CHANGE = ("ignore", "fail", "append_new_columns", "sync_all_columns")

Materialization = Literal["table", "incremental", "seed"]


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

    @property
    def change_data_feed(self) -> bool:
        """``change_data_feed: true`` or the table property asks for the feed."""
        return change_data_feed_enabled(self.tblproperties)

    @classmethod
    def from_config(cls, model: str, config: Mapping[str, Any]) -> WriteSpec:
        """Parse ``config`` (a model's config dict); raise one SpecError listing every problem."""
        problems: list[str] = []
        file_format = str(config.get("file_format") or "delta").lower()
        if file_format not in FILE_FORMATS:
            problems.append(f"file_format '{file_format}' is not supported; use one of {list(FILE_FORMATS)}")
        strategy = str(config.get("incremental_strategy") or "append").lower()
        if strategy not in STRATEGIES:
            problems.append(
                f"incremental_strategy '{strategy}' is not supported; use one of {list(STRATEGIES)}"
            )
        on_schema_change = str(config.get("on_schema_change") or "ignore").lower()
        if on_schema_change not in ON_SCHEMA_CHANGE:
            problems.append(
                f"on_schema_change '{on_schema_change}' is not supported; use one of {list(ON_SCHEMA_CHANGE)}"
            )
        partition_by = _names(config.get("partition_by"), "partition_by", problems)
        properties = config.get("tblproperties") or {}
        if not isinstance(properties, Mapping):
            problems.append("tblproperties must be a map of property name to value")
            properties = {}
        feed = config.get("change_data_feed")
        if feed is not None and not isinstance(feed, bool):
            problems.append(f"change_data_feed must be true or false, got {feed!r}")
        elif feed:
            properties = {**properties, CDF_PROPERTY: "true"}
        location_root = config.get("location_root")
        if location_root is not None and not isinstance(location_root, str):
            problems.append("location_root must be a path")
        problems.extend(misspelling_problems(config))
        if problems:
            raise SpecError(model, problems)
        return cls(
            model=model,
            file_format=file_format,
            strategy=strategy,
            partition_by=partition_by,
            tblproperties={str(k): _property_value(v) for k, v in properties.items()},
            location_root=location_root,
            on_schema_change=on_schema_change,
            event_time=config.get("event_time"),
        )


def _names(value: Any, key: str, problems: list[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(v, str) and v.strip() for v in items):
        problems.append(f"{key} must be a column name or a list of column names")
        return ()
    return tuple(v.strip() for v in items)


def _property_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def table_location(spec: WriteSpec, *, identifier: str, bound: str | None, schema_location: str) -> str:
    """Where the model's Delta table lives.

    ``location_root`` wins; otherwise the folder the catalog entry is bound to; otherwise
    the schema's folder in the warehouse, as Spark places managed tables.

    >>> spec = WriteSpec(model="m", location_root="/data")
    >>> table_location(spec, identifier="orders", bound=None, schema_location="/w/s.db")
    '/data/orders'
    """
    if spec.location_root:
        return os.path.join(spec.location_root, identifier)
    if bound:
        return bound
    return os.path.join(schema_location, identifier.lower())


def plan_write(
    spec: WriteSpec,
    *,
    materialization: Materialization,
    table_path: str,
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
        else:
            mode, replace_where = "replace_where", _batch_predicate(spec, batch)
    return WriteRequest(
        table_path=table_path,
        mode=mode,
        partition_by=spec.partition_by,
        properties=spec.tblproperties,
        replace_where=replace_where,
    )


def is_merge(spec: WriteSpec, *, materialization: Materialization, exists: bool, full_refresh: bool) -> bool:
    """Whether this run merges into an existing table (rather than writing a version)."""
    return (
        materialization == "incremental" and exists and not full_refresh and spec.strategy in MERGE_STRATEGIES
    )


def _batch_predicate(spec: WriteSpec, batch: tuple[str, str] | None) -> str:
    if not spec.event_time:
        raise SpecError(spec.model, ["incremental_strategy 'microbatch' needs an event_time config"])
    if batch is None:
        raise SpecError(spec.model, ["microbatch ran without a batch window"])
    start, end = batch
    column = quote_identifier(spec.event_time)
    return f"{column} >= timestamp'{start}' AND {column} < timestamp'{end}'"
