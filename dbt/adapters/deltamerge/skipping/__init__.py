"""Data skipping: which data files of a Delta table a merge, UPDATE, DELETE or CDC run must read.

``stats`` decides by key ranges against a file's statistics and partition values, and
``predicates`` parses a target-only condition (sqlglot's Spark dialect, the parser the SQL
statements use) into a tree decided per file from its statistics: both pure, unit-tested
without Spark. ``files`` holds a decision per file and why. It takes keys and predicates, never a merge's
clause set: ``merge.pruning`` builds a merge's data skipping from these pieces.
"""
