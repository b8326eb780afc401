"""Config keys a Delta model may set, and the misspellings of them that must not pass silently.

A key dbt, dbt-spark and this adapter do not know is usually a custom one (meta-like, read
by a project's own macros) and stays allowed; but one a small edit away from a known key
(``when_matchd``) is almost certainly a typo, and ignoring it writes wrong data (the
default clauses run instead). Such a key fails the model before anything is written.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

# This adapter's model keys (CONTRACT §2, §3, §6) besides the dbt-spark config class's fields.
ADAPTER_KEYS = frozenset(
    {
        "unique_key",
        "merge_condition",
        "source_alias",
        "target_alias",
        "when_matched",
        "when_not_matched",
        "when_not_matched_by_source",
        "incremental_predicates",
        "merge_with_schema_evolution",
        "change_data_feed",
        "update_only_if_changed",
        "matched_condition",
        "not_matched_condition",
        "skip_matched_step",
        "skip_not_matched_step",
        "merge_update_columns",
        "merge_exclude_columns",
        "not_matched_by_source_action",
        "not_matched_by_source_condition",
        "not_matched_by_source_set",
        "sequence_by",
        "tombstone_retention_hours",
        "apply_as_deletes",
        "apply_as_truncates",
        "ignore_null_updates",
        "column_list",
        "except_column_list",
        "stored_as_scd_type",
        "track_history_column_list",
        "track_history_except_column_list",
        "file_format",
        "location_root",
        "partition_by",
        "tblproperties",
    }
)
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
