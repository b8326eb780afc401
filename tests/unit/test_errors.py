"""The error boundary: a Spark failure names the model, and an out-of-memory failure the setting."""

from __future__ import annotations

import pytest
from pyspark.errors import PySparkException

from dbt.adapters.deltamerge.errors import OUT_OF_MEMORY_HINT, ModelWriteError, model_errors


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
