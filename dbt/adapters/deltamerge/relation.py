"""dbt-spark's relation, whose ``database`` may name an Iceberg REST catalog of the profile.

Spark's catalog has two-part names; dbt-spark refuses any ``database``. Ours is the third part of
a model's name when the table is also registered in an Iceberg REST catalog (``iceberg_catalogs``
in the profile; a model's ``database``, or the profile's ``database`` / ``catalog``): the relation
keeps it (dbt's graph, ``ref`` and ``source`` with a database, docs), and renders two-part for
Spark, where the table is bound as ``schema.identifier`` whatever catalog it is registered in.
"""

from __future__ import annotations

from dataclasses import dataclass

from dbt.adapters.spark.relation import SparkRelation


@dataclass(frozen=True, eq=False, repr=False)
class DeltaMergeRelation(SparkRelation):
    """A relation whose ``database`` is the Iceberg catalog it is registered in (rendered two-part)."""

    def __post_init__(self) -> None:
        """No refusal of a ``database``: the profile's check names it (``connections``), and the
        model's config parse names one that is not an Iceberg catalog of the profile."""
