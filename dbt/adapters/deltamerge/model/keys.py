"""Config keys a Delta model may set: each with the kind of value it takes, and their misspellings.

``KEYS`` is the one list of the keys this adapter reads, each with its ``Kind``;
``key_problems`` reads every key given before any spec decides anything, so a value of the
wrong kind fails the model naming the key even where the key would not be used (a CDC key on
a table model), and never falls back to a default.

A key dbt, dbt-spark and this adapter do not know is usually a custom one (meta-like, read
by a project's own macros) and stays allowed; but one a small edit away from a known key
(``when_matchd``) is almost certainly a typo, and ignoring it writes wrong data (the
default clauses run instead). Such a key fails the model before anything is written.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from dbt.adapters.deltamerge.common import config_values as cv


@dataclass(frozen=True)
class Kind:
    """The kind of value a config key takes: what the docs call it, and its reader.

    ``read(config, key, problems)`` appends a sentence naming the key when the value is of
    another kind; the specs read their keys with the same functions, so a key's problem is
    one sentence however many parsers look at it.
    """

    name: str
    read: Callable[[Mapping[str, Any], str, list[str]], object]


def one_of(*allowed: object) -> Kind:
    """A kind whose values are exactly ``allowed``."""
    return Kind(f"one of {list(allowed)}", lambda c, k, p: cv.choice(c.get(k), k, allowed, p))


def _text(name: str) -> Kind:
    return Kind(name, lambda c, k, p: cv.text(c.get(k), k, p, what=name))


def _map(name: str) -> Kind:
    return Kind(name, lambda c, k, p: cv.mapping(c.get(k), k, p, what=name))


COLUMNS = Kind("a column name or a list of column names", lambda c, k, p: cv.names(c.get(k), k, p))
PARTITIONS = Kind(
    "a column name or a list of column names", lambda c, k, p: cv.partition_columns(c.get(k), k, p)
)
COLUMN = _text("a column name")
PATH = _text("a folder path")
SQL = Kind("a non-empty SQL expression", lambda c, k, p: cv.sql_text(c.get(k), k, p))
EVENT_CONDITION = Kind(
    "a SQL condition over the source row",
    lambda c, k, p: cv.sql_text(c.get(k), k, p, what="a SQL condition over the source row"),
)
SQL_LIST = Kind("a SQL condition or a list of them", lambda c, k, p: cv.sql_list(c.get(k), k, p))
FLAG = Kind("true or false", lambda c, k, p: cv.flag(c, k, p))
ALIAS = Kind("a plain identifier", lambda c, k, p: cv.identifier(c, k, "", p))
CLAUSES = Kind("a list of clauses", lambda c, k, p: cv.clause_list(c.get(k), k, p))
ASSIGNMENTS = _map("a non-empty map of column to SQL expression")
PROPERTIES = _map("a map of property to value")
HOURS = Kind(
    "a number of hours >= 0", lambda c, k, p: cv.number(c.get(k), k, p, what="a number of hours >= 0")
)


FILE_FORMATS = ("delta", "parquet")
# dbt-databricks's ``table_format``: ``iceberg`` makes a UniForm table (Iceberg metadata beside the log).
TABLE_FORMATS = ("default", "delta", "iceberg")
STRATEGIES = ("append", "insert_overwrite", "microbatch", "delta_merge", "merge", "delete+insert")
MERGE_STRATEGIES = ("delta_merge", "merge")
ON_SCHEMA_CHANGE = ("ignore", "fail", "append_new_columns", "sync_all_columns")

# Every model config key this adapter reads, with the kind of value it takes (docs/configuration.md
# documents each). dbt's and dbt-spark's own keys are read by dbt.
WRITE_KEYS: dict[str, Kind] = {
    "file_format": one_of(*FILE_FORMATS),
    "table_format": one_of(*TABLE_FORMATS),
    "incremental_strategy": one_of(*STRATEGIES),
    "on_schema_change": one_of(*ON_SCHEMA_CHANGE),
    "partition_by": PARTITIONS,
    "tblproperties": PROPERTIES,
    "location_root": PATH,
    "change_data_feed": FLAG,
    "deletion_vectors": FLAG,
    "event_time": COLUMN,
    "generated_columns": _map("a map of column to SQL expression"),
    "column_defaults": _map("a map of column to SQL expression"),
    "identity_columns": _map("a map of column to {start, step, generated}"),
    "zorder": COLUMNS,
    "cluster_by": COLUMNS,
    "liquid_clustered_by": COLUMNS,
    "optimize_after_run": FLAG,
    "auto_optimize": FLAG,
}
MERGE_KEYS: dict[str, Kind] = {
    "unique_key": COLUMNS,
    "merge_condition": SQL,
    "source_alias": ALIAS,
    "target_alias": ALIAS,
    "when_matched": CLAUSES,
    "when_not_matched": CLAUSES,
    "when_not_matched_by_source": CLAUSES,
    "incremental_predicates": SQL_LIST,
    "merge_with_schema_evolution": FLAG,
    "update_only_if_changed": FLAG,
    "matched_condition": SQL,
    "not_matched_condition": SQL,
    "skip_matched_step": FLAG,
    "skip_not_matched_step": FLAG,
    "merge_update_columns": COLUMNS,
    "merge_exclude_columns": COLUMNS,
    "not_matched_by_source_action": one_of("ignore", "delete", "update"),
    "not_matched_by_source_condition": SQL,
    "not_matched_by_source_set": ASSIGNMENTS,
}
CDC_KEYS: dict[str, Kind] = {
    "sequence_by": COLUMNS,
    "apply_as_deletes": EVENT_CONDITION,
    "apply_as_truncates": EVENT_CONDITION,
    "ignore_null_updates": FLAG,
    "column_list": COLUMNS,
    "except_column_list": COLUMNS,
    "stored_as_scd_type": one_of(1, 2),
    "track_history_column_list": COLUMNS,
    "track_history_except_column_list": COLUMNS,
    "tombstone_retention_hours": HOURS,
}
KEYS: dict[str, Kind] = {**WRITE_KEYS, **MERGE_KEYS, **CDC_KEYS}
# The keys this adapter adds to dbt-spark's config classes' fields (and reads itself).
ADAPTER_KEYS = frozenset(KEYS)


def key_problems(config: Mapping[str, Any]) -> list[str]:
    """A sentence for every key of ``KEYS`` whose value is of another kind (absent keys are fine).

    >>> key_problems({"apply_as_deletes": 1.5, "unique_key": "id", "partition_by": 3})
    ['partition_by must be a column name or a list of column names, got 3']
    """
    problems: list[str] = []
    for key, kind in KEYS.items():
        if config.get(key) is not None:
            kind.read(config, key, problems)
    return problems


# dbt keys its config classes do not declare as fields (read with config.get by its macros).
DBT_MACRO_KEYS = frozenset(
    {
        "sql_header",
        "hard_deletes",
        "invalidate_hard_deletes",
        "snapshot_table_column_names",
        "store_failures",
        "store_failures_as",
        "severity",
        "where",
        "limit",
        "fail_calc",
        "warn_if",
        "error_if",
        "description",
        "predicates",
        "label",
        "compression",
    }
)
# How similar (difflib's ratio) an unknown key must be to a known one to be called a typo.
SIMILARITY = 0.8


@cache
def known_keys() -> frozenset[str]:
    """Every key dbt's model / seed / snapshot configs, dbt-spark's and this adapter's know."""
    from dbt.adapters.spark.impl import SparkConfig
    from dbt.artifacts.resources.v1.model import ModelConfig
    from dbt.artifacts.resources.v1.seed import SeedConfig
    from dbt.artifacts.resources.v1.snapshot import SnapshotConfig

    names: set[str] = set()
    for kind in (ModelConfig, SeedConfig, SnapshotConfig, SparkConfig):
        for field in dataclasses.fields(kind):
            names.add(field.name)
            if alias := field.metadata.get("alias"):
                names.add(alias)
    return frozenset(names | ADAPTER_KEYS | DBT_MACRO_KEYS)


def misspelled_keys(config: Mapping[str, Any], known: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """``(key, the known key it probably means)`` for every unknown key close to a known one.

    >>> config = {"when_matchd": [], "owner_team": "x", "unique_key": "id"}
    >>> misspelled_keys(config, ["when_matched", "unique_key"])
    [('when_matchd', 'when_matched')]
    """
    known_set = set(known_keys() if known is None else known)
    found = []
    for key in config:
        if not isinstance(key, str) or key in known_set or key.startswith("_"):
            continue
        close = difflib.get_close_matches(key, known_set, n=1, cutoff=SIMILARITY)
        if close:
            found.append((key, close[0]))
    return found


def misspelling_problems(config: Mapping[str, Any]) -> list[str]:
    """One sentence per misspelled key (for the model's config error)."""
    return [
        f"unknown config key `{key}`: did you mean `{meant}`? (a misspelled key would be ignored "
        "and its default used instead; rename it, or give a custom key a name not this close "
        "to a config key)"
        for key, meant in misspelled_keys(config)
    ]
