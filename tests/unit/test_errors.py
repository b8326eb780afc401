"""The error boundary: a Spark failure names the model, and an out-of-memory failure the setting."""

from __future__ import annotations

import pytest
from pyspark.errors import PySparkException

from dbt.adapters.deltamerge.delta.location import TableLocation
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


def test_a_failure_after_a_commit_says_the_version_landed_and_the_step_that_failed(tmp_path):
    from dbt.adapters.deltamerge.delta.ledger import after_commit
    from dbt.adapters.deltamerge.delta.txn.commit import CommitInfo, commit

    with pytest.raises(ModelWriteError) as raised, model_errors("orders"):
        version = commit(
            TableLocation.of(str(tmp_path)), read_version=-1, actions=[], info=CommitInfo("WRITE")
        )
        with after_commit("binding the new version as s.orders in Spark's catalog"):
            raise PySparkException(message="[UNREACHABLE] the server is gone")
    text = raised.value.msg
    assert version == 0 and "unchanged" not in text
    assert text.startswith(
        f"Model 'orders': Delta version 0 of {tmp_path} was committed (WRITE); then binding the new "
        "version as s.orders in Spark's catalog failed. The data is written: do not re-run to redo it"
    )
    assert "[UNREACHABLE] the server is gone" in text


def test_a_failure_before_any_commit_of_its_own_is_not_told_as_a_commit():
    from dbt.adapters.deltamerge.delta.ledger import record

    record("/elsewhere", 3, "MERGE")  # outside any boundary: no ledger holds it
    with pytest.raises(ModelWriteError) as raised, model_errors("orders"):
        raise PySparkException(message="[DIVIDE_BY_ZERO] Division by zero.")
    assert "Spark failed; the table is unchanged." in str(raised.value)


def test_a_constraint_violation_is_the_datas_fault_in_deltas_words():
    spark_text = (
        "[USER_RAISED_EXCEPTION] [DELTA_VIOLATE_CONSTRAINT_WITH_VALUES] CHECK constraint positive (v > 0) "
        "violated by row with values:\n - v : -1 SQLSTATE: P0001\n== SQL (line 1, position 1) =="
    )
    with pytest.raises(ModelWriteError) as raised, model_errors("orders"):
        raise PySparkException(message=spark_text)
    assert raised.value.msg == (
        "Model 'orders': a row violates the table's constraints; nothing was committed.\n"
        "[DELTA_VIOLATE_CONSTRAINT_WITH_VALUES] CHECK constraint positive (v > 0) "
        "violated by row with values:\n"
        " - v : -1"
    )
