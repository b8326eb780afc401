"""Where the widening's mark lives, and when a starting server waits for it (``spark/view_text.py``)."""

from __future__ import annotations

from pathlib import Path

from dbt.adapters.deltamerge.spark import daemon, view_text


def test_a_server_waits_for_the_mark_only_while_it_is_missing(tmp_path: Path):
    setting = f"jdbc:derby:;databaseName={tmp_path / 'metastore_db'};create=true"
    mark = tmp_path / "metastore_db" / view_text.MARK
    assert view_text.awaited_mark(setting) == str(mark)
    assert not daemon._ready({"ready_file": str(mark)})
    mark.parent.mkdir()
    mark.touch()
    assert view_text.awaited_mark(setting) is None
    assert daemon._ready({"ready_file": str(mark)})


def test_no_mark_for_a_metastore_that_is_not_our_embedded_derby():
    assert view_text.awaited_mark("jdbc:mysql://db/metastore") is None
    assert view_text.awaited_mark("jdbc:derby:;databaseName=relative_db;create=true") is None
    assert daemon._ready({})
