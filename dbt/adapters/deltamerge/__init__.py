"""dbt-deltamerge: Delta Lake MERGE for dbt on Spark, run by a Python engine on PySpark."""

from dbt.adapters.base import AdapterPlugin

from dbt.adapters.deltamerge.connections import DeltaMergeConnectionManager, DeltaMergeCredentials
from dbt.adapters.deltamerge.impl import DeltaMergeAdapter
from dbt.adapters.deltamerge.namespace import expose_package_namespace
from dbt.adapters.deltamerge.spark.process import freeze_imports
from dbt.include import deltamerge

expose_package_namespace()
freeze_imports("plugin")  # dbt's and this plugin's modules live until exit (spark/process.py)

Plugin = AdapterPlugin(
    adapter=DeltaMergeAdapter,  # type: ignore[arg-type]
    credentials=DeltaMergeCredentials,
    include_path=deltamerge.PACKAGE_PATH,
    dependencies=["spark"],
    project_name="deltamerge",
)

__all__ = ["DeltaMergeAdapter", "DeltaMergeConnectionManager", "DeltaMergeCredentials", "Plugin"]
