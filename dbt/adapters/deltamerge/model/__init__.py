"""One dbt model's write: its config parsed once, the write decided once, run by the engine, bound."""
