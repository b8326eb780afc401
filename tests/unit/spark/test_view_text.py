"""Where the widening's mark lives, and when a starting server waits for it (``spark/view_text.py``)."""

from __future__ import annotations

from pathlib import Path

from dbt.adapters.deltamerge.spark import daemon, view_text


def test_a_server_waits_for_the_mark_only_while_it_is_missing(tmp_path: Path):
    setting = f"jdbc:derby:;databaseName={tmp_path / 'metastore_db'};create=true"
    mark = tmp_path / "metastore_db" / view_text.MARK
    assert view_text.awaited_mark(setting, "local[*]") == str(mark)
    assert not daemon._ready({"ready_file": str(mark)})
    mark.parent.mkdir()
    mark.touch()
    assert view_text.awaited_mark(setting, "local[*]") is None
    assert daemon._ready({"ready_file": str(mark)})


def test_no_mark_for_a_metastore_that_is_not_our_embedded_derby():
    assert view_text.awaited_mark("jdbc:mysql://db/metastore", "local[*]") is None
    assert view_text.awaited_mark("jdbc:derby:;databaseName=relative_db;create=true", "local[*]") is None
    assert daemon._ready({})


def test_no_mark_is_awaited_on_a_cluster(tmp_path: Path):
    """A cluster's executors run Spark's JDBC source: they cannot open the driver's Derby."""
    setting = f"jdbc:derby:;databaseName={tmp_path / 'metastore_db'};create=true"
    assert view_text.awaited_mark(setting, "spark://127.0.0.1:7077") is None
