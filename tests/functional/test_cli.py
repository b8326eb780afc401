"""What `dbt` itself reports about the installed adapter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from deltalake import DeltaTable


def test_dbt_version_lists_the_deltamerge_plugin():
    dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
    done = subprocess.run([dbt, "--version"], capture_output=True, text=True, timeout=120)
    plugins = done.stdout.split("Plugins:", 1)[-1]
    assert "deltamerge: 0.1.0" in plugins and "spark:" in plugins, done.stdout


def _project(root: Path, profile: str) -> Path:
    """A one-model dbt project at ``root / 'proj'`` whose profile's target is ``profile``."""
    folder = root / "proj"
    (folder / "models").mkdir(parents=True)
    (folder / "dbt_project.yml").write_text("name: proj\nversion: '1.0'\nprofile: proj\n")
    (folder / "models" / "m.sql").write_text("{{ config(materialized='table') }} select 1 as id")
    (folder / "profiles.yml").write_text(
        "proj:\n  target: dev\n  outputs:\n    dev:\n      type: deltamerge\n      schema: analytics\n"
        + "".join(f"      {line}\n" for line in profile.strip().splitlines())
    )
    return folder


def _dbt(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
    return subprocess.run(
        [dbt, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL
    )


def test_a_misspelled_profile_key_fails_naming_it(tmp_path):
    folder = _project(tmp_path, "method: session\nwarehous: ./elsewhere")
    done = _dbt(["run", "--profiles-dir", str(folder)], cwd=folder)
    assert done.returncode != 0
    assert "unknown profile key `warehous`: did you mean `warehouse`?" in done.stdout, done.stdout
    assert not (folder / "warehouse").exists() and not (folder / "elsewhere").exists()


def test_missing_java_is_named_as_such(tmp_path):
    folder = _project(tmp_path, "method: session\nwarehouse: ./warehouse")
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = os.path.dirname(sys.executable)  # the venv's programs: no java
    done = _dbt(["run", "--profiles-dir", str(folder)], cwd=folder, env=env)
    assert done.returncode != 0
    missing = "Spark needs Java and none was found in the PATH (JAVA_HOME is not set)"
    assert missing in done.stdout, done.stdout
    assert "credentials" not in done.stdout.lower()


def test_a_relative_warehouse_is_in_the_project_folder_whatever_the_working_directory(tmp_path):
    folder = _project(tmp_path, "method: session\nwarehouse: ./warehouse\nthreads: 1")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = _dbt(["run", "--project-dir", str(folder), "--profiles-dir", str(folder)], cwd=elsewhere)
    assert done.returncode == 0, done.stdout
    assert DeltaTable(str(folder / "warehouse" / "analytics.db" / "m")).to_pyarrow_table().to_pylist() == [
        {"id": 1}
    ]
    assert list(elsewhere.iterdir()) == [elsewhere / "logs"] or not list(elsewhere.iterdir())
