"""What `dbt` itself reports about the installed adapter."""

from __future__ import annotations

import os
import subprocess
import sys


def test_dbt_version_lists_the_deltamerge_plugin():
    dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
    done = subprocess.run([dbt, "--version"], capture_output=True, text=True, timeout=120)
    plugins = done.stdout.split("Plugins:", 1)[-1]
    assert "deltamerge: 0.1.0" in plugins and "spark:" in plugins, done.stdout
