"""A model's write config parsed (``WriteSpec``) and the write one run makes (``plan_write``)."""

from __future__ import annotations

import pytest

from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.model.spec import WriteSpec, plan_write


def test_write_spec_defaults_and_parsing():
    spec = WriteSpec.from_config("m", {"partition_by": "day", "tblproperties": {"delta.appendOnly": False}})
    assert (spec.file_format, spec.strategy, spec.partition_by) == ("delta", "append", ("day",))
    assert spec.tblproperties == {"delta.appendOnly": "false"}


def test_write_spec_collects_every_problem_and_names_the_model():
    with pytest.raises(SpecError) as err:
        WriteSpec.from_config(
            "orders",
            {
                "file_format": "csv",
                "incremental_strategy": "upsert",
                "partition_by": [1],
                "on_schema_change": "maybe",
            },
        )
    assert err.value.model == "orders" and len(err.value.problems) == 4
    assert "Model 'orders'" in str(err.value) and "'upsert'" in str(err.value)


@pytest.mark.parametrize(
    ("strategy", "exists", "full_refresh", "mode"),
    [
        ("append", False, False, "create_or_replace"),
        ("append", True, False, "append"),
        ("append", True, True, "create_or_replace"),
        ("insert_overwrite", True, False, "replace_partitions"),
    ],
)
def test_plan_write_modes(strategy, exists, full_refresh, mode):
    spec = WriteSpec.from_config("m", {"incremental_strategy": strategy})
    request = plan_write(
        spec, materialization="incremental", table_path="/t", exists=exists, full_refresh=full_refresh
    )
    assert request.mode == mode


def test_microbatch_replaces_its_window():
    spec = WriteSpec.from_config("m", {"incremental_strategy": "microbatch", "event_time": "at"})
    request = plan_write(
        spec,
        materialization="incremental",
        table_path="/t",
        exists=True,
        full_refresh=False,
        batch=("2026-01-01 00:00:00", "2026-01-02 00:00:00"),
    )
    assert request.mode == "replace_where"
    assert request.replace_where == (
        "`at` >= timestamp'2026-01-01 00:00:00' AND `at` < timestamp'2026-01-02 00:00:00'"
    )
