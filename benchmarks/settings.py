"""What one run of the benchmark harness measures, and where (shared by the harness and its runners)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Settings:
    """What one run of the harness measures, and where."""

    rows: int
    layouts: list[int]
    runs: int
    warmups: int
    workdir: str
    only: list[str] = field(default_factory=list)
    cold_dbt: bool = True
    # Workloads also run as a cold `dbt run` (empty: every measured one), and through a warm server too.
    cold_only: list[str] = field(default_factory=list)
    cold_server: bool = True
    noop_runs: int = 20
    # Records of an interrupted run of the same settings: their (workload, layout) are not re-run.
    resumed: list[dict[str, Any]] = field(default_factory=list)
