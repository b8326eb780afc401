from __future__ import annotations

import pytest
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.model.contract import OWNED_CHECKS, ModelContract, contract_change


def test_column_and_model_constraints():
    contract = ModelContract.from_node(
        "m",
        {
            "id": {
                "name": "id",
                "constraints": [{"type": "not_null"}, {"type": "check", "expression": "id > 0"}],
            },
            "v": {"name": "v", "constraints": [{"type": "foreign_key", "to": "x"}]},
        },
        [
            {"type": "check", "name": "pair", "expression": "v > id", "columns": ["v", "id"]},
            {"type": "not_null", "columns": ["v"]},
        ],
    )
    assert contract.not_null == ("id", "v")
    assert contract.checks == (("check_id_367a3353", "id > 0"), ("pair", "v > id"))
    assert contract.informational == ("foreign_key (v)",)
    assert contract.properties() == {
        "delta.constraints.check_id_367a3353": "id > 0",
        "delta.constraints.pair": "v > id",
        OWNED_CHECKS: "check_id_367a3353,pair",
    }
    schema = T.StructType([T.StructField("id", T.LongType()), T.StructField("w", T.LongType(), False)])
    assert [f.nullable for f in contract.definition(schema).fields] == [False, True]


def test_problems_are_collected():
    with pytest.raises(SpecError) as caught:
        ModelContract.from_node(
            "m",
            {
                "a": {
                    "name": "a",
                    "constraints": [{"type": "check"}, {"type": "check", "name": "x", "expression": "1"}],
                }
            },
            [{"type": "check", "name": "X", "expression": "2"}, {"type": "exclusion"}],
        )
    assert caught.value.problems == [
        "a check constraint on a has no expression",
        "constraint type 'exclusion' is not supported on Delta tables",
        "two check constraints are named 'x'",
    ]


def test_a_changed_contract_changes_only_what_it_owns():
    schema = T.StructType([T.StructField("id", T.LongType(), False)])
    old = {"delta.constraints.a": "id > 0", OWNED_CHECKS: "a", "delta.constraints.theirs": "id < 9", "k": "v"}
    change = contract_change(ModelContract((), (("a", "id > 1"),)), old, schema)
    assert (change.add, change.drop, change.nullable) == ({"a": "id > 1"}, ("a",), {"id": True})
    assert change.properties(old) == {
        "delta.constraints.a": "id > 1",
        "delta.constraints.theirs": "id < 9",
        "k": "v",
        OWNED_CHECKS: "a",
    }
    same = contract_change(ModelContract(("id",), (("a", "id > 0"),)), old, schema)
    assert not same
