"""``binding.listed``: a catalog entry read from the ``SHOW TABLE EXTENDED`` text dbt caches.

The texts are Spark 4's, as dbt-spark's relation cache holds them (checked against a real
embedded session when written: properties sorted, ``[k=v, k=v]``, the location's folder).
"""

from __future__ import annotations

import pytest

from dbt.adapters.deltamerge import binding

FOLDER = "file:/w/s.db/t/_deltamerge_catalog/v00000000000000000012"


def _text(properties: str, location: str | None = FOLDER) -> str:
    lines = ["Catalog: spark_catalog", "Database: s", "Table: t", "Type: EXTERNAL", "Provider: parquet"]
    lines.append(f"Table Properties: [{properties}]")
    if location is not None:
        lines.append(f"Location: {location}")
    return "\n".join([*lines, "Schema: root", " |-- id: long (nullable = true)", ""])


def test_our_entry_gives_its_table_version_and_properties():
    found = binding.listed(
        _text(
            "deltamerge.bindings=/w/s.db/t/_deltamerge_catalog, deltamerge.location=/w/s.db/t, "
            "deltamerge.version=12"
        )
    )
    assert found is not None
    assert (found.table_path, found.version) == ("/w/s.db/t", 12)
    assert found.properties[binding.ROOT_PROPERTY] == "/w/s.db/t/_deltamerge_catalog"


def test_a_value_holding_a_comma_stays_whole():
    found = binding.listed(_text("deltamerge.location=/w/a, b=c/t, deltamerge.version=12"))
    assert found is not None and found.table_path == "/w/a, b=c/t"


def test_a_view_has_no_location_line():
    found = binding.listed(_text("deltamerge.location=/w/t, deltamerge.version=3", location=None))
    assert found is not None and found.version == 3


def test_an_entry_not_ours_is_none():
    assert binding.listed(_text("owner=x, transient_lastDdlTime=1", location="file:/w/t")) is None


@pytest.mark.parametrize(
    "text",
    [
        # The version's folder is another version's: the text is stale or not ours to trust.
        _text("deltamerge.location=/w/t, deltamerge.version=11"),
        # Another property after ours runs into the version: read from the catalog instead.
        _text("deltamerge.location=/w/t, deltamerge.version=12, zz=1"),
        # A relation dbt added to its cache itself (no information text).
        "",
        _text("deltamerge.location=/w/t, deltamerge.version=12").replace("Properties: [", "Properties: "),
    ],
)
def test_a_text_that_does_not_tell_raises(text):
    with pytest.raises(ValueError):
        binding.listed(text)
