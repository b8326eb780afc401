"""Benchmarks of dbt-deltamerge's merge engine against delta-rs, a full rewrite and a floor.

Run with ``python -m benchmarks`` (see ``python -m benchmarks --help`` and docs/testing.md).
"""
