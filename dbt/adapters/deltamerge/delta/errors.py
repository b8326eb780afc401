"""Errors of the Delta table layer. They know nothing of dbt; the adapter wraps them."""

from __future__ import annotations

from dbt.adapters.deltamerge.common.errors import EngineError


class DeltaError(EngineError):
    """Base class: a Delta table operation that was refused or failed."""


class DeltaSchemaError(DeltaError):
    """A schema that cannot be written to a Delta table."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("the schema cannot be stored in Delta:\n  - " + "\n  - ".join(problems))


class UnsupportedTableFeature(DeltaError):
    """The table uses a protocol feature this writer does not implement."""


class NotADeltaTable(DeltaError):
    """A location holds files but no ``_delta_log``."""


class ConcurrentModification(DeltaError):
    """Another writer committed a conflicting version first."""


class StorageError(DeltaError):
    """The dbt process could not read or write a path of a table (a local file or an object)."""
