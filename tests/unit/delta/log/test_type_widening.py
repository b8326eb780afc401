"""Which recorded type changes a read of a type-widened table supports (PROTOCOL.md's list)."""

from __future__ import annotations

import json

import pytest

from dbt.adapters.deltamerge.delta.log.type_widening import supported_change, type_change_problems

SUPPORTED = [
    ("byte", "short"),
    ("byte", "long"),
    ("short", "integer"),
    ("integer", "long"),
    ("float", "double"),
    ("byte", "double"),
    ("integer", "double"),
    ("date", "timestamp_ntz"),
    ("decimal(5,2)", "decimal(7,3)"),
    ("decimal(5, 2)", "decimal(5, 2)"),
    ("integer", "decimal(10,0)"),
    ("short", "decimal(12,2)"),
    ("long", "decimal(20,0)"),
    ("long", "decimal(25,5)"),
]
UNSUPPORTED = [
    ("long", "integer"),
    ("double", "float"),
    ("long", "double"),
    ("string", "long"),
    ("date", "timestamp"),
    ("decimal(5,2)", "decimal(6,4)"),
    ("decimal(5,2)", "decimal(4,2)"),
    ("integer", "decimal(9,0)"),
    ("long", "decimal(19,0)"),
    ("timestamp_ntz", "date"),
]


@pytest.mark.parametrize(("source", "target"), SUPPORTED)
def test_the_protocol_s_widenings_are_supported(source, target):
    assert supported_change(source, target)


@pytest.mark.parametrize(("source", "target"), UNSUPPORTED)
def test_anything_else_is_not(source, target):
    assert not supported_change(source, target)


def test_changes_of_nested_fields_are_named_by_their_path():
    element = {"type": "array", "elementType": "long", "containsNull": True}
    changes = [{"fromType": "string", "toType": "long", "fieldPath": "element"}]
    inner = {"name": "xs", "type": element, "nullable": True, "metadata": {"delta.typeChanges": changes}}
    outer = {"name": "s", "type": {"type": "struct", "fields": [inner]}, "nullable": True, "metadata": {}}
    schema = json.dumps({"type": "struct", "fields": [outer]})
    assert type_change_problems(schema) == [
        "type change of `s.xs.element` from string to long (typeWidening)"
    ]
