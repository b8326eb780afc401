"""The layout rules hold (``tools/lint_layout.py``, also run by ``make lint``); the checker finds cycles."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[2] / "tools" / "lint_layout.py"
spec = importlib.util.spec_from_file_location("lint_layout", TOOL)
assert spec is not None and spec.loader is not None
lint_layout = importlib.util.module_from_spec(spec)
sys.modules["lint_layout"] = lint_layout
spec.loader.exec_module(lint_layout)


def test_the_package_keeps_its_layout_rules():
    assert lint_layout.problems() == []


def test_a_cycle_is_found_however_long():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert lint_layout.cycles(edges) == [["a", "b", "c"]]
    assert lint_layout.cycles({"a": {"b"}, "b": set()}) == []


def test_the_rules_name_the_engine_folders_and_keep_the_table_layer_at_the_bottom():
    assert lint_layout.MAY_IMPORT["delta"] == {"common", "__version__"}
    assert "merge" not in lint_layout.MAY_IMPORT["skipping"]
    assert {"common", "delta", "skipping", "merge", "cdc", "statements"} <= lint_layout.NO_DBT


def test_the_log_and_commit_rooms_may_import_only_pyspark_s_types(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "from pyspark.sql import types as T\n"
        "from pyspark.sql.types import StructType\n"
        "from pyspark.sql import DataFrame, functions as F\n"
        "import pyspark.sql.session\n"
    )
    found = sorted(name for name, _ in lint_layout._spark_imports(module))
    assert found == ["pyspark.sql.DataFrame", "pyspark.sql.functions", "pyspark.sql.session"]
    assert {"", "log", "uniform", "txn"} == lint_layout.NO_SPARK_ROOMS
    assert lint_layout.DELTA_ROOMS == ["", "log", "uniform", "txn", "data", "commands"]


def test_a_room_is_read_from_the_module_s_place_in_delta():
    assert lint_layout._room("delta.storage") == ""
    assert lint_layout._room("delta.log.snapshot") == "log"
    assert lint_layout._room("delta.commands.optimize") == "commands"


def test_callers_import_the_faces():
    assert {"delta", "binding", "merge"} <= lint_layout.FACES


def test_each_folder_uses_only_the_delta_faces_it_is_given(tmp_path):
    skipping, parser, model = (tmp_path / f"{name}.py" for name in ("skipping", "parser", "model"))
    skipping.write_text(
        "from dbt.adapters.deltamerge.delta import AddFile, storage\n"
        "from dbt.adapters.deltamerge.delta.txn import commit\n"
        "from dbt.adapters.deltamerge.delta import data\n"
    )
    parser.write_text("from dbt.adapters.deltamerge.delta import TableLocation\n")
    model.write_text("from dbt.adapters.deltamerge.delta.commands import optimize\n")
    known = {"skipping.files": skipping, "statements.parse.ddl": parser, "model.write": model}
    known["delta.storage"] = lint_layout.PACKAGE / "delta" / "storage.py"  # what skipping names
    found = [problem.split(": ", 1)[1] for problem in lint_layout._delta_faces(known)]
    assert found == [
        f"{skipping}:1 (skipping.files) calls delta/storage.py: use its table's location.store",
        f"{skipping}:2 (skipping) imports the Delta face 'txn'",
        f"{skipping}:3 (skipping) imports the Delta face 'data'",
        f"{parser}:1 (statements.parse) imports the Delta face 'delta'",
    ]
    assert lint_layout.DELTA_FACES["skipping"] == {"delta"}
