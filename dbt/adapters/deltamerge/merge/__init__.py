"""The merge engine: clause sets (pure), data skipping, the insert-only and classic executors."""
