"""What one commit does, as pure values (no Spark): the files written before it (``add`` and
``cdc`` actions to be), and ``CommitActions``, everything a commit puts in the log but its
``commitInfo`` and ``txn`` (those come with its ``CommitOptions``, ``transaction.py``).

The data layer writes the files and describes them with these; the commit path turns them into
the log's actions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dbt.adapters.deltamerge.delta.log.iceberg_compat import ICEBERG_COMPAT_TAG, compat_v2
from dbt.adapters.deltamerge.delta.log.snapshot import AddFile
from dbt.adapters.deltamerge.delta.txn.commit import now_ms


@dataclass(frozen=True)
class WrittenFile:
    """A data file written for a commit that does not exist yet."""

    path: str
    size: int
    partition_values: dict[str, str | None]
    stats: str
    num_records: int
    # The clustering implementation that clustered the file (OPTIMIZE of a clustered table).
    clustering_provider: str | None = None

    def add_action(self, *, modification_time: int) -> dict[str, object]:
        """The ``add`` action for this file."""
        add: dict[str, object] = {
            "path": self.path,
            "partitionValues": self.partition_values,
            "size": self.size,
            "modificationTime": modification_time,
            "dataChange": True,
            "stats": self.stats,
        }
        if self.clustering_provider is not None:
            add["clusteringProvider"] = self.clustering_provider
        return {"add": add}


@dataclass(frozen=True)
class ChangeFile:
    """A change data file (``_change_data/``) written for a commit that does not exist yet."""

    path: str
    size: int
    partition_values: dict[str, str | None]

    def cdc_action(self) -> dict[str, object]:
        """The ``cdc`` action for this file."""
        return {
            "cdc": {
                "path": self.path,
                "partitionValues": self.partition_values,
                "size": self.size,
                "dataChange": False,
            }
        }


def add_actions(
    files: Sequence[WrittenFile], configuration: Mapping[str, str] | None = None
) -> list[dict[str, object]]:
    """``add`` actions for freshly written files, stamped now; in an IcebergCompatV2 table (its
    properties after the commit: ``configuration``) each tagged ``ICEBERG_COMPAT_VERSION = 2`` as
    Delta's writer tags them (its ``REORG ... UPGRADE UNIFORM`` rewrites the files without the tag)."""
    stamp = now_ms()
    adds = [f.add_action(modification_time=stamp) for f in files]
    if configuration is not None and compat_v2(configuration):
        for action in adds:
            add = action["add"]
            assert isinstance(add, dict)
            add["tags"] = {**add.get("tags", {}), ICEBERG_COMPAT_TAG: "2"}
    return adds


@dataclass(frozen=True)
class CommitActions:
    """What one commit changes: ``leading`` actions first (a new ``protocol``, ``metaData``,
    domains), then a ``remove`` of each of ``removed``, an ``add`` of each of ``written``, the
    ``readded`` files' ``add`` actions (files removed and added again with new deletion vectors,
    ``row_deletion``), and a ``cdc`` action of each of ``changes``."""

    leading: Sequence[dict[str, Any]] = ()
    written: Sequence[WrittenFile] = ()
    removed: Sequence[AddFile] = ()
    changes: Sequence[ChangeFile] = ()
    readded: Sequence[dict[str, Any]] = ()
