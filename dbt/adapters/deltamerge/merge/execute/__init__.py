"""Executing a merge plan: the insert-only and classic executors, their frames and output."""
