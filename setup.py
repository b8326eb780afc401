"""Packaging for dbt-deltamerge."""

from __future__ import annotations

from pathlib import Path

from setuptools import find_namespace_packages, setup

HERE = Path(__file__).parent
VERSION: dict[str, str] = {}
exec((HERE / "dbt/adapters/deltamerge/__version__.py").read_text(), VERSION)

setup(
    name="dbt-deltamerge",
    version=VERSION["version"],
    description="dbt adapter: Delta Lake MERGE from model config, run by a Python engine on PySpark",
    long_description=(HERE / "README.md").read_text(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_namespace_packages(include=["dbt", "dbt.*"]),
    include_package_data=True,
    package_data={
        "dbt.include.deltamerge": [
            "dbt_project.yml",
            "profile_template.yml",
            "macros/**/*.sql",
            "macros/*.sql",
        ]
    },
    install_requires=[
        "dbt-core>=1.11,<1.12",
        "dbt-adapters>=1.16,<2",
        "dbt-spark[session]>=1.11,<1.12",
        # delta-spark 4.4 pins pyspark<=4.2.0; we keep the two installable together.
        # [connect]: the Spark Connect client (method: connect), with pandas below 3 as pyspark 4.2 asks.
        "pyspark[connect]>=4.0,<=4.2.0",
        "pandas>=2.2,<3",
        "delta-spark>=4.4,<4.5",
        "deltalake>=1.6,<2",
        "pyarrow>=18",
        # Deletion vectors: Roaring's 64-bit portable format, which Delta's RoaringBitmapArray writes.
        "pyroaring>=1.0,<2",
        # Pure-Python Spark SQL parsing (data skipping predicates); its API moves between majors.
        "sqlglot>=30.30,<31",
        # Object stores (S3, GCS, Azure) for the log and footers: conditional create, ranged reads.
        "obstore>=0.12,<0.13",
        # AWS_PROFILE for the dbt process: the shared config and credentials files (SSO, assumed
        # roles, credential_process), which obstore and delta-rs do not read; obstore's provider.
        "boto3>=1.34,<2",
        # UniForm: Iceberg's schemas, Avro manifests and metadata files beside the Delta log.
        "pyiceberg>=0.12,<0.13",
    ],
    entry_points={"console_scripts": ["deltamerge-server=dbt.adapters.deltamerge.spark.server_cli:main"]},
    extras_require={
        # `python -m benchmarks`: process-tree memory and the chart.
        "bench": ["psutil>=5.9", "matplotlib>=3.8"],
        "test": [
            "psutil>=5.9",
            "matplotlib>=3.8",
            "pytest>=8",
            "pytest-xdist>=3.5,<4",
            "dbt-tests-adapter>=1.19,<2",
            "hypothesis>=6.100,<7",
            "mypy>=1.10",
            "ruff>=0.6",
            # DuckDB's delta extension as a reader of our tables; its wheel is built for one
            # duckdb release, so the three move together (no download from extensions.duckdb.org).
            "duckdb==1.5.5",
            "duckdb-extension-delta==1.5.5",
            "duckdb-extensions==1.5.5",
            # DuckDB's iceberg extension (it needs the avro one) reads the Iceberg side of our tables.
            "duckdb-extension-iceberg==1.5.5",
            "duckdb-extension-avro==1.5.5",
            # ... and httpfs: its REST catalog client (ATTACH ... TYPE iceberg) and S3 reads.
            "duckdb-extension-httpfs==1.5.5",
        ],
    },
)
