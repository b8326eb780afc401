"""The actions a commit adds for files written before it: ``add`` and ``cdc``.

Pure values (no Spark): the data layer writes the files and describes them with these; the
commit path turns them into the log's actions.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def add_actions(files: list[WrittenFile]) -> list[dict[str, object]]:
    """``add`` actions for freshly written files, stamped now."""
    stamp = now_ms()
    return [f.add_action(modification_time=stamp) for f in files]
