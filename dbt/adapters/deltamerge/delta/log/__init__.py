"""The log's room: a version's state read from the Delta log, and the rules of the format.

``Snapshot`` (one version: protocol, metadata, live files; ``load_snapshot``, deltalake's reader),
our replay of what deltalake does not hand out (deletion vectors, row ids, domain metadata), table
features and properties, the schema and its evolution, column mapping, identity columns,
statistics. No Spark job and no pyspark beyond its type values (``tools/lint_layout.py``, rule 6).
Callers outside ``delta/`` import this face, never its modules.
"""

from __future__ import annotations

from dbt.adapters.deltamerge.delta.log.definition import (
    DEFAULT_TXN_RETENTION,
    NO_CHANGE,
    TXN_RETENTION_PROPERTY,
    Redefinition,
    TableChange,
    changed,
    definition_actions,
    redefined,
    with_change_data_feed,
    with_deletion_vectors,
    with_schema,
    with_transaction_retention,
)
from dbt.adapters.deltamerge.delta.log.deletion_vectors import serialize
from dbt.adapters.deltamerge.delta.log.evolution import can_write, evolved_schema, schema_changes
from dbt.adapters.deltamerge.delta.log.features import check_writable, configuration_problems
from dbt.adapters.deltamerge.delta.log.iceberg_compat import (
    COMPAT_V2,
    REGISTERED_AS,
    REGISTERED_IN,
    TABLE_FORMAT_ICEBERG,
    Registration,
    compat_v2,
    iceberg_enabled,
    registration,
    registration_properties,
)
from dbt.adapters.deltamerge.delta.log.identity import (
    Identity,
    explicit_values_refused,
    identity_columns,
    identity_value_column,
    metadata,
)
from dbt.adapters.deltamerge.delta.log.mapping import MAPPING_MODE, mapping_mode, physical_name, physical_type
from dbt.adapters.deltamerge.delta.log.properties import AUTO_COMPACT, DEFAULT_RETENTION_HOURS, value_problems
from dbt.adapters.deltamerge.delta.log.protocol import CDF_PROPERTY, change_data_feed_enabled
from dbt.adapters.deltamerge.delta.log.replay import log_state
from dbt.adapters.deltamerge.delta.log.row_ids import (
    STABLE_COLUMNS,
    STABLE_ROW_COMMIT_VERSION,
    STABLE_ROW_ID,
    materialized_columns,
)
from dbt.adapters.deltamerge.delta.log.schema import find_field, schema_from_json, schema_to_json
from dbt.adapters.deltamerge.delta.log.vector_files import vector_file, z85_encode

__all__ = [
    "AUTO_COMPACT",
    "CDF_PROPERTY",
    "COMPAT_V2",
    "DEFAULT_RETENTION_HOURS",
    "DEFAULT_TXN_RETENTION",
    "MAPPING_MODE",
    "NO_CHANGE",
    "REGISTERED_AS",
    "REGISTERED_IN",
    "STABLE_COLUMNS",
    "STABLE_ROW_COMMIT_VERSION",
    "STABLE_ROW_ID",
    "TABLE_FORMAT_ICEBERG",
    "TXN_RETENTION_PROPERTY",
    "Identity",
    "Redefinition",
    "Registration",
    "TableChange",
    "can_write",
    "change_data_feed_enabled",
    "changed",
    "check_writable",
    "compat_v2",
    "configuration_problems",
    "definition_actions",
    "evolved_schema",
    "explicit_values_refused",
    "find_field",
    "iceberg_enabled",
    "identity_columns",
    "identity_value_column",
    "log_state",
    "mapping_mode",
    "materialized_columns",
    "metadata",
    "physical_name",
    "physical_type",
    "redefined",
    "registration",
    "registration_properties",
    "schema_changes",
    "schema_from_json",
    "schema_to_json",
    "serialize",
    "value_problems",
    "vector_file",
    "with_change_data_feed",
    "with_deletion_vectors",
    "with_schema",
    "with_transaction_retention",
    "z85_encode",
]
