"""The statements' runners: each parsed statement run on a Delta table as one commit (Spark).

One module per family, named as its parser in ``statements/parse/`` (``ddl``, ``alter``, ``dml``
with its copy-on-write and merge-on-read parts, ``maintenance``, ``history`` with ``travel``),
``insert`` for INSERT, ``views`` for a MERGE into a temp view, ``fresh`` for the catalog reads that
see each table's latest version; ``statement.run_on_delta`` dispatches a statement to its runner.
"""
