"""The commands' room: one command each (OPTIMIZE, Z-order, auto compaction, VACUUM, CONVERT,
column and table redefinition, comments, the change feed's reader, UniForm's upgrade in place).

Nothing imported with the adapter imports this face (``tests/unit/test_imports.py``): a dbt
command that writes nothing (``parse``, ``ls``, ``compile``) loads no command; the statements'
runners and the operations, loaded on first use, import it, and a model's write imports it
inside the function that runs a command. Callers outside ``delta/`` import this face, never its
modules (a command's function shadows its module's name here: ``optimize``, ``vacuum``,
``redefine`` are the functions).
"""

from __future__ import annotations

from dbt.adapters.deltamerge.delta.commands.auto_optimize import (
    auto_compact,
    auto_compact_enabled,
)
from dbt.adapters.deltamerge.delta.commands.change_feed import read_changes
from dbt.adapters.deltamerge.delta.commands.comments import set_descriptions
from dbt.adapters.deltamerge.delta.commands.convert import (
    ALREADY_DELTA,
    ConvertError,
    ConvertResult,
    convert_to_delta,
    parse_partition_schema,
)
from dbt.adapters.deltamerge.delta.commands.optimize import (
    OptimizeOptions,
    optimize,
    plan_bins,
    zorder_problems,
)
from dbt.adapters.deltamerge.delta.commands.redefine import (
    commit_after,
    commit_before,
    recluster,
    redefine,
)
from dbt.adapters.deltamerge.delta.commands.uniform_upgrade import not_iceberg_compatible, upgrade_uniform
from dbt.adapters.deltamerge.delta.commands.vacuum import vacuum
from dbt.adapters.deltamerge.delta.commands.zorder import ZOrderError

__all__ = [
    "ALREADY_DELTA",
    "ConvertError",
    "ConvertResult",
    "OptimizeOptions",
    "ZOrderError",
    "auto_compact",
    "auto_compact_enabled",
    "commit_after",
    "commit_before",
    "convert_to_delta",
    "not_iceberg_compatible",
    "optimize",
    "parse_partition_schema",
    "plan_bins",
    "read_changes",
    "recluster",
    "redefine",
    "set_descriptions",
    "upgrade_uniform",
    "vacuum",
    "zorder_problems",
]
