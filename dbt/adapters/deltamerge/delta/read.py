"""Reading chosen files of a snapshot as a Spark DataFrame with the table's schema.

Spark is given the exact files from the Delta log (never a directory listing, which
would include removed and uncommitted files) and the table schema, so columns added
after a file was written read as null and partition values come back typed.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta.paths import local_path
from dbt.adapters.deltamerge.delta.snapshot import AddFile, Snapshot


def read_files(spark: SparkSession, snapshot: Snapshot, files: Sequence[AddFile]) -> DataFrame:
    """The rows of ``files`` (live files of ``snapshot``) in table column order.

    Every read of a table's data files comes here, after the table's reader features are
    checked (``Snapshot.check_readable``): a feature this read does not implement fails naming
    it, before any row is read.
    """
    snapshot.check_readable()
    schema = snapshot.schema
    if not files:
        return spark.createDataFrame([], schema)
    reader = spark.read.schema(schema)
    if snapshot.partition_columns:
        reader = reader.option("basePath", snapshot.table_path)
    paths = [local_path(snapshot.table_path, f.path) for f in files]
    rows = reader.parquet(*paths)
    deleted = [f"{path}#{i}" for path, f in zip(paths, files, strict=True) for i in f.deleted_rows]
    if deleted:
        position = F.concat_ws("#", file_path(), F.col("_metadata.row_index").cast("string"))
        rows = rows.where(~position.isin(deleted))
    return rows.select(*[F.col(quote_identifier(f.name)) for f in schema.fields])


def file_path() -> Column:
    """The local path of the file a scanned row comes from (Spark's ``_metadata.file_path`` is a URI).

    ``url_decode`` would read a ``+`` as a space; Hadoop leaves ``+`` unquoted in its URIs.
    """
    uri = F.replace(F.col("_metadata.file_path"), F.lit("+"), F.lit("%2B"))
    return F.regexp_replace(F.url_decode(uri), "^file:/*", "/")
