"""The dbt process around the Spark client: Python's cyclic collector kept off what lives until exit.

A small ``dbt run`` on the warm server spends most of its time in Python, and much of that in
the cyclic garbage collector: dbt, pyspark's Spark Connect client, pandas, pyarrow and grpc
leave millions of long-lived objects (modules, classes, functions, dbt's manifest), and every
full collection walks all of them again (measured in one ``dbt run`` of a 100-row merge: 5 full
collections, 0.39 s), as does the interpreter's last collection at exit (0.3 s).

Objects that exist once the imports are done live until the process ends. ``gc.freeze()``
moves them out of the collector's reach: later collections walk only what came after, and
none of them is ever freed by the collector (reference counting still frees what is not in a
cycle). That is done at two points, each once per process whatever runs in it (dbt's Python
API may invoke dbt many times): after this plugin's imports, and after the Spark client's.
At exit the process's objects are frozen too, so the interpreter's last collection walks
nothing: the memory goes back to the system with the process.
"""

from __future__ import annotations

import atexit
import gc

_FROZEN: set[str] = set()


def freeze_imports(point: str) -> bool:
    """Freeze every object alive now, the first time ``point`` is reached in this process.

    Returns whether it froze (False: ``point`` was passed before).

    >>> freeze_imports("doctest"), freeze_imports("doctest")
    (True, False)
    """
    if point in _FROZEN:
        return False
    if not _FROZEN:
        # Registered once, at the first point: it runs after every exit handler registered later.
        atexit.register(gc.freeze)
    _FROZEN.add(point)
    gc.freeze()
    return True
