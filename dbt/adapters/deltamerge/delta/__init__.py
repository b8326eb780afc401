"""The Delta table layer: snapshots, file writing, statistics and commits.

It knows nothing about dbt or merges, and imports only itself and ``common``; the merge
engine, CDC apply, SQL statements and the adapter build on it.
"""
