"""The dbt process's collector: frozen once per point, nothing collected at exit (a real interpreter)."""

from __future__ import annotations

import subprocess
import sys

CHILD = """
import gc
from dbt.adapters.deltamerge.spark.process import freeze_imports

gc.unfreeze()
assert freeze_imports("first") and gc.get_freeze_count() > 0
frozen = gc.get_freeze_count()
kept = [[i] for i in range(1000)]
assert not freeze_imports("first") and gc.get_freeze_count() == frozen  # passed once: no second freeze
assert freeze_imports("second") and gc.get_freeze_count() >= frozen + 1000


class Cycle:
    def __del__(self):
        print("collected at exit")


garbage = Cycle()
garbage.self = garbage
del garbage  # a cycle: only the collector frees it
print("done")
"""


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_each_point_freezes_once_and_the_exit_collects_nothing() -> None:
    assert _run(CHILD).split() == ["done"]


def test_without_it_the_exit_collection_walks_the_garbage() -> None:
    # The control: the same cycle in a process that froze nothing is collected at exit.
    plain = CHILD.split("\n\nclass Cycle:", 1)[1]
    assert _run("class Cycle:" + plain).splitlines() == ["done", "collected at exit"]
