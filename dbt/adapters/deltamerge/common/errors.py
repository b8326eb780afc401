"""The engine's one error root (pure): what the adapter's error boundary turns into dbt's errors.

``EngineError`` is any failure the engine raises on purpose, with a sentence for the user: a
Delta table's (``delta.DeltaError``: refused, conflicting, unreadable), a statement's, a merge's
(a target row matched by several source rows), a Python model's. A config's problems are a
``SpecError`` (``config_values.py``); an error of the engine's own making (a broken invariant of a
value it built) is an ``AssertionError``, never worded as the user's config.
"""

from __future__ import annotations


class EngineError(Exception):
    """A failure the engine raises on purpose; its text is for the user."""
