"""What importing the adapter loads: no command, no statement runner, no CDC apply until used.

dbt imports the adapter for every command, also those that write nothing (``dbt parse``, ``ls``,
``compile``, ``docs``); the Delta commands (``delta/commands``, whose face only a writing
path imports), the statements' runners (``statements/run``, from the cursor's first
writing statement) and the operations load when first used.
"""

from __future__ import annotations

import json
import subprocess
import sys
import types

PREFIX = "dbt.adapters.deltamerge."
# Modules of these rooms a plain import loads (the read path: each model's SQL is bound to the
# latest versions first, and time travel resolved).
READ_PATH = {"statements.run", "statements.run.fresh", "statements.run.history", "statements.run.travel"}
# At most this many of the package's modules: lower it when a change loads fewer, never raise it
# without a reason in the change (measured 2026-12-06: 138 before the commands loaded lazily; 129
# since the stores are a module of their own, delta/stores.py, split from delta/storage.py; 130
# since a statement's text is a value of its own, statements/parse/text.py, lexed and parsed once;
# 131 since 2026-12-07: merge/keys.py, an assignment's key resolved as Delta resolves it; 132
# since delta/log/iceberg_compat.py, IcebergCompatV2's rules checked with the table features; the
# Iceberg side itself, delta/uniform and pyiceberg, loads only for a UniForm table's commit); 133
# since delta/catalogs.py, the profile's Iceberg REST catalogs each invocation's Stores holds; 135
# since relation.py (three-part names) and docs_catalog.py (the adapter's docs catalog methods); 136
# since delta/log/occupied.py, a table folder without a log, split out of delta/log/snapshot.py).
LOADED_AT_MOST = 136


def _loaded() -> list[str]:
    code = (
        "import sys, json; import dbt.adapters.deltamerge.impl; "
        f"print(json.dumps(sorted(m[{len(PREFIX)}:] for m in sys.modules if m.startswith({PREFIX!r}))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_importing_the_adapter_loads_no_command_runner_or_operation():
    loaded = _loaded()
    commands = [m for m in loaded if m.startswith("delta.commands.")]
    runners = [m for m in loaded if m.startswith("statements.run") and m not in READ_PATH]
    cdc = [m for m in loaded if m.startswith("cdc.") and m != "cdc.spec"]
    assert (commands, runners, cdc) == ([], [], [])
    assert "operations" not in loaded
    assert len(loaded) <= LOADED_AT_MOST, len(loaded)


def test_a_room_face_names_its_functions_not_the_modules_of_the_same_name():
    """``optimize``, ``vacuum``, ``redefine`` (commands) and ``commit`` (txn) are modules and
    functions both: each face's are the functions (patch a module through ``importlib``)."""
    import importlib
    import pkgutil

    for room in ("log", "txn", "data", "commands"):
        face = importlib.import_module(f"dbt.adapters.deltamerge.delta.{room}")
        shadowed = {m.name for m in pkgutil.iter_modules(face.__path__)} & set(face.__all__)
        assert shadowed <= {"optimize", "vacuum", "redefine", "commit"}, (room, shadowed)
        for name in shadowed:
            module = importlib.import_module(f"{face.__name__}.{name}")
            assert getattr(face, name) is getattr(module, name), (room, name)
        assert not [n for n in face.__all__ if isinstance(getattr(face, n), types.ModuleType)], room
