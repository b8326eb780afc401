"""The statements' parsers: pure Python over sqlglot's Spark dialect, no Spark (``make lint``).

One module per family, named as its runner in ``statements/run/``: ``ddl`` (CREATE TABLE, ADD /
RENAME / DROP COLUMN), ``alter`` (constraints and column definitions), ``dml`` (DELETE, UPDATE,
TRUNCATE, MERGE), ``maintenance`` (properties, OPTIMIZE, REORG, CLUSTER BY), ``history``
(DESCRIBE HISTORY / DETAIL, RESTORE, VERSION / TIMESTAMP AS OF); ``statement`` classifies a
writing statement (INSERT's own form included), ``reads`` finds the catalog names one reads.
"""
