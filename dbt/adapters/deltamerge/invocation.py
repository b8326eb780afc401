"""What one dbt invocation knows, in one object: its stores, its catalog reads, its write numbers.

dbt's Python API (``dbtRunner``) may run many invocations in one process, one after another: each
gets a new invocation id (``dbt_common.invocation``), a new adapter and new connections. What an
invocation learns belongs to it, not to the process:

- ``stores``: the local disk and the object stores its profile's options reach (``delta.Stores``:
  the options, a bucket's own, one obstore client per bucket), configured when its connections
  open (``connections.store_settings``); every table it places or finds in the catalog is reached
  through them (``TableLocation.stores``), so two invocations with two profiles never share
  credentials or clients;
- ``catalog``: the catalog names its statements read, bound to their tables' latest versions
  (``statements/fresh.CatalogReads``) and the schemas' folders; a later invocation starts knowing
  nothing (another writer may have committed or redefined anything in between);
- ``writes``: the Delta ``txn`` number of each model's writes (``model/txn.WriteNumbers``).

The root modules (``impl``, ``cursor``, ``python_models``) fetch the current one; the engine gets
what it needs of it as arguments. The objects are kept in ``spark/process.ProcessState`` by
invocation id (the last few: a thread of an ending invocation still finds its own).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dbt_common.invocation import get_invocation_id

from dbt.adapters.deltamerge.delta import Stores
from dbt.adapters.deltamerge.model.txn import WriteNumbers
from dbt.adapters.deltamerge.spark.process import PROCESS
from dbt.adapters.deltamerge.statements.run.fresh import CatalogReads

# Invocations kept: dbt runs one at a time; the previous ones only while their threads end.
KEPT = 4


@dataclass(frozen=True)
class Invocation:
    """One dbt invocation's knowledge (see the module's docstring)."""

    id: str
    stores: Stores = field(default_factory=Stores, compare=False)
    catalog: CatalogReads = field(init=False, compare=False)
    writes: WriteNumbers = field(default_factory=WriteNumbers, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "catalog", CatalogReads(self.stores))

    def next_txn(self, schema: str, identifier: str) -> tuple[str, int]:
        """The Delta ``txn`` (appId, version) of the next write of ``schema.identifier``."""
        return self.writes.next(self.id, schema, identifier)


def current() -> Invocation:
    """The invocation dbt runs now (by its invocation id), made on first use."""
    key = get_invocation_id()
    with PROCESS.invocations_lock:
        found = PROCESS.invocations.get(key)
        if found is None:
            found = PROCESS.invocations[key] = Invocation(key)
            while len(PROCESS.invocations) > KEPT:
                PROCESS.invocations.pop(next(iter(PROCESS.invocations)))
    return found
