"""What a model's write answers dbt: ``AdapterResponse`` with the Delta version and Delta's metrics.

``run_results.json`` shows each metric under its Delta name beside ``rows_affected`` (rows
inserted, updated and deleted by a merge, written by other writes); a dry run's response
carries the plan of the merge it previewed and the metrics the real run would commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.contracts.connection import AdapterResponse

from dbt.adapters.deltamerge.delta.txn import WriteResult, affected_rows
from dbt.adapters.deltamerge.merge import DryRun


@dataclass
class DeltaAdapterResponse(AdapterResponse):
    """dbt's response plus the Delta version written and Delta's operation metrics."""

    delta_version: int | None = None
    delta_operation: str | None = None
    delta_table_path: str | None = None
    operation_metrics: dict[str, int] = field(default_factory=dict)
    # A dry run (var deltamerge_dry_run): nothing written; the plan of the merge it previewed.
    dry_run: bool = False
    plan: dict[str, Any] | None = None

    def __post_serialize__(
        self, dct: dict[str, Any], context: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        # run_results.json shows each metric under its Delta name, next to rows_affected.
        dct = super().__post_serialize__(dct, context)
        dct.update(self.operation_metrics)
        return dct


def not_written_response(why: str) -> DeltaAdapterResponse:
    return DeltaAdapterResponse(
        _message=f"DRY RUN: nothing written ({why})", code="DRY RUN", rows_affected=0, dry_run=True
    )


def dry_run_response(dry: DryRun) -> DeltaAdapterResponse:
    m, plan = dry.metrics, dry.plan
    message = (
        f"DRY RUN MERGE ({plan['executor']}): would insert {m['numTargetRowsInserted']}, update "
        f"{m['numTargetRowsUpdated']}, delete {m['numTargetRowsDeleted']} rows; rewrite "
        f"{len(plan['files_to_rewrite'])} of {plan['files_before_skipping']} files "
        f"({plan['files_after_skipping']} after data skipping); nothing written"
    )
    return DeltaAdapterResponse(
        _message=message,
        code="MERGE",
        rows_affected=affected_rows("MERGE", m),
        delta_version=None,
        delta_operation="MERGE",
        delta_table_path=dry.snapshot.table_path,
        operation_metrics=dict(m),
        dry_run=True,
        plan=dry.plan,
    )


def write_response(result: WriteResult) -> DeltaAdapterResponse:
    return DeltaAdapterResponse(
        _message=(
            f"OK {result.operation}: Delta version {result.version}"
            if result.version is not None
            else f"OK {result.operation}: no change, Delta version stays {result.snapshot.version}"
        ),
        code=result.operation,
        rows_affected=affected_rows(result.operation, result.metrics),
        delta_version=result.version,
        delta_operation=result.operation,
        delta_table_path=result.snapshot.table_path,
        operation_metrics=dict(result.metrics),
    )
