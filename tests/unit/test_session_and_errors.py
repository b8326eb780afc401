"""The embedded session's heap and the error boundary's message for Spark failures."""

from __future__ import annotations

import pytest
from pyspark.errors import PySparkException

from dbt.adapters.deltamerge.connections import driver_memory, machine_memory, session_conf
from dbt.adapters.deltamerge.errors import OUT_OF_MEMORY_HINT, ModelWriteError, model_errors


def test_the_heap_is_a_quarter_of_the_machine_and_never_below_sparks_default():
    assert driver_memory(23 * 2**30) == "5888m"
    assert driver_memory(3 * 2**30) == "1024m"
    assert driver_memory(None) == "1024m"


def test_the_profile_sets_the_heap_over_the_default():
    assert session_conf("/w", {})["spark.driver.memory"] == driver_memory(machine_memory())
    assert session_conf("/w", {"spark.driver.memory": "3g"})["spark.driver.memory"] == "3g"


def test_many_shuffle_partitions_come_with_adaptive_coalescing():
    # 64 partitions keep a 50M-row join in memory; without coalescing every small merge
    # would write 64 files.
    conf = session_conf("/w", {})
    assert conf["spark.sql.shuffle.partitions"] == "64"
    assert conf["spark.sql.adaptive.enabled"] == "true"
    assert conf.get("spark.sql.adaptive.coalescePartitions.enabled", "true") == "true"
    assert session_conf("/w", {"spark.sql.shuffle.partitions": "8"})["spark.sql.shuffle.partitions"] == "8"


@pytest.mark.parametrize(
    ("spark_text", "hinted"),
    [
        ("Job aborted due to stage failure: java.lang.OutOfMemoryError: Java heap space", True),
        ("[DIVIDE_BY_ZERO] Division by zero.", False),
    ],
)
def test_a_spark_failure_names_the_model_and_out_of_memory_names_the_setting(spark_text, hinted):
    with pytest.raises(ModelWriteError) as raised, model_errors("orders"):
        raise PySparkException(message=spark_text)
    text = str(raised.value)
    assert "Model 'orders': Spark failed; the table is unchanged." in text
    assert spark_text in text
    assert (OUT_OF_MEMORY_HINT in text) is hinted
    assert ("`spark.driver.memory`" in text) is hinted
