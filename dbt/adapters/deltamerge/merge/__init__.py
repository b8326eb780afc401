"""The merge engine's public face: what CDC apply, statements, models, the functional tests and the
benchmarks use of it (they import from here, never an inner module; unit tests, which mirror the
tree, import the module they test).

A merge reads as its four places: ``spec.py`` (parse: ``MergeSpec.from_config``, the user's door;
``MergeSpec.of``, the engine's) -> ``plan.py`` (every decision, before the target is read) ->
``execute/`` (the plan's route) -> ``commit.py`` (metrics, one commit), strung together by
``pipeline.py`` (``merge_into``, ``dry_run_merge``).
"""

from __future__ import annotations

from dbt.adapters.deltamerge.merge.check import check_before_creating
from dbt.adapters.deltamerge.merge.clauses import SHORTHANDS, Assignment, MergeClause
from dbt.adapters.deltamerge.merge.dry_run import DryRun
from dbt.adapters.deltamerge.merge.execute.touched import MULTIPLE_MATCHES, MultipleMatchesError
from dbt.adapters.deltamerge.merge.pipeline import dry_run_merge, merge_into
from dbt.adapters.deltamerge.merge.resolve import evolved_by_merge
from dbt.adapters.deltamerge.merge.source import checkpoint_with_aggregates, fits_in_broadcast
from dbt.adapters.deltamerge.merge.spec import (
    DEFAULT_SOURCE_ALIAS,
    DEFAULT_TARGET_ALIAS,
    MergeBehaviour,
    MergeSpec,
)

__all__ = [
    "DEFAULT_SOURCE_ALIAS",
    "DEFAULT_TARGET_ALIAS",
    "MULTIPLE_MATCHES",
    "SHORTHANDS",
    "Assignment",
    "DryRun",
    "MergeBehaviour",
    "MergeClause",
    "MergeSpec",
    "MultipleMatchesError",
    "check_before_creating",
    "checkpoint_with_aggregates",
    "dry_run_merge",
    "evolved_by_merge",
    "fits_in_broadcast",
    "merge_into",
]
