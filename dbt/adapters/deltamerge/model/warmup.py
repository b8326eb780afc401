"""The warm local server's warm-up process (``python -m dbt.adapters.deltamerge.model.warmup <spec>``):
its round, run between commands by ``spark/warmup.main``.

A round is what a dbt command with one small model asks of Spark, through the same functions:
dbt's listing of the schema (``SHOW TABLE EXTENDED``), the catalog entry read, the model's write
(an incremental model's merge of 100 rows on their key, every row updated; every
``TABLE_EVERY``-th round a table model's write) and the catalog binding. Only the write runs
inside ``interruptible`` (its Spark jobs and the commit): a dbt command arriving may interrupt
those, never the metastore's statements (Derby closes a connection whose thread is interrupted).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Literal

from pyspark.sql import SparkSession

from dbt.adapters.deltamerge import binding
from dbt.adapters.deltamerge.delta import Stores
from dbt.adapters.deltamerge.delta.txn import WriteResult
from dbt.adapters.deltamerge.model.spec import ModelSpec
from dbt.adapters.deltamerge.model.write import CatalogEntry, ModelRun, locate, write_model
from dbt.adapters.deltamerge.spark import warmup

TABLE_EVERY = 8
IDENTIFIER = "small"
MODEL_SQL = "select id, concat('v', cast(id as string)) as v, current_timestamp() as ts from range(100)"


def run_round(
    spark: SparkSession, schema: str, number: int, interruptible: Callable[[], AbstractContextManager[object]]
) -> None:
    """Round ``number`` on table ``schema.small`` (round 0 writes it as a table model)."""
    table_round = number % TABLE_EVERY == 0
    materialization: Literal["table", "incremental"] = "table" if table_round else "incremental"
    config = {} if table_round else {"unique_key": "id", "incremental_strategy": "delta_merge"}
    spec = ModelSpec.from_config("warmup", config, materialization)
    spark.sql(f"SHOW TABLE EXTENDED IN {schema} LIKE '*'").collect()
    stores = Stores()  # the warm-up's own process: its environment's stores
    found = binding.binding(spark, schema, IDENTIFIER, stores)
    entry = CatalogEntry(
        schema, IDENTIFIER, found.table_path if found else None, found.properties if found else None
    )
    table = locate(
        spark,
        spec,
        entry,
        incremental=not table_round,
        txn=(f"dbt-deltamerge:warmup-{os.getpid()}:{schema}.{IDENTIFIER}", number),
        stores=stores,
    )
    with interruptible():
        written = write_model(
            spark,
            spark.sql(MODEL_SQL),
            table=table,
            spec=spec,
            run=ModelRun(materialization=materialization),
            bind=False,
        )
    assert isinstance(written, WriteResult)
    binding.bind(
        spark, schema=schema, identifier=IDENTIFIER, snapshot=written.snapshot, current=table.catalog
    )


if __name__ == "__main__":
    sys.exit(warmup.main(sys.argv[1:], run_round))
