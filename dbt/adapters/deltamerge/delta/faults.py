"""Crash points for the reliability tests: a real SIGKILL at a named step of a write.

``DELTAMERGE_CRASH_AT=<point>`` in a process's environment makes it kill itself (no
cleanup, no ``finally``, exactly as an OOM kill or a pulled plug) when it reaches that
point. Unset, each point costs one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

POINTS = (
    "before_data_files",  # the source is computed, no file written yet
    "after_staging",  # Spark wrote the files into staging
    "mid_placement",  # the first file was moved to its place in the table
    "before_commit",  # every file is in place, no commit yet
    "commit_file_written",  # the commit's temporary file is written and synced, not linked
    "after_commit",  # the version is committed, no checkpoint yet
    "before_catalog_bind",  # committed, the catalog still reads the old version
    "mid_catalog_bind",  # the catalog entry was dropped, not created again
)


def crash_point(name: str) -> None:
    """Kill this process if the environment asks for a crash at ``name``."""
    if os.environ.get("DELTAMERGE_CRASH_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)
