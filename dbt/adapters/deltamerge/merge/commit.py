"""A merge's commit: Delta's metrics and operation parameters, then one MERGE commit, or none.

A merge that changed no row and no table definition discards the files it wrote and commits
nothing (its metrics are still reported). Otherwise one commit removes the touched files and
adds the new data and change files, after the definition changes the merge carries (schema
evolution, the change data feed switched on, the ``txn`` retention of a table written by an
older version). Its conflict check judges files a concurrent writer added by the plan's data
skipping (pure: no Spark job), as Delta judges them by the merge's read predicate.
"""

from __future__ import annotations

from collections.abc import Mapping

from dbt.adapters.deltamerge.delta import Snapshot, local_path
from dbt.adapters.deltamerge.delta.data import VectorUpdate
from dbt.adapters.deltamerge.delta.log import (
    definition_actions,
    materialized_columns,
    with_transaction_retention,
)
from dbt.adapters.deltamerge.delta.txn import (
    CommitActions,
    CommitInfo,
    CommitOptions,
    ReadSet,
    WriteResult,
    commit_files,
    merge_file_metrics,
    merge_metrics,
    timing_metrics,
)
from dbt.adapters.deltamerge.merge.clauses import MergeClause
from dbt.adapters.deltamerge.merge.execute.output import Executed
from dbt.adapters.deltamerge.merge.plan import MergePlan
from dbt.adapters.deltamerge.merge.spec import MergeSpec


def commit_merge(
    read: Snapshot,
    plan: MergePlan,
    executed: Executed,
    *,
    metrics: Mapping[str, int],
    txn: tuple[str, int] | None = None,
) -> WriteResult:
    """Commit what ``executed`` wrote on top of ``read`` (the version the merge read), or nothing."""
    target, out = plan.snapshot, executed.output
    leading = definition_actions(read, target)
    if not out.counts.changed and not leading:
        for path in [f.path for f in out.written] + [c.path for c in out.changes]:
            target.location.store.delete_file(local_path(target.table_path, path), missing_ok=True)
        return WriteResult(None, "MERGE", dict(metrics), target)
    if txn is not None:
        # Only a merge that commits anyway gives an older table the txn retention.
        target = with_transaction_retention(target)
        leading = definition_actions(read, target)
    pruning = executed.pruning
    files = CommitActions(
        leading=leading,
        written=out.written,
        removed=executed.removed,
        changes=out.changes,
        readded=executed.vectors.readded if executed.vectors else (),
    )
    info = CommitInfo(
        "MERGE",
        merge_parameters(plan.spec),
        dict(metrics),
        txn=txn,
        row_ids_kept=materialized_columns(target.metadata.configuration) is not None,
    )
    read_set = ReadSet(
        files_read=frozenset(f.path for f in plan.candidates),
        removed=frozenset(f.path for f in executed.removed),
        reads=lambda added: pruning is None or bool(pruning.keep(added)),
    )
    return commit_files(target, files, CommitOptions(info, read=read_set))


def executed_metrics(
    plan: MergePlan, executed: Executed, *, execution_ms: int, materialize_ms: int = 0
) -> dict[str, int]:
    """Every MERGE metric Delta records (and the contract's), from the plan and what its executor did."""
    out, vectors = executed.output, executed.vectors
    files = merge_file_metrics(
        snapshot_files=plan.snapshot.files,
        candidates=plan.candidates,
        # Merge-on-read: a file that got a deletion vector stays; only files gone whole count.
        removed=vectors.fully_removed if vectors else executed.removed,
        written=out.written,
        changes=out.changes,
        partitioned=bool(plan.snapshot.partition_columns),
    )
    rows = out.counts.to_metrics()
    timings = timing_metrics(execution_ms, executed.scan_ms, executed.rewrite_ms)
    timings["materializeSourceTimeMs"] = materialize_ms
    marked = (vectors or VectorUpdate()).metrics("Target")
    return {**merge_metrics(source_rows=executed.source_rows, rows=rows, files=files), **marked, **timings}


def merge_parameters(spec: MergeSpec) -> dict[str, object]:
    """``operationParameters`` of a MERGE commit (JSON-encoded by the commit writer)."""
    return {
        "predicate": [spec.on_condition],
        "matchedPredicates": _predicates(spec.matched),
        "notMatchedPredicates": _predicates(spec.not_matched),
        "notMatchedBySourcePredicates": _predicates(spec.not_matched_by_source),
    }


def _predicates(clauses: tuple[MergeClause, ...]) -> list[dict[str, str]]:
    out = []
    for clause in clauses:
        entry: dict[str, str] = {"actionType": str(clause.action)}
        if clause.condition:
            entry["predicate"] = clause.condition
        out.append(entry)
    return out
