"""The Delta table layer: snapshots, file writing, statistics and commits.

It knows nothing about dbt; the adapter and the merge engine build on it.
"""
