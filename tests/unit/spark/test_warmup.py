"""The warm-up's progress file, as ``deltamerge-server status`` reads it (the rounds themselves
run against a real server in ``tests/functional/test_warm_server.py``)."""

from __future__ import annotations

import json

from dbt.adapters.deltamerge.spark import warmup


def _written(tmp_path, **record):
    (tmp_path / warmup.PROGRESS_FILE).write_text(json.dumps({"server_pid": 7, "rounds": 40, **record}))
    return str(tmp_path)


def test_progress_says_how_far_the_warm_up_of_this_server_is(tmp_path):
    warehouse = _written(tmp_path, done=12, state="warming", seconds=9.0, interrupted=1)
    assert warmup.progress(warehouse, 7) == "warming up (12 of 40 rounds, between commands)"
    _written(tmp_path, done=40, state="warm", seconds=44.4, interrupted=0)
    assert warmup.progress(warehouse, 7) == "warmed up (40 rounds in 44 s)"
    _written(tmp_path, done=3, state="stopped", seconds=5.0, why="AnalysisException: no such table")
    assert warmup.progress(warehouse, 7) == "warm-up stopped after 3 rounds: AnalysisException: no such table"


def test_another_server_s_progress_or_none_says_nothing(tmp_path):
    warehouse = _written(tmp_path, done=40, state="warm", seconds=44.0)
    assert warmup.progress(warehouse, 8) == ""  # an earlier server's file
    assert warmup.progress(str(tmp_path / "elsewhere"), 7) == ""
    (tmp_path / warmup.PROGRESS_FILE).write_text("{half")
    assert warmup.progress(warehouse, 7) == ""


def test_the_warm_up_program_the_server_starts_is_the_model_layer_s_round_over_this_loop() -> None:
    # The spark layer names the program it starts (no import upward); that program imports the loop.
    import ast
    import importlib.util

    from dbt.adapters.deltamerge.spark import server

    spec = importlib.util.find_spec(server.WARMUP_MAIN)
    assert spec is not None and spec.origin is not None
    with open(spec.origin) as module:
        source = module.read()
    imported = {n.module for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom)}
    assert "dbt.adapters.deltamerge.spark" in imported
    assert 'if __name__ == "__main__":' in source and "warmup.main(sys.argv[1:], run_round)" in source
