"""The benchmark's projects have the shapes BENCHMARKS.md quotes (no dbt, no Spark)."""

from __future__ import annotations

from pathlib import Path

import yaml

from benchmarks import projects


def _tests(schema: Path) -> int:
    models = yaml.safe_load(schema.read_text())["models"]
    return sum(len(c.get("data_tests", [])) for m in models for c in m.get("columns", []))


def test_the_jaffle_project_has_three_seeds_six_models_and_twenty_tests(tmp_path: Path):
    for flavour, strategy in (("ours", "delta_merge"), ("duckdb", "merge")):
        root = projects.jaffle(tmp_path / flavour, flavour, "profile: {}\n")
        assert sorted(p.name for p in (root / "seeds").iterdir()) == [
            "raw_customers.csv", "raw_orders.csv", "raw_payments.csv",
        ]  # fmt: skip
        assert len((root / "seeds" / "raw_orders.csv").read_text().splitlines()) == 100  # 99 rows
        assert len(list((root / "models").rglob("*.sql"))) == 6
        assert _tests(root / "models" / "schema.yml") == 20
        assert f"incremental_strategy='{strategy}'" in (root / "models" / "order_events.sql").read_text()


def test_the_generated_project_has_the_models_and_tests_asked_for(tmp_path: Path):
    root = projects.generated(tmp_path / "g", "ours", "profile: {}\n", models=100, tests=300)
    sql = list((root / "models" / "gen").glob("*.sql"))
    assert len(sql) == 100
    assert _tests(root / "models" / "gen" / "schema.yml") == 300
    incremental = [p for p in sql if "materialized='incremental'" in p.read_text()]
    assert len(incremental) == 20 and all("is_incremental()" in p.read_text() for p in incremental)
