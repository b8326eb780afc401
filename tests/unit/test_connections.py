"""The profile: every field this adapter documents, given a value of a wrong kind, is refused naming it."""

from __future__ import annotations

import pytest
from dbt_common.dataclass_schema import ValidationError
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.deltamerge.connections import DeltaMergeCredentials

BASE = {"method": "session", "schema": "analytics", "warehouse": "/tmp/w"}


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("method", "sesion", "`method`"),
        ("method", 3, "`method`"),
        ("warehouse", 5, "`warehouse`"),
        ("warehouse", ["/w"], "`warehouse`"),
        ("schema", {"a": 1}, "`schema`"),
        ("host", 15002, "`host`"),
        ("server_side_parameters", "spark.master=local", "`server_side_parameters`"),
        ("server_side_parameters", {"spark.sql.shuffle.partitions": 4}, "`server_side_parameters.spark.sql"),
    ],
)
def test_a_profile_field_of_a_wrong_kind_is_named(field, value, named):
    with pytest.raises(ValidationError) as caught:
        DeltaMergeCredentials.validate({**BASE, field: value})
    assert caught.value.message.startswith(named), caught.value.message


def test_an_empty_warehouse_is_not_the_current_folder():
    with pytest.raises(DbtRuntimeError, match="`warehouse` must be a folder path, got ' '"):
        DeltaMergeCredentials.from_dict({**BASE, "warehouse": " "})


def test_connect_needs_a_spark_connect_url():
    with pytest.raises(DbtRuntimeError, match="needs `host` to be a Spark Connect URL"):
        DeltaMergeCredentials.from_dict({**BASE, "method": "connect", "host": "localhost:15002"})


def test_server_needs_no_host_and_keeps_the_warehouse_as_its_identity():
    creds = DeltaMergeCredentials.from_dict({**BASE, "method": "server", "server_idle_minutes": 5})
    assert creds.host == "localhost" and creds.unique_field == "/tmp/w" and creds.server_idle_minutes == 5


def test_a_negative_idle_time_is_refused_naming_the_key():
    expected = r"`server_idle_minutes` must be 0 \(never stop\) or more, got -1"
    with pytest.raises(DbtRuntimeError, match=expected):
        DeltaMergeCredentials.from_dict({**BASE, "method": "server", "server_idle_minutes": -1})


def test_warmup_rounds_default_to_the_server_s_and_a_negative_count_is_refused_naming_the_key():
    creds = DeltaMergeCredentials.from_dict({**BASE, "method": "server"})
    assert creds.server_warmup_rounds == 40
    assert DeltaMergeCredentials.from_dict({**BASE, "server_warmup_rounds": 0}).server_warmup_rounds == 0
    expected = r"`server_warmup_rounds` must be 0 \(no warm-up\) or more, got -2"
    with pytest.raises(DbtRuntimeError, match=expected):
        DeltaMergeCredentials.from_dict({**BASE, "method": "server", "server_warmup_rounds": -2})
