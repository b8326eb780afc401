"""Liquid clustering: a table's clustering columns (the ``delta.clustering`` domain) and their checks.

As PROTOCOL.md's Clustered Table: the ``clustering`` and ``domainMetadata`` writer features, and
a ``domainMetadata`` action of domain ``delta.clustering`` naming the clustering columns by
physical name. Delta writes each column as its name path (``{"clusteringColumns": [["a"]]}``);
PROTOCOL.md's example shows flat names; Databricks' older ``liquid`` feature keeps them in the
``delta.liquid`` domain as ``{"physicalName": [...]}``. All three are read here; the first is
written. Files an OPTIMIZE clusters carry ``clusteringProvider: "liquid"``; OPTIMIZE clusters the
files without it (incrementally), ``OPTIMIZE ... FULL`` every file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.errors import DeltaError
from dbt.adapters.deltamerge.delta.log.mapping import physical_names
from dbt.adapters.deltamerge.delta.log.stats import columns_with_stats

CLUSTERING_DOMAIN = "delta.clustering"
LIQUID_DOMAIN = "delta.liquid"
PROVIDER = "liquid"
MAX_COLUMNS = 4
FEATURES = frozenset({"clustering", "domainMetadata"})


def clustering_columns(
    domains: Mapping[str, Mapping[str, Any]], schema: T.StructType, writer_features: Sequence[str] | None
) -> tuple[str, ...] | None:
    """The logical clustering columns of a table, or None when it is not clustered.

    >>> schema = T.StructType([T.StructField("a", T.IntegerType())])
    >>> domain = {"configuration": '{"clusteringColumns": [["a"]], "domainName": "delta.clustering"}'}
    >>> clustering_columns({CLUSTERING_DOMAIN: domain}, schema, ["clustering"])
    ('a',)
    >>> liquid = {"configuration": '{"clusteringColumns": [{"physicalName": ["a"]}]}'}
    >>> clustering_columns({LIQUID_DOMAIN: liquid}, schema, ["liquid"]), clustering_columns({}, schema, [])
    (('a',), None)
    """
    if not {"clustering", "liquid"} & set(writer_features or ()):
        return None
    domain = domains.get(CLUSTERING_DOMAIN) or domains.get(LIQUID_DOMAIN)
    if domain is None:
        return ()
    found = json.loads(str(domain.get("configuration") or "{}")).get("clusteringColumns") or []
    logical = {physical: name for name, physical in physical_names(schema).items()}
    names = []
    for entry in found:
        path: Any = entry.get("physicalName") if isinstance(entry, dict) else entry
        parts = [path] if isinstance(path, str) else list(path or ())
        names.append(logical.get(parts[0], parts[0]) if len(parts) == 1 else ".".join(parts))
    return tuple(names)


def clustering_action(columns: Sequence[str], schema: T.StructType) -> dict[str, Any]:
    """The ``domainMetadata`` action naming ``columns`` (logical) by physical name, as Delta writes it.

    >>> action = clustering_action(["a"], T.StructType([T.StructField("a", T.IntegerType())]))
    >>> action["domainMetadata"]["configuration"]
    '{"clusteringColumns": [["a"]], "domainName": "delta.clustering"}'
    """
    physical = physical_names(schema)
    configuration = {
        "clusteringColumns": [[physical.get(c, c)] for c in columns],
        "domainName": CLUSTERING_DOMAIN,
    }
    return {
        "domainMetadata": {
            "domain": CLUSTERING_DOMAIN,
            "configuration": json.dumps(configuration),
            "removed": False,
        }
    }


def clustering_problems(
    columns: Sequence[str],
    schema: T.StructType,
    partition_columns: Sequence[str],
    configuration: Mapping[str, str],
) -> tuple[list[str], list[str]]:
    """Delta's refusals of clustering columns, and the columns in the table's spelling.

    >>> schema = T.StructType([T.StructField(n, T.IntegerType()) for n in "abcde"])
    >>> clustering_problems(list("abcde"), schema, [], {})[0]  # doctest: +ELLIPSIS
    ['CLUSTER BY supports up to 4 clustering columns, but the table has 5 clustering columns. ...']
    >>> problems, resolved = clustering_problems(["A"], schema, ["b"], {})
    >>> problems[0].startswith("Clustering and partitioning cannot both be specified."), resolved
    (True, ['a'])
    """
    problems: list[str] = []
    if len(columns) > MAX_COLUMNS:
        problems.append(
            f"CLUSTER BY supports up to {MAX_COLUMNS} clustering columns, but the table has {len(columns)} "
            "clustering columns. Please remove the extra clustering columns."
        )
    if columns and partition_columns:
        problems.append(
            "Clustering and partitioning cannot both be specified. Please remove partitionedBy if you want "
            "to create a Delta table with clustering."
        )
    fields = {f.name.lower(): f.name for f in schema.fields}
    with_stats = columns_with_stats(schema, configuration)
    resolved, missing = [], []
    for column in columns:
        name = fields.get(column.lower())
        if name is None or column.lower() not in with_stats:
            missing.append(column)
        else:
            resolved.append(name)
    if missing:
        problems.append(
            f"Clustering requires clustering columns to have stats. Couldn't find clustering column(s) "
            f"'{', '.join(missing)}' in stats schema"
        )
    return problems, resolved


def is_clustered_file(logged: Mapping[str, Any] | None) -> bool:
    """Whether a file's ``add`` says a clustering implementation (ours: ``liquid``) clustered it."""
    return bool(logged and logged.get("clusteringProvider"))


def definition_clustering(
    requested: Sequence[str] | None,
    schema: T.StructType,
    partition_columns: Sequence[str],
    configuration: Mapping[str, str],
    current: tuple[str, ...] | None,
) -> tuple[frozenset[str], list[dict[str, Any]]]:
    """The features and ``domainMetadata`` action of a new table definition (CREATE [OR REPLACE]):
    ``requested`` clustering columns, or none (a replaced clustered table is no longer clustered;
    its protocol keeps the feature)."""
    if not requested:
        return (frozenset(), [clustering_action([], schema)] if current else [])
    problems, resolved = clustering_problems(requested, schema, partition_columns, configuration)
    if problems:
        raise DeltaError("; ".join(problems) + ". Nothing was written.")
    return FEATURES, [clustering_action(resolved, schema)]
