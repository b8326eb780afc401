"""dbt-deltamerge: Delta Lake MERGE for dbt on Spark, run by a Python engine on PySpark.

Importing the plugin changes nothing in the process; what it changes, it does when dbt makes its
connection manager (``connections.prepare_process``).
"""

from dbt.adapters.base import AdapterPlugin

from dbt.adapters.deltamerge.connections import DeltaMergeConnectionManager, DeltaMergeCredentials
from dbt.adapters.deltamerge.impl import DeltaMergeAdapter
from dbt.include import deltamerge

Plugin = AdapterPlugin(
    adapter=DeltaMergeAdapter,  # type: ignore[arg-type]
    credentials=DeltaMergeCredentials,
    include_path=deltamerge.PACKAGE_PATH,
    dependencies=["spark"],
    project_name="deltamerge",
)

__all__ = ["DeltaMergeAdapter", "DeltaMergeConnectionManager", "DeltaMergeCredentials", "Plugin"]
