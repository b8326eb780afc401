"""The merge engine: clause sets (pure), planning and executors (issue #3, in progress)."""
