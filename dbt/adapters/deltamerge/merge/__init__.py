"""The merge engine: parse (``spec``) -> plan (``plan``) -> execute (``execute/``) -> commit (``commit``).

``pipeline.merge_into`` runs the four steps; ``resolve`` and ``check`` resolve and check a clause
set against the schemas before planning, ``pruning`` decides which target files a plan reads.
"""
