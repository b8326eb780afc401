"""The data room: rows through Spark.

Reading a version's files (deletion vectors applied), writing data files (and change files),
fitting rows to a table's schema, constraints and generated columns, deletion vectors marked from
rows, the four table writes (``write_dataframe``). Callers outside ``delta/`` import this face,
never its modules.
"""

from __future__ import annotations

from dbt.adapters.deltamerge.delta.data.align import align_to_schema, aligned_columns, store_assigned
from dbt.adapters.deltamerge.delta.data.column_values import (
    CURRENT_DEFAULT,
    computed_columns,
    default_value,
    regenerated,
    substituted,
    with_identity_values,
)
from dbt.adapters.deltamerge.delta.data.constraints import (
    CONSTRAINT_PREFIX,
    GENERATION_EXPRESSION,
    Constraints,
    enforced,
    generated_columns,
    referenced_columns,
)
from dbt.adapters.deltamerge.delta.data.files import CHANGE_TYPE, OPTIMIZE_WRITE
from dbt.adapters.deltamerge.delta.data.read import FILE_URI, ROW_INDEX, block_masks, read_files
from dbt.adapters.deltamerge.delta.data.row_deletion import (
    ENABLE_PROPERTY,
    VectorUpdate,
    collect_positions,
    mark_deleted,
    writes_deletion_vectors,
)
from dbt.adapters.deltamerge.delta.data.stored import write_files, write_files_and_changes
from dbt.adapters.deltamerge.delta.data.write import WriteMode, WriteRequest, write_dataframe

__all__ = [
    "CHANGE_TYPE",
    "CONSTRAINT_PREFIX",
    "CURRENT_DEFAULT",
    "ENABLE_PROPERTY",
    "FILE_URI",
    "GENERATION_EXPRESSION",
    "OPTIMIZE_WRITE",
    "ROW_INDEX",
    "Constraints",
    "VectorUpdate",
    "WriteMode",
    "WriteRequest",
    "align_to_schema",
    "aligned_columns",
    "block_masks",
    "collect_positions",
    "computed_columns",
    "default_value",
    "enforced",
    "generated_columns",
    "mark_deleted",
    "read_files",
    "referenced_columns",
    "regenerated",
    "store_assigned",
    "substituted",
    "with_identity_values",
    "write_dataframe",
    "write_files",
    "write_files_and_changes",
    "writes_deletion_vectors",
]
