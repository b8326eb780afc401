"""``binding.listed``: a catalog entry read from the ``SHOW TABLE EXTENDED`` text dbt caches.

The texts are Spark 4's, as dbt-spark's relation cache holds them (checked against a real
embedded session: properties sorted, ``[k=v, k=v]``, values redacted when the key or the value
matches a redaction pattern, the ``Location`` and a view's text never redacted). What an entry
says is read from its location or its view's record, never from a property's value.
"""

from __future__ import annotations

import os

import pytest

from dbt.adapters.deltamerge import binding
from dbt.adapters.deltamerge.binding import record
from dbt.adapters.deltamerge.delta import DeltaError, Stores, TableLocation

VERSION_12 = "v00000000000000000012"
REDACTED = binding.REDACTED


def _listed(text: str) -> binding.Binding | None:
    return binding.listed(text, Stores({}))


def _text(properties: str, location: str | None = f"file:/w/s.db/t/_deltamerge_catalog/{VERSION_12}") -> str:
    lines = ["Catalog: spark_catalog", "Database: s", "Table: t", "Type: EXTERNAL", "Provider: parquet"]
    lines.append(f"Table Properties: [{properties}]")
    if location is not None:
        lines.append(f"Location: {location}")
    return "\n".join([*lines, "Schema: root", " |-- id: long (nullable = true)", ""])


def _view(properties: str, text: str) -> str:
    lines = ["Catalog: spark_catalog", "Database: s", "Table: t", "Type: VIEW", f"View Text: {text}"]
    return "\n".join([*lines, f"Table Properties: [{properties}]", "Schema: root", ""])


def test_our_entry_gives_its_table_version_and_root_from_its_folder():
    found = _listed(_text(f"deltamerge.location={REDACTED}, deltamerge.version={REDACTED}"))
    assert found is not None
    assert (found.table_path, found.version) == ("/w/s.db/t", 12)
    assert found.properties[binding.ROOT_PROPERTY] == "/w/s.db/t/_deltamerge_catalog"


@pytest.mark.parametrize(
    "table",
    ["/w/data_urls", "/w/CURLY/t", "/w/a, b=c/t", "/w/p%20q/t", "/w/h#x/t", "/w/ünï €/t", "/w/api_token]/t"],
)
def test_any_folder_name_is_read_whole_from_the_location(table):
    found = _listed(
        _text(f"deltamerge.location={REDACTED}", f"file:{table}/_deltamerge_catalog/{VERSION_12}")
    )
    assert found is not None and (found.table_path, found.version) == (table, 12)


def test_an_object_store_location_is_its_uri():
    found = _listed(_text("deltamerge.location=x", f"s3a://lake/wh/t/_deltamerge_catalog/{VERSION_12}"))
    assert found is not None and found.table_path == "s3a://lake/wh/t"


def test_a_view_reads_its_folder_from_its_record():
    folder = f"/w/my url's/t/_deltamerge_catalog/{VERSION_12}"
    text = record.view_record(folder) + "SELECT d.`id` FROM `s`.`t__deltamerge_files` d"
    found = _listed(_view(f"deltamerge.files={REDACTED}, deltamerge.location={REDACTED}", text))
    assert found is not None and (found.table_path, found.version) == ("/w/my url's/t", 12)
    assert found.properties[binding.FILES_PROPERTY] == "t__deltamerge_files"


def test_a_view_an_older_release_bound_is_read_from_its_shown_properties():
    old = _view("deltamerge.files=t__f, deltamerge.location=/w/t, deltamerge.version=3", "SELECT 1")
    found = _listed(old)
    assert found is not None and (found.table_path, found.version) == ("/w/t", 3)
    with pytest.raises(ValueError):  # redacted: the caller reads its files table's location
        _listed(_view(f"deltamerge.location={REDACTED}, deltamerge.version=3", "SELECT 1"))


def test_time_travel_roots_belong_to_their_table():
    location = f"file:/w/t/_deltamerge_catalog/_travel/v3/{VERSION_12}"
    found = _listed(_text(f"deltamerge.location={REDACTED}", location))
    assert found is not None and (found.table_path, found.version) == ("/w/t", 12)


def test_a_registered_table_is_named_by_its_roots_file(tmp_path):
    root = tmp_path / "wh" / "_deltamerge_catalog" / "0a1b2c"
    record.note_table(str(root / "_travel" / "v2"), TableLocation.of("/lake/data_urls/t"))
    assert (root / record.TABLE_FILE).read_text() == "/lake/data_urls/t"
    for folder in (root / VERSION_12, root / "_travel" / "v2" / VERSION_12):
        found = _listed(_text(f"deltamerge.location={REDACTED}", f"file:{folder}"))
        assert found is not None and (found.table_path, found.version) == ("/lake/data_urls/t", 12)


def test_a_registered_entry_of_an_older_release_reads_its_shown_path_unless_redacted(tmp_path):
    folder = os.path.join(tmp_path, "_deltamerge_catalog", "0a1b", VERSION_12)
    found = _listed(_text("deltamerge.location=/lake/t, deltamerge.version=12", f"file:{folder}"))
    assert found is not None and found.table_path == "/lake/t"
    with pytest.raises(DeltaError, match="register the table again"):
        _listed(_text(f"deltamerge.location={REDACTED}", f"file:{folder}"))


def test_an_entry_not_ours_is_none():
    assert _listed(_text("owner=x, transient_lastDdlTime=1", location="file:/w/t")) is None
    # a value naming our key is no key
    assert _listed(_text("comment=deltamerge.location=/w/t", location="file:/w/t")) is None


@pytest.mark.parametrize(
    "text",
    [
        # The location is no version folder.
        _text("deltamerge.location=/w/t", location="file:/w/t/_deltamerge_catalog/current"),
        # A relation dbt added to its cache itself (no information text).
        "",
    ],
)
def test_a_text_that_does_not_tell_raises(text):
    with pytest.raises(ValueError):
        _listed(text)
